// SPDX-License-Identifier: Apache-2.0
// The CPU backend: every op through one KernelTable (the ISA chosen at start-up, or any table a
// test passes), split over a ThreadPool the caller owns. It is the reference backend: other
// backends are checked against it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"

namespace synapse {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const KernelTable& kernels, ThreadPool& pool);

  std::string_view name() const override { return name_; }
  bool supports(BackendOp op, TensorType type) const override;
  std::string kernel_name(BackendOp op, TensorType type, MatmulMode mode) const override;
  Result<BackendBuffer> allocate(size_t bytes) override;
  void copy(uint8_t* dst, const uint8_t* src, size_t bytes) override;
  Result<WeightMatrix> prepare_matrix(TensorType type, const uint8_t* data, size_t row_stride,
                                      size_t n_rows, size_t k) override;
  Result<const float*> prepare_vector(TensorType type, const uint8_t* data, size_t n) override;
  void sync() override {}

  size_t matmul_scratch_bytes(std::span<const WeightMatrix> ws, size_t n_rows,
                              MatmulMode mode) const override;
  void embed(const WeightMatrix& table, const int32_t* ids, size_t n_rows, float* y,
             size_t y_stride) override;
  void rms_norm(const float* x, size_t x_stride, size_t n_rows, size_t n_segments, size_t width,
                const float* weight, float eps, float* y, size_t y_stride) override;
  void matmul(std::span<const MatmulOutput> outputs, const float* x, size_t x_stride, size_t n_rows,
              std::span<uint8_t> scratch, MatmulMode mode) override;
  void add_bias(float* y, size_t y_stride, size_t n_rows, const float* bias, size_t width) override;
  void rope(float* x, size_t x_stride, size_t n_rows, size_t n_heads, size_t head_dim,
            const int64_t* positions, const RopeParams& params) override;
  void kv_store(const float* k, const float* v, size_t stride, size_t width,
                std::span<const SequenceRows> sequences, const KvFormat& format) override;
  void short_conv(std::span<const SequenceRows> sequences, const KvFormat& format,
                  const float* weight, size_t kernel, size_t width, float* y,
                  size_t y_stride) override;
  void mul(const float* a, size_t a_stride, const float* b, size_t b_stride, size_t n_rows,
           size_t width, float* y, size_t y_stride) override;
  void attention(const float* q, size_t q_stride, const int64_t* positions, float* out,
                 size_t out_stride, std::span<const SequenceRows> sequences, const KvFormat& format,
                 const AttentionParams& params) override;
  void swiglu(const float* gate, const float* up, size_t stride, size_t n_rows, size_t width,
              float* y, size_t y_stride) override;
  void geglu(const float* gate, const float* up, size_t stride, size_t n_rows, size_t width,
             float* y, size_t y_stride) override;
  void layer_norm(const float* x, size_t x_stride, size_t n_rows, size_t width, const float* weight,
                  const float* bias, float eps, float* y, size_t y_stride) override;
  void gelu(float* y, size_t y_stride, size_t n_rows, size_t width, GeluForm form) override;
  void scale(float* y, size_t y_stride, size_t n_rows, size_t width, float s) override;
  void softcap(float* y, size_t y_stride, size_t n_rows, size_t width, float cap) override;
  size_t moe_scratch_bytes(const MoeWeights& w, size_t n_rows, MatmulMode mode) const override;
  void moe(const MoeWeights& w, const float* x, size_t x_stride, size_t n_rows, float* y,
           size_t y_stride, std::span<uint8_t> scratch, MatmulMode mode) override;
  void add(const float* x, size_t x_stride, size_t n_rows, size_t width, float* y,
           size_t y_stride) override;
  void copy_rows(const float* x, size_t x_stride, std::span<const uint32_t> rows, size_t width,
                 float* y, size_t y_stride) override;

  const KernelTable& kernels() const { return kernels_; }
  ThreadPool& pool() { return pool_; }

 private:
  // Bidirectional attention of whole sequences through score matrices (kernels/attention.h).
  void attention_whole_sequences(const float* q, size_t q_stride, float* out, size_t out_stride,
                                 std::span<const SequenceRows> sequences, const KvFormat& format,
                                 const AttentionParams& params);
  std::vector<float> attention_scratch_;  // per thread, grown to the longest sequence seen
  size_t moe_matmul_bytes(const MoeWeights& w, size_t n_rows, MatmulMode mode) const;
  // fn(row) for every row: inline for a few rows (a decode step), on the pool for many.
  template <typename Fn>
  void for_rows(size_t n_rows, Fn&& fn);

  const KernelTable& kernels_;
  ThreadPool& pool_;
  std::string name_;
  // F32 copies of vector weights stored in another type (or misaligned), made at load.
  std::vector<std::unique_ptr<float[]>> converted_vectors_;
  // Weights rearranged for the kernel level (InterleavedKernels), made at load, one per
  // distinct matrix (a tied embedding and output head share theirs). SYNAPSE_INTERLEAVE=0
  // turns interleaving off (to compare the two layouts).
  bool interleave_;
  std::vector<BackendBuffer> interleaved_buffers_;
  std::map<std::pair<const uint8_t*, TensorType>, WeightMatrix> interleaved_;
};

}  // namespace synapse
