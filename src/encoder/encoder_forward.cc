// SPDX-License-Identifier: Apache-2.0
#include "encoder/encoder_forward.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "kernels/kernel_selection.h"
#include "kernels/matmul.h"
#include "tensor/half.h"

namespace synapse {
namespace {

// Rows per task of the row-wise steps (embedding, bias + residual + norm, GELU): enough work per
// task to amortize the pool's dispatch, enough tasks to balance two to a few dozen threads.
constexpr size_t kRowsPerTask = 8;

template <typename Fn>
void parallel_rows(ThreadPool& pool, size_t n_rows, Fn&& fn) {
  const size_t n_tasks = (n_rows + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(n_tasks, [&](size_t task, int /*thread*/) {
    const size_t begin = task * kRowsPerTask;
    fn(begin, std::min(n_rows, begin + kRowsPerTask));
  });
}

// ggml's GELU constants (tanh form).
constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
constexpr float kGeluCoefA = 0.044715f;

const std::array<uint16_t, 65536>& gelu_f16_table() {
  static const std::array<uint16_t, 65536> table = [] {
    std::array<uint16_t, 65536> t{};
    for (uint32_t i = 0; i < t.size(); ++i) {
      const float x = f16_to_f32(static_cast<uint16_t>(i));
      const float inner = kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x);
      t[i] = f32_to_f16(0.5f * x * (1.0f + std::tanh(inner)));
    }
    return t;
  }();
  return table;
}

}  // namespace

void gelu_tanh_f16_table(const float* x, float* y, size_t n) {
  const auto& table = gelu_f16_table();
  for (size_t i = 0; i < n; ++i) {
    // Outside [-10, 10] GELU is 0 or the identity to float precision; ggml short-cuts the same.
    if (x[i] <= -10.0f) {
      y[i] = 0.0f;
    } else if (x[i] >= 10.0f) {
      y[i] = x[i];
    } else {
      y[i] = f16_to_f32(table[f32_to_f16(x[i])]);
    }
  }
}

// One forward pass: the model, the batch, the buffers and the pool.
class EncoderPass {
 public:
  EncoderPass(const KernelTable& kernels, const EncoderModel& model, const EncoderBatch& batch,
              EncoderWorkspace& ws, ThreadPool& pool, EncoderGelu gelu)
      : k_(kernels),
        model_(model),
        hp_(model.hparams()),
        batch_(batch),
        ws_(ws),
        pool_(pool),
        gelu_(gelu) {}

  Status run() {
    SYN_RETURN_IF_ERROR(validate());
    allocate();
    embed();
    for (const EncoderBlockWeights& block : model_.blocks()) run_block(block);
    return ok_status();
  }

 private:
  Status validate() {
    n_tokens_ = batch_.tokens.size();
    if (!batch_.token_types.empty() && batch_.token_types.size() != n_tokens_) {
      return Status(ErrorCode::kInvalidArgument, "token types and tokens differ in length");
    }
    size_t total = 0;
    starts_.clear();
    max_len_ = 0;
    for (size_t s = 0; s < batch_.seq_lengths.size(); ++s) {
      const uint32_t len = batch_.seq_lengths[s];
      if (len == 0) {
        return Status(ErrorCode::kInvalidArgument, "sequence " + std::to_string(s) + " is empty");
      }
      if (len > hp_.n_ctx_train) {
        return Status(ErrorCode::kContextLengthExceeded,
                      "sequence " + std::to_string(s) + " has " + std::to_string(len) +
                          " tokens; the model's context is " + std::to_string(hp_.n_ctx_train));
      }
      starts_.push_back(total);
      total += len;
      max_len_ = std::max<size_t>(max_len_, len);
    }
    if (total != n_tokens_) {
      return Status(ErrorCode::kInvalidArgument, "sequence lengths do not add up to the tokens");
    }
    for (size_t i = 0; i < n_tokens_; ++i) {
      const int32_t id = batch_.tokens[i];
      if (id < 0 || static_cast<uint32_t>(id) >= hp_.n_vocab) {
        return Status(ErrorCode::kInvalidArgument,
                      "token id " + std::to_string(id) + " at " + std::to_string(i) +
                          " outside the vocabulary of " + std::to_string(hp_.n_vocab));
      }
      const int32_t type = batch_.token_types.empty() ? 0 : batch_.token_types[i];
      if (type < 0 || static_cast<uint32_t>(type) >= hp_.n_token_types) {
        return Status(ErrorCode::kInvalidArgument, "token type " + std::to_string(type) +
                                                       " outside 0.." +
                                                       std::to_string(hp_.n_token_types - 1));
      }
    }
    return ok_status();
  }

  static void grow(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }

  void allocate() {
    const size_t t = n_tokens_;
    ws_.n_tokens_ = t;
    ws_.n_embd_ = hp_.n_embd;
    grow(ws_.x_, t * hp_.n_embd);
    grow(ws_.q_, t * hp_.q_dim());
    grow(ws_.k_, t * hp_.k_dim());
    grow(ws_.v_, t * hp_.v_dim());
    grow(ws_.attn_, t * hp_.n_head * hp_.head_dim_v);
    grow(ws_.tmp_, t * hp_.n_embd);
    grow(ws_.ff_, t * hp_.n_ff);
    per_thread_floats_ = max_len_ * max_len_ + hp_.head_dim_v * max_len_;
    grow(ws_.attention_scratch_, per_thread_floats_ * static_cast<size_t>(pool_.size()));
    size_t scratch = 0;
    for (const EncoderBlockWeights& b : model_.blocks()) {
      for (const EncoderLinear* l : {&b.q, &b.k, &b.v, &b.output, &b.up, &b.down}) {
        scratch = std::max(scratch, matmul_scratch_bytes(k_, l->weight, t, pool_.size()));
      }
    }
    if (ws_.matmul_scratch_.size() < scratch) ws_.matmul_scratch_.resize(scratch);
  }

  // x = LayerNorm(token + type + position embedding), positions restarting at each sequence.
  void embed() {
    const size_t d = hp_.n_embd;
    std::vector<uint32_t> position(n_tokens_);
    for (size_t s = 0; s < starts_.size(); ++s) {
      for (uint32_t p = 0; p < batch_.seq_lengths[s]; ++p) position[starts_[s] + p] = p;
    }
    float* x = ws_.x_.data();
    float* tmp = ws_.tmp_.data();
    parallel_rows(pool_, n_tokens_, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        float* row = x + i * d;
        float* scratch = tmp + i * d;
        const int32_t type = batch_.token_types.empty() ? 0 : batch_.token_types[i];
        embedding_row(k_, model_.token_embedding(), static_cast<size_t>(batch_.tokens[i]), row);
        embedding_row(k_, model_.token_type_embedding(), static_cast<size_t>(type), scratch);
        k_.add(row, scratch, row, d);
        embedding_row(k_, model_.position_embedding(), position[i], scratch);
        k_.add(scratch, row, row, d);
        const EncoderNorm& norm = model_.embedding_norm();
        k_.layer_norm(row, norm.weight, norm.bias, d, hp_.norm_eps, row);
      }
    });
  }

  // y (n_tokens rows of l.weight.n_rows) = W x + b.
  void linear(const EncoderLinear& l, const float* x, float* y) {
    const size_t n_out = l.weight.n_rows;
    matmul(k_, l.weight, x, l.weight.k, n_tokens_, y, n_out, ws_.matmul_scratch_, pool_);
    if (l.bias == nullptr) return;
    parallel_rows(pool_, n_tokens_, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) k_.add(y + i * n_out, l.bias, y + i * n_out, n_out);
    });
  }

  // x = LayerNorm(y + b + x) row by row (the bias of the preceding projection, the residual, the
  // post-norm), in llama.cpp's order of operations.
  void residual_norm(const EncoderLinear& l, float* y, float* x, const EncoderNorm& norm) {
    const size_t d = hp_.n_embd;
    parallel_rows(pool_, n_tokens_, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        float* yi = y + i * d;
        float* xi = x + i * d;
        if (l.bias != nullptr) k_.add(yi, l.bias, yi, d);
        k_.add(yi, xi, xi, d);
        k_.layer_norm(xi, norm.weight, norm.bias, d, hp_.norm_eps, xi);
      }
    });
  }

  void run_block(const EncoderBlockWeights& b) {
    const size_t d = hp_.n_embd;
    float* x = ws_.x_.data();
    linear(b.q, x, ws_.q_.data());
    linear(b.k, x, ws_.k_.data());
    linear(b.v, x, ws_.v_.data());
    attention();
    matmul(k_, b.output.weight, ws_.attn_.data(), b.output.weight.k, n_tokens_, ws_.tmp_.data(), d,
           ws_.matmul_scratch_, pool_);
    residual_norm(b.output, ws_.tmp_.data(), x, b.attn_output_norm);

    linear(b.up, x, ws_.ff_.data());
    const size_t ff = hp_.n_ff;
    float* f = ws_.ff_.data();
    parallel_rows(pool_, n_tokens_, [&](size_t begin, size_t end) {
      float* rows = f + begin * ff;
      const size_t n = (end - begin) * ff;
      if (gelu_ == EncoderGelu::kTanhF16Table) {
        gelu_tanh_f16_table(rows, rows, n);
      } else {
        k_.gelu_tanh(rows, rows, n);
      }
    });
    matmul(k_, b.down.weight, f, ff, n_tokens_, ws_.tmp_.data(), d, ws_.matmul_scratch_, pool_);
    residual_norm(b.down, ws_.tmp_.data(), x, b.layer_output_norm);
  }

  // Bidirectional attention within each sequence: one task per (sequence, head). Scores come
  // from the F32 dot tiles (keys as the "weight" rows, queries as columns), then a softmax per
  // query, then the values transposed into rows so the same tiles give the weighted sums.
  void attention() {
    const size_t n_head = hp_.n_head;
    const size_t group = hp_.n_head / hp_.n_head_kv;
    const size_t dk = hp_.head_dim_k;
    const size_t dv = hp_.head_dim_v;
    const size_t q_dim = hp_.q_dim();
    const size_t k_dim = hp_.k_dim();
    const size_t v_dim = hp_.v_dim();
    const size_t out_dim = n_head * dv;
    const WeightKernels& f32 = k_.weight(TensorType::kF32);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
    const size_t n_seq = starts_.size();
    pool_.parallel_for(n_seq * n_head, [&](size_t task, int thread) {
      const size_t s = task / n_head;
      const size_t h = task % n_head;
      const size_t kv_h = h / group;
      const size_t start = starts_[s];
      const size_t len = batch_.seq_lengths[s];
      float* scores =
          ws_.attention_scratch_.data() + per_thread_floats_ * static_cast<size_t>(thread);
      float* vt = scores + len * len;
      const float* q = ws_.q_.data() + start * q_dim + h * dk;
      const float* kk = ws_.k_.data() + start * k_dim + kv_h * dk;
      const float* v = ws_.v_.data() + start * v_dim + kv_h * dv;
      // scores[c * len + r] = K_r . Q_c
      f32.dot_f32({.w = reinterpret_cast<const uint8_t*>(kk),
                   .w_stride = k_dim * sizeof(float),
                   .n_rows = len,
                   .x = reinterpret_cast<const uint8_t*>(q),
                   .x_stride = q_dim * sizeof(float),
                   .n_cols = len,
                   .k = dk,
                   .y = scores,
                   .y_stride = len});
      const SoftmaxParams softmax{.scale = scale, .softcap = 0.0f, .mask = nullptr};
      for (size_t c = 0; c < len; ++c) k_.softmax(scores + c * len, len, softmax);
      for (size_t t = 0; t < len; ++t) {
        for (size_t e = 0; e < dv; ++e) vt[e * len + t] = v[t * v_dim + e];
      }
      // out[c][e] = V^T_e . P_c
      f32.dot_f32({.w = reinterpret_cast<const uint8_t*>(vt),
                   .w_stride = len * sizeof(float),
                   .n_rows = dv,
                   .x = reinterpret_cast<const uint8_t*>(scores),
                   .x_stride = len * sizeof(float),
                   .n_cols = len,
                   .k = len,
                   .y = ws_.attn_.data() + start * out_dim + h * dv,
                   .y_stride = out_dim});
    });
  }

  const KernelTable& k_;
  const EncoderModel& model_;
  const HParams& hp_;
  const EncoderBatch& batch_;
  EncoderWorkspace& ws_;
  ThreadPool& pool_;
  EncoderGelu gelu_;
  size_t n_tokens_ = 0;
  size_t max_len_ = 0;
  size_t per_thread_floats_ = 0;
  std::vector<size_t> starts_;
};

Status encoder_forward(const KernelTable& kernels, const EncoderModel& model,
                       const EncoderBatch& batch, EncoderWorkspace& workspace, ThreadPool& pool,
                       EncoderGelu gelu) {
  return EncoderPass(kernels, model, batch, workspace, pool, gelu).run();
}

Status encoder_forward(const EncoderModel& model, const EncoderBatch& batch,
                       EncoderWorkspace& workspace, ThreadPool& pool, EncoderGelu gelu) {
  return encoder_forward(selected_kernels(), model, batch, workspace, pool, gelu);
}

}  // namespace synapse
