// SPDX-License-Identifier: Apache-2.0
// Packages of the ~510 MB Qwen2-shaped F16 model (bench_models.h), page cache warm:
//   BM_Convert       GGUF -> package, streamed, fsynced (MB/s of package written)
//   BM_PackageOpen   open: header, manifest (the real 151936-token vocabulary) and tensor table
//                    checked, tensor checksums deferred; goal < 50 ms. `data_pages_resident`
//                    counts the tensor-data pages a cold open read (mincore): 0 expected.
//   BM_PackageVerify every tensor's XXH3-128 and every padding byte (MB/s)
//
//   build/release/bench/package_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/bench_models.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "format/package/package_writer.h"
#include "model/arch/architecture.h"

namespace synapse {
namespace {

std::string package_path(bool real_vocabulary) {
  return bench::bench_directory() +
         (real_vocabulary ? "/real-vocab.synapse" : "/synth-vocab.synapse");
}

// Converts once per process; the conversion's speed is BM_Convert's to report.
const std::string& ensure_package(bool real_vocabulary, double* seconds = nullptr) {
  static std::string done[2];
  std::string& path = done[real_vocabulary ? 1 : 0];
  if (!path.empty() && seconds == nullptr) return path;
  const std::string& gguf = bench::qwen2_shaped_model(real_vocabulary);
  if (gguf.empty()) return path;
  const auto start = std::chrono::steady_clock::now();
  const auto written = convert_to_package(gguf, package_path(real_vocabulary));
  if (seconds != nullptr) {
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!written.ok()) {
    std::fprintf(stderr, "convert failed: %s\n", written.status().to_string().c_str());
    std::abort();
  }
  path = package_path(real_vocabulary);
  return path;
}

bool skip_without_vocabulary(benchmark::State& state, const std::string& path) {
  if (!path.empty()) return false;
  state.SkipWithError("fixture tokenizer/vocab/qwen2-vocab.gguf not found (set SYNAPSE_FIXTURES)");
  return true;
}

void BM_Convert(benchmark::State& state) {
  const bool real_vocabulary = state.range(0) != 0;
  if (skip_without_vocabulary(state, bench::qwen2_shaped_model(real_vocabulary))) return;
  double seconds = 0;
  for (auto _ : state) {
    ensure_package(real_vocabulary, &seconds);
    state.SetIterationTime(seconds);
  }
  const auto bytes = static_cast<double>(std::filesystem::file_size(package_path(real_vocabulary)));
  state.counters["package_mb"] = bytes / 1e6;
  state.counters["mb_per_s"] = bytes / 1e6 / seconds;
}
BENCHMARK(BM_Convert)
    ->ArgName("real_vocab")
    ->Arg(1)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_PackageOpen(benchmark::State& state) {
  const bool real_vocabulary = state.range(0) != 0;
  const std::string& path = ensure_package(real_vocabulary);
  if (skip_without_vocabulary(state, path)) return;
  bench::evict_from_page_cache(path);
  double resident = -1;
  {
    const Result<PackageFile> cold = PackageFile::open(path);
    if (cold.ok()) resident = bench::resident_pages(cold->file_bytes(), cold->header().data_offset);
  }
  uint64_t file_bytes = 0, parsed = 0, vocabulary = 0;
  for (auto _ : state) {
    Result<PackageFile> file = PackageFile::open(path);
    if (!file.ok()) {
      state.SkipWithError(file.status().to_string().c_str());
      return;
    }
    Result<HParams> hp = read_model_hparams(file->metadata());
    benchmark::DoNotOptimize(hp);
    file_bytes = file->file_bytes().size();
    parsed = file->parsed_bytes();
    vocabulary = hp.ok() ? hp->n_vocab : 0;
  }
  state.counters["file_mb"] = static_cast<double>(file_bytes) / 1e6;
  state.counters["parsed_bytes"] = static_cast<double>(parsed);
  state.counters["vocabulary"] = static_cast<double>(vocabulary);
  state.counters["data_pages_resident"] = resident;
}
BENCHMARK(BM_PackageOpen)->ArgName("real_vocab")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_PackageVerify(benchmark::State& state) {
  const std::string& path = ensure_package(true);
  if (skip_without_vocabulary(state, path)) return;
  const Result<PackageFile> file = PackageFile::open(path);
  if (!file.ok()) {
    state.SkipWithError(file.status().to_string().c_str());
    return;
  }
  uint64_t bytes = 0;
  for (auto _ : state) {
    const auto report = verify_package(*file);
    if (!report.ok()) {
      state.SkipWithError(report.status().to_string().c_str());
      return;
    }
    bytes = report->bytes_checked;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["data_mb"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_PackageVerify)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace synapse

BENCHMARK_MAIN();
