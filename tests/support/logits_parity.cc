// SPDX-License-Identifier: Apache-2.0
#include "tests/support/logits_parity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu_backend.h"
#include "runtime/engine.h"
#include "tests/support/test_support.h"

namespace synapse::testing {

std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

ModelRun run_model(const std::string& path, const std::vector<int32_t>& ids, size_t n_greedy,
                   int threads, const KernelTable& kernels, DotPath dot_path, TensorType kv_type) {
  ThreadPool pool(threads);
  CpuBackend backend(kernels, pool);
  DecoderOptions options;
  options.matmul_mode.path = dot_path;
  options.n_ctx = 512;
  options.kv_type = kv_type;
  auto model = DecoderModel::open(path, backend, options);
  EXPECT_TRUE(model.ok()) << path << ": " << model.status().to_string();
  if (!model.ok()) return {};
  ModelRun run;
  run.n_vocab = (*model)->n_vocab();
  Engine engine(**model);
  Session session(engine);
  auto logits = session.append_all(ids);
  EXPECT_TRUE(logits.ok()) << logits.status().to_string();
  if (!logits.ok()) return {};
  run.logits.assign(logits->begin(), logits->end());
  std::span<const float> last(run.logits.data() + (ids.size() - 1) * run.n_vocab, run.n_vocab);
  std::vector<float> row(last.begin(), last.end());
  for (size_t i = 0; i < n_greedy; ++i) {
    const int32_t next = greedy_token(row);
    run.greedy.push_back(next);
    if (i + 1 == n_greedy) break;
    auto l = session.append(std::span(&next, 1));
    EXPECT_TRUE(l.ok());
    if (!l.ok()) break;
    row.assign(l->begin(), l->end());
  }
  return run;
}

Distance distance(const std::vector<float>& a, const std::vector<float>& b) {
  return distance_over_rows(a, b, a.size(), std::vector<bool>(1, true));
}

Distance distance_over_rows(const std::vector<float>& a, const std::vector<float>& b,
                            size_t n_vocab, const std::vector<bool>& rows) {
  Distance d;
  double sum = 0.0;
  size_t n = 0;
  for (size_t r = 0; r < rows.size() && (r + 1) * n_vocab <= a.size(); ++r) {
    if (!rows[r]) continue;
    for (size_t i = r * n_vocab; i < (r + 1) * n_vocab; ++i) {
      const double e = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
      d.max_abs = std::max(d.max_abs, e);
      sum += e * e;
      ++n;
    }
  }
  d.rms = n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
  return d;
}

}  // namespace synapse::testing
