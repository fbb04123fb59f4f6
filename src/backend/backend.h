// SPDX-License-Identifier: Apache-2.0
// The execution backend: what a device can run (op x dtype), its buffers, the ops a forward pass
// is made of, and sync. The CPU backend (cpu_backend.h) runs them through the KernelTable and is
// the reference; a GPU backend will implement the same interface. The model's IR verifier asks
// supports() before anything runs, and the lowering asks kernel_name() to record which kernel
// executes each op on this machine.
//
// Conventions: activations are F32 token rows (row r of a matrix at data + r * stride floats);
// "rows" are the tokens of a step. Pointers are the backend's own memory (host memory for the
// CPU backend), from allocate() or from the mapped model file for weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/tensor_type.h"
#include "ops/op_params.h"

namespace synapse {

// The ops a decoder's forward pass is made of: the one op vocabulary of the Model IR (each IR
// op is one of these) and of every backend.
enum class BackendOp : uint8_t {
  kEmbed,      // token ids -> rows of the embedding matrix (any weight type)
  kRmsNorm,    // per row (or per head segment), times an F32 weight
  kMatmul,     // weight matrix x activation rows (any weight type)
  kAddBias,    // rows += an F32 vector
  kRope,       // rotary embedding of head segments at each row's position
  kKvStore,    // K/V rows into the paged cache
  kAttention,  // causal attention over the paged cache (optionally windowed and soft-capped)
  kSwiGlu,     // silu(gate) * up
  kAdd,        // residual: rows += rows
  kCopyRows,   // gather selected rows
  kGeGlu,      // gelu_tanh(gate) * up
  kScale,      // rows *= a constant
  kSoftcap,    // x -> cap * tanh(x / cap)
  kMoe,        // mixture of experts: router, top-k, the chosen experts' SwiGLU, weighted sum
  kMul,        // rows = rows * rows, element-wise
  kShortConv,  // causal depthwise convolution over positions, its inputs kept in the KV pages
  kLayerNorm,  // per row: (x - mean) / std * weight + bias (bias optional)
  kGelu,       // gelu_tanh(x), element-wise
};
inline constexpr size_t kBackendOpCount = 18;
std::string_view backend_op_name(BackendOp op);

// Memory owned by a backend (activations, scratch, the KV pool); freed with the object.
class BackendBuffer {
 public:
  BackendBuffer() = default;
  BackendBuffer(uint8_t* data, size_t size, void (*release)(uint8_t*, size_t))
      : data_(data), size_(size), release_(release) {}
  ~BackendBuffer() { reset(); }
  BackendBuffer(BackendBuffer&& other) noexcept { *this = std::move(other); }
  BackendBuffer& operator=(BackendBuffer&& other) noexcept;
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() const { return {data_, size_}; }
  float* floats() const { return reinterpret_cast<float*>(data_); }

 private:
  void reset();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void (*release_)(uint8_t*, size_t) = nullptr;
};

// How a matrix product is computed: the activation precision and the kernel route.
struct MatmulMode {
  DotPath path = DotPath::kQuantized;
  MatmulRoute route = MatmulRoute::kAuto;
};

// The rows of a step that belong to one sequence, with that sequence's KV pages for one layer.
struct KvPageView {
  uint8_t* const* k_pages;  // page p holds tokens [p * page_tokens, (p + 1) * page_tokens)
  uint8_t* const* v_pages;
  size_t n_pages;
};
struct SequenceRows {
  size_t first_row;  // rows [first_row, first_row + n_rows) of the step
  size_t n_rows;
  size_t n_past;  // tokens cached before this step; row i sits at position n_past + i
  KvPageView kv;  // for the layer being run
};
struct KvFormat {
  size_t page_tokens;
  size_t n_kv_heads;
  size_t head_dim;
  // F32, F16, or Q8_0/Q4_0: then a token's K (and V) row is whole 32-element blocks, each head
  // its own blocks (head_dim % 32 == 0), quantized as the weights are (llama.cpp's
  // --cache-type-k/-v q8_0 and q4_0).
  TensorType type;
  // Elements per token in each of a layer's K and V regions; 0: n_kv_heads * head_dim. Wider
  // when layers without attention keep per-token state there (LFM2's convolution input).
  size_t row_elements = 0;
  size_t token_elements() const { return row_elements != 0 ? row_elements : n_kv_heads * head_dim; }
  size_t token_bytes() const;
};
// Q8_0 and Q4_0: the KV cache types stored as 32-element blocks.
bool is_block_kv_type(TensorType type);

// A mixture-of-experts feed-forward (Qwen3-MoE, Mixtral): a router matrix scores n_expert
// experts per row; the n_used best (softmax over all scores, optionally renormalized over the
// chosen) each run a SwiGLU feed-forward, and the row's output is their weighted sum.
inline constexpr size_t kMaxMoeExperts = 512;
struct MoeWeights {
  WeightMatrix router;                 // n_expert rows of the input width
  std::span<const WeightMatrix> gate;  // per expert: n_ff_expert rows of the input width
  std::span<const WeightMatrix> up;
  std::span<const WeightMatrix> down;  // per expert: output-width rows of n_ff_expert
  size_t n_used = 0;
  bool normalize = true;  // renormalize the chosen experts' weights to sum 1
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;  // "cpu (avx512+vnni, 2 threads)"
  // Whether `op` runs with `type`: the weight type for kEmbed/kMatmul, the cache type for
  // kKvStore/kAttention, F32 for the others.
  virtual bool supports(BackendOp op, TensorType type) const = 0;
  // The kernel that runs `op` on `type` in `mode` here, for the execution plan.
  virtual std::string kernel_name(BackendOp op, TensorType type, MatmulMode mode) const = 0;
  // Uninitialized memory, 64-byte aligned; resource_exhausted when it cannot be had.
  virtual Result<BackendBuffer> allocate(size_t bytes) = 0;
  // Copies `bytes` between two places of the backend's memory (KV pages on copy-on-write).
  virtual void copy(uint8_t* dst, const uint8_t* src, size_t bytes) = 0;
  // A weight matrix of the model file as this backend reads it: rows of `k` elements of
  // `type` at `data` (host memory, the file's mapping) or the backend's own copy of them (a
  // device backend uploads here, once, at load). The returned matrix lives as long as the
  // backend and the file.
  virtual Result<WeightMatrix> prepare_matrix(TensorType type, const uint8_t* data,
                                              size_t row_stride, size_t n_rows, size_t k) = 0;
  // A vector weight (norm scale, bias, RoPE factors) as F32 in the backend's memory; `data`
  // holds n elements of `type` (F32, F16 or BF16).
  virtual Result<const float*> prepare_vector(TensorType type, const uint8_t* data, size_t n) = 0;
  // Waits for queued work (the CPU backend runs every op synchronously).
  virtual void sync() = 0;

  // Scratch the matmul op needs for `n_rows` rows of these matrices (query before running).
  virtual size_t matmul_scratch_bytes(std::span<const WeightMatrix> ws, size_t n_rows,
                                      MatmulMode mode) const = 0;

  virtual void embed(const WeightMatrix& table, const int32_t* ids, size_t n_rows, float* y,
                     size_t y_stride) = 0;
  // y = x / rms(x) * weight for every segment of `width` floats: n_segments per row.
  virtual void rms_norm(const float* x, size_t x_stride, size_t n_rows, size_t n_segments,
                        size_t width, const float* weight, float eps, float* y,
                        size_t y_stride) = 0;
  virtual void matmul(std::span<const MatmulOutput> outputs, const float* x, size_t x_stride,
                      size_t n_rows, std::span<uint8_t> scratch, MatmulMode mode) = 0;
  virtual void add_bias(float* y, size_t y_stride, size_t n_rows, const float* bias,
                        size_t width) = 0;
  // Rotates n_heads segments of head_dim floats of each row at positions[row].
  virtual void rope(float* x, size_t x_stride, size_t n_rows, size_t n_heads, size_t head_dim,
                    const int64_t* positions, const RopeParams& params) = 0;
  // Row i of k and of v (`width` floats each) into the cache slot of its sequence's position.
  virtual void kv_store(const float* k, const float* v, size_t stride, size_t width,
                        std::span<const SequenceRows> sequences, const KvFormat& format) = 0;
  // Row i attends to its sequence's cached tokens 0..positions[i]; with params.causal false, to
  // all of them (a bidirectional model's sequence runs whole, so that is the whole sequence).
  virtual void attention(const float* q, size_t q_stride, const int64_t* positions, float* out,
                         size_t out_stride, std::span<const SequenceRows> sequences,
                         const KvFormat& format, const AttentionParams& params) = 0;
  // y = silu(gate) * up, `width` floats per row.
  virtual void swiglu(const float* gate, const float* up, size_t stride, size_t n_rows,
                      size_t width, float* y, size_t y_stride) = 0;
  // Causal depthwise convolution over each sequence's positions (LFM2's short convolution):
  // y[row][c] = sum_j weight[c * kernel + j] * u[p - (kernel - 1) + j][c] for the row at position
  // p, u[t] the width floats stored for position t by kv_store (the first half in the K region,
  // the second in the V region), zero before position 0.
  virtual void short_conv(std::span<const SequenceRows> sequences, const KvFormat& format,
                          const float* weight, size_t kernel, size_t width, float* y,
                          size_t y_stride) = 0;
  // y = a * b element-wise, `width` floats per row.
  virtual void mul(const float* a, size_t a_stride, const float* b, size_t b_stride, size_t n_rows,
                   size_t width, float* y, size_t y_stride) = 0;
  // y = gelu_tanh(gate) * up, `width` floats per row.
  virtual void geglu(const float* gate, const float* up, size_t stride, size_t n_rows, size_t width,
                     float* y, size_t y_stride) = 0;
  // y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias per row; bias may be null.
  virtual void layer_norm(const float* x, size_t x_stride, size_t n_rows, size_t width,
                          const float* weight, const float* bias, float eps, float* y,
                          size_t y_stride) = 0;
  // y = gelu_tanh(y) in place, `width` floats per row, evaluated as `form` says.
  virtual void gelu(float* y, size_t y_stride, size_t n_rows, size_t width, GeluForm form) = 0;
  // y *= s, `width` floats per row.
  virtual void scale(float* y, size_t y_stride, size_t n_rows, size_t width, float s) = 0;
  // y = cap * tanh(y / cap), `width` floats per row.
  virtual void softcap(float* y, size_t y_stride, size_t n_rows, size_t width, float cap) = 0;
  // Scratch moe() needs for n_rows rows (query before running).
  virtual size_t moe_scratch_bytes(const MoeWeights& w, size_t n_rows, MatmulMode mode) const = 0;
  // y = sum over each row's chosen experts of weight * down(silu(gate x) * up x). Prefill groups
  // the rows by expert, so each chosen expert's matrices are read once per call.
  virtual void moe(const MoeWeights& w, const float* x, size_t x_stride, size_t n_rows, float* y,
                   size_t y_stride, std::span<uint8_t> scratch, MatmulMode mode) = 0;
  // y += x, `width` floats per row.
  virtual void add(const float* x, size_t x_stride, size_t n_rows, size_t width, float* y,
                   size_t y_stride) = 0;
  // y row j = x row rows[j].
  virtual void copy_rows(const float* x, size_t x_stride, std::span<const uint32_t> rows,
                         size_t width, float* y, size_t y_stride) = 0;
};

}  // namespace synapse
