// SPDX-License-Identifier: Apache-2.0
// How long opening and validating a GGUF takes, page cache warm: a ~510 MB Qwen2-shaped F16 model
// (8 blocks, embedding 896, feed-forward 4864) carrying the real 151936-token Qwen2 vocabulary
// from the fixtures when present (the vocabulary dominates the metadata), and the same shape with
// a small synthetic vocabulary. The goal is < 50 ms with nothing read beyond the metadata; the
// `data_pages_resident` counter proves the latter: the file is evicted from the page cache
// (posix_fadvise DONTNEED), opened once, and mincore() counts the data pages that got read.
//
//   build/release/bench/gguf_open_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "format/gguf/gguf_file.h"
#include "model/arch/architecture.h"
#include "synth/synth_model.h"

namespace synapse {
namespace {

std::string fixtures_dir() {
  const char* dir = std::getenv("SYNAPSE_FIXTURES");
  return dir != nullptr ? dir : SYNAPSE_SOURCE_DIR "/../shared/fixtures";
}

// Writes the benchmark model once per process into a temporary directory.
const std::string& model_path(bool real_vocabulary) {
  static std::string paths[2];
  std::string& path = paths[real_vocabulary ? 1 : 0];
  if (!path.empty()) return path;
  static const std::string dir = [] {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/synapse-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    std::atexit([] { std::filesystem::remove_all(dir); });
    return pattern;
  }();
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
  path = dir +
         (real_vocabulary ? "/qwen2-shape-real-vocab.gguf" : "/qwen2-shape-synthetic-vocab.gguf");
  std::fprintf(stderr, "writing %s ...\n", path.c_str());
  const Status status = synthesize_model(o, path);
  if (!status.ok()) {
    std::fprintf(stderr, "synth failed: %s\n", status.to_string().c_str());
    std::abort();
  }
  return path;
}

// Data-section pages in the page cache after a cold open (see the file comment).
double data_pages_resident_after_cold_open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  const Result<GgufFile> file = GgufFile::open(path);
  if (!file.ok()) return -1;
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto* base = file->file_bytes().data();
  const size_t size = file->file_bytes().size();
  std::vector<unsigned char> resident((size + static_cast<size_t>(page) - 1) /
                                      static_cast<size_t>(page));
  if (::mincore(const_cast<uint8_t*>(base), size, resident.data()) != 0) return -1;
  const size_t first_data_page =
      (file->data_section_offset() + static_cast<size_t>(page) - 1) / static_cast<size_t>(page);
  size_t count = 0;
  for (size_t i = first_data_page; i < resident.size(); ++i) count += resident[i] & 1u;
  return static_cast<double>(count);
}

void BM_OpenAndValidate(benchmark::State& state) {
  const bool real_vocabulary = state.range(0) != 0;
  const std::string& path = model_path(real_vocabulary);
  if (path.empty()) {
    state.SkipWithError(
        "fixture tokenizer/vocab/qwen2-vocab.gguf not found (set SYNAPSE_FIXTURES)");
    return;
  }
  const double resident = data_pages_resident_after_cold_open(path);
  { const Result<GgufFile> warm = GgufFile::open(path); }  // warm the metadata pages
  uint64_t parsed = 0, data_offset = 0, file_bytes = 0, vocabulary = 0;
  for (auto _ : state) {
    Result<GgufFile> file = GgufFile::open(path);
    if (!file.ok()) {
      state.SkipWithError(file.status().to_string().c_str());
      return;
    }
    Result<HParams> hp = read_model_hparams(file->metadata());
    benchmark::DoNotOptimize(hp);
    parsed = file->parsed_bytes();
    data_offset = file->data_section_offset();
    file_bytes = file->file_bytes().size();
    vocabulary = hp.ok() ? hp->n_vocab : 0;
  }
  state.counters["file_mb"] = static_cast<double>(file_bytes) / 1e6;
  state.counters["metadata_bytes"] = static_cast<double>(data_offset);
  state.counters["parsed_bytes"] = static_cast<double>(parsed);
  state.counters["vocabulary"] = static_cast<double>(vocabulary);
  state.counters["data_pages_resident"] = resident;
}
BENCHMARK(BM_OpenAndValidate)->ArgName("real_vocab")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace synapse

BENCHMARK_MAIN();
