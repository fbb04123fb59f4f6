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

#include <string>

#include "bench/bench_models.h"
#include "format/gguf/gguf_file.h"
#include "model/arch/architecture.h"

namespace synapse {
namespace {

// Data-section pages in the page cache after a cold open (see the file comment).
double data_pages_resident_after_cold_open(const std::string& path) {
  bench::evict_from_page_cache(path);
  const Result<GgufFile> file = GgufFile::open(path);
  if (!file.ok()) return -1;
  return bench::resident_pages(file->file_bytes(), file->data_section_offset());
}

void BM_OpenAndValidate(benchmark::State& state) {
  const bool real_vocabulary = state.range(0) != 0;
  const std::string& path = bench::qwen2_shaped_model(real_vocabulary);
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
