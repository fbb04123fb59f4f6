// SPDX-License-Identifier: Apache-2.0
#include "bench/bench_models.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "synth/synth_model.h"

namespace synapse::bench {
namespace {

std::string fixtures_dir() {
  const char* dir = std::getenv("SYNAPSE_FIXTURES");
  return dir != nullptr ? dir : SYNAPSE_SOURCE_DIR "/../shared/fixtures";
}

}  // namespace

const std::string& bench_directory() {
  static const std::string dir = [] {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/synapse-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    std::atexit([] { std::filesystem::remove_all(bench_directory()); });
    return pattern;
  }();
  return dir;
}

const std::string& qwen2_shaped_model(bool real_vocabulary) {
  static std::string paths[2];
  std::string& path = paths[real_vocabulary ? 1 : 0];
  if (!path.empty()) return path;
  SynthOptions o;
  o.arch = "qwen2";
  o.n_embd = 896;
  o.n_ff = 4864;
  o.n_layer = 8;
  o.n_head = 14;
  o.n_head_kv = 2;
  o.n_ctx = 32768;
  o.type_embedding = o.type_attention = o.type_feed_forward = o.type_output = TensorType::kF16;
  const std::string vocab = fixtures_dir() + "/tokenizer/vocab/qwen2-vocab.gguf";
  if (real_vocabulary) {
    if (!std::filesystem::exists(vocab)) return path;  // empty: the benchmark reports a skip
    o.vocab_from = vocab;
  } else {
    o.n_vocab = 320;
  }
  path = bench_directory() +
         (real_vocabulary ? "/qwen2-shape-real-vocab.gguf" : "/qwen2-shape-synthetic-vocab.gguf");
  std::fprintf(stderr, "writing %s ...\n", path.c_str());
  const Status status = synthesize_model(o, path);
  if (!status.ok()) {
    std::fprintf(stderr, "synth failed: %s\n", status.to_string().c_str());
    std::abort();
  }
  return path;
}

void evict_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double resident_pages(std::span<const uint8_t> bytes, uint64_t offset) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((bytes.size() + page - 1) / page);
  if (::mincore(const_cast<uint8_t*>(bytes.data()), bytes.size(), resident.data()) != 0) return -1;
  size_t count = 0;
  for (size_t i = (offset + page - 1) / page; i < resident.size(); ++i) count += resident[i] & 1u;
  return static_cast<double>(count);
}

}  // namespace synapse::bench
