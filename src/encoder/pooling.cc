// SPDX-License-Identifier: Apache-2.0
#include "encoder/pooling.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"

namespace synapse {

void pool_sequence(PoolingType pooling, const float* hidden, size_t n_tokens, size_t n_embd,
                   float* out) {
  SYN_CHECK(n_tokens > 0, "pooling an empty sequence");
  switch (pooling) {
    case PoolingType::kMean: {
      MeanPoolAccumulator mean(n_embd);
      mean.add(hidden, n_tokens);
      mean.finish(out);
      return;
    }
    case PoolingType::kCls:
    case PoolingType::kRank:
      std::memcpy(out, hidden, n_embd * sizeof(float));
      return;
    case PoolingType::kLast:
      std::memcpy(out, hidden + (n_tokens - 1) * n_embd, n_embd * sizeof(float));
      return;
    case PoolingType::kNone:
      break;
  }
  SYN_CHECK(false, "pool_sequence needs mean, cls, last or rank");
}

void MeanPoolAccumulator::add(const float* rows, size_t n_rows) {
  const size_t n_embd = sum_.size();
  for (size_t t = 0; t < n_rows; ++t) {
    for (size_t e = 0; e < n_embd; ++e) sum_[e] += static_cast<double>(rows[t * n_embd + e]);
  }
  n_rows_ += n_rows;
}

void MeanPoolAccumulator::finish(float* out) const {
  SYN_CHECK(n_rows_ > 0, "mean of no rows");
  for (size_t e = 0; e < sum_.size(); ++e) {
    out[e] = static_cast<float>(sum_[e] / static_cast<double>(n_rows_));
  }
}

void l2_normalize(float* v, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * static_cast<double>(v[i]);
  const double norm = std::sqrt(sum);
  const float inverse = norm > 0.0 ? static_cast<float>(1.0 / norm) : 0.0f;
  for (size_t i = 0; i < n; ++i) v[i] *= inverse;
}

}  // namespace synapse
