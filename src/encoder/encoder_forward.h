// SPDX-License-Identifier: Apache-2.0
// The forward pass of a BERT encoder over a packed batch: the tokens of many sequences lie back
// to back (no padding), every matrix product runs once over all of them, and attention is
// bidirectional within each sequence only (a block-diagonal mask that is never materialized:
// each (sequence, head) pair is one task over its own keys). Multithreaded over the caller's
// ThreadPool; results do not depend on the thread count or on how inputs are grouped into
// batches, up to the summation order of the matrix kernels.
//
// Non-goals: causal encoders, KV caches, incremental decoding (the decoder runtime's business).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "encoder/encoder_model.h"
#include "kernels/kernel_table.h"

namespace synapse {

// llama.cpp evaluates GELU through a table of half-precision values (ggml's GGML_GELU_FP16); the
// exact tanh form differs from it by up to ~1e-3 relative per activation. kF16Table reproduces
// the table for bit-level parity studies; the default is the exact function.
enum class EncoderGelu : uint8_t { kTanh, kTanhF16Table };

struct EncoderBatch {
  std::span<const int32_t> tokens;        // every sequence's ids, back to back
  std::span<const int32_t> token_types;   // one per token, or empty: all 0 ("sentence A")
  std::span<const uint32_t> seq_lengths;  // tokens per sequence, each in 1..n_ctx_train
};

// Buffers of one forward pass, grown to the largest batch seen and then reused: a forward pass of
// a batch no larger than an earlier one allocates nothing.
class EncoderWorkspace {
 public:
  // The final hidden states: one row of n_embd floats per token of the last batch.
  std::span<const float> hidden() const { return {x_.data(), n_tokens_ * n_embd_}; }

 private:
  friend class EncoderPass;
  size_t n_tokens_ = 0;
  size_t n_embd_ = 0;
  std::vector<float> x_, q_, k_, v_, attn_, tmp_, ff_;
  std::vector<float> attention_scratch_;  // per thread: scores (L x L) then V^T (head_dim x L)
  std::vector<uint8_t> matmul_scratch_;
};

// Runs the encoder; the output is workspace.hidden(). Fails with invalid_argument for token ids
// or types out of range and empty sequences, context_length_exceeded for a sequence longer than
// the model's context.
Status encoder_forward(const EncoderModel& model, const EncoderBatch& batch,
                       EncoderWorkspace& workspace, ThreadPool& pool,
                       EncoderGelu gelu = EncoderGelu::kTanh);

// Same, with explicit kernels (tests run every ISA table).
Status encoder_forward(const KernelTable& kernels, const EncoderModel& model,
                       const EncoderBatch& batch, EncoderWorkspace& workspace, ThreadPool& pool,
                       EncoderGelu gelu = EncoderGelu::kTanh);

// llama.cpp's half-precision GELU table, element-wise (see EncoderGelu).
void gelu_tanh_f16_table(const float* x, float* y, size_t n);

}  // namespace synapse
