// SPDX-License-Identifier: Apache-2.0
// `synapse bench`: measurements of this machine. `bench memory` measures memory read bandwidth
// with 1..N threads (the yardstick for decode speed: every weight byte is read once per token).
// `bench -m MODEL` benchmarks a model (bench_model.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/cpu_info.h"
#include "cli/bench_model.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "kernels/kernel_selection.h"
#include "kernels/memory_bandwidth.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct MemoryOptions {
  int max_threads = 0;  // 0: every usable core
  size_t size_mib = 1024;
  int passes = 5;
  bool json = false;
};

int run_memory(const MemoryOptions& o) {
  const CpuInfo cpu = CpuInfo::detect();
  const int max_threads = o.max_threads > 0 ? o.max_threads : cpu.logical_cores;
  const KernelTable& kernels = selected_kernels();
  const BandwidthBuffer buffer(o.size_mib * 1024 * 1024);
  std::vector<BandwidthSample> samples;
  for (int threads = 1; threads <= max_threads; ++threads) {
    ThreadPool pool(threads);
    samples.push_back(measure_read_bandwidth(kernels, buffer, pool, o.passes));
  }
  if (o.json) {
    Json out;
    out["cpu"] = cpu.model;
    out["isa"] = kernels.variant;
    out["buffer_bytes"] = buffer.size();
    out["passes"] = o.passes;
    Json list = Json::array();
    for (const BandwidthSample& s : samples) {
      list.push_back({{"threads", s.threads},
                      {"best_gb_per_s", s.best_gb_per_s},
                      {"median_gb_per_s", s.median_gb_per_s}});
    }
    out["read_bandwidth"] = list;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf(
        "memory read bandwidth (%s, %zu MiB buffer, best and median of %d passes, "
        "kernels %s)\n",
        cpu.model.c_str(), buffer.size() >> 20, o.passes, kernels.variant);
    std::printf("  %7s  %12s  %12s\n", "threads", "best GB/s", "median GB/s");
    for (const BandwidthSample& s : samples) {
      std::printf("  %7d  %12.1f  %12.1f\n", s.threads, s.best_gb_per_s, s.median_gb_per_s);
    }
  }
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "bench", "Benchmark a model (-m MODEL: prompt processing and generation) or this machine");
  cmd->require_subcommand(0, 1);
  auto mo = std::make_shared<ModelBenchOptions>();
  add_model_bench_options(cmd, *mo);
  cmd->callback([cmd, mo, &exit_code] {
    if (!cmd->get_subcommands().empty()) return;
    if (mo->run.model.empty()) {
      std::fprintf(stderr, "error: bench needs -m MODEL or a subcommand (memory)\n");
      exit_code = kExitUsage;
      return;
    }
    exit_code = run_model_bench(*mo);
  });
  auto o = std::make_shared<MemoryOptions>();
  CLI::App* memory = cmd->add_subcommand(
      "memory", "Memory read bandwidth with 1..N threads, through the selected kernels");
  memory->add_option("-t,--threads", o->max_threads, "Most threads to measure (default: all cores)")
      ->check(CLI::Range(1, 1024));
  memory->add_option("--size-mib", o->size_mib, "Buffer size in MiB (far above the caches)")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  memory->add_option("--passes", o->passes, "Timed passes per thread count")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  memory->add_flag("--json", o->json, "Print one JSON object");
  memory->callback([o, &exit_code] { exit_code = run_memory(*o); });
}

}  // namespace synapse::cli
