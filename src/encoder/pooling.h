// SPDX-License-Identifier: Apache-2.0
// Pooling of a sequence's hidden states into one vector, and normalization, as llama.cpp and
// sentence-transformers define them: mean over all tokens (special tokens included), the first
// token ([CLS]), the last token; L2 normalization with the sum of squares in double.
#pragma once

#include <cstddef>
#include <vector>

#include "model/hparams.h"

namespace synapse {

// `hidden` holds n_tokens rows of n_embd floats; writes n_embd floats. `pooling` is kMean,
// kCls or kLast (kRank pools like kCls; kNone is not a pooling of one vector).
void pool_sequence(PoolingType pooling, const float* hidden, size_t n_tokens, size_t n_embd,
                   float* out);

// v /= ||v||_2 (a zero vector stays zero).
void l2_normalize(float* v, size_t n);

// Mean pooling fed rows in pieces (a decoder's prompt prefilled in chunks): the same double sums
// in the same token order as pool_sequence, so the result is bit-identical to pooling all rows
// at once (pool_sequence uses it).
class MeanPoolAccumulator {
 public:
  explicit MeanPoolAccumulator(size_t n_embd) : sum_(n_embd, 0.0) {}
  void add(const float* rows, size_t n_rows);
  size_t n_rows() const { return n_rows_; }
  void finish(float* out) const;  // n_embd floats; needs at least one row

 private:
  std::vector<double> sum_;
  size_t n_rows_ = 0;
};

}  // namespace synapse
