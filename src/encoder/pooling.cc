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
      std::vector<double> sum(n_embd, 0.0);
      for (size_t t = 0; t < n_tokens; ++t) {
        for (size_t e = 0; e < n_embd; ++e) sum[e] += static_cast<double>(hidden[t * n_embd + e]);
      }
      for (size_t e = 0; e < n_embd; ++e) {
        out[e] = static_cast<float>(sum[e] / static_cast<double>(n_tokens));
      }
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

void l2_normalize(float* v, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * static_cast<double>(v[i]);
  const double norm = std::sqrt(sum);
  const float inverse = norm > 0.0 ? static_cast<float>(1.0 / norm) : 0.0f;
  for (size_t i = 0; i < n; ++i) v[i] *= inverse;
}

}  // namespace synapse
