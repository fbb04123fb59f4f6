// SPDX-License-Identifier: Apache-2.0
// A loaded model of any architecture (decoders such as llama, qwen2, gemma; encoders such as
// bert): the file, its hyper-parameters, its verified IR and the execution plan for one backend,
// and the forward pass that runs the plan over a batch of token rows from one or more sequences.
// Loading checks every expected tensor and verifies the IR, so an unsupported model fails before
// any token runs. A bidirectional encoder runs each sequence whole in one forward pass.
//
// The model does not own KV memory: the runtime's paged cache passes each sequence's page tables
// per layer. Activation buffers are the model's own, grown to the largest batch seen (no
// allocation in a steady decode loop). One forward at a time (the executor thread).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "format/model_file.h"
#include "model/arch/architecture.h"
#include "model/ir.h"
#include "model/plan.h"

namespace synapse {

struct DecoderOptions {
  uint32_t n_ctx = 0;  // tokens per sequence; 0: the model's training context, at most 4096
  TensorType kv_type = TensorType::kF32;
  MatmulMode matmul_mode;           // quantized activations by default
  GeluForm gelu = GeluForm::kTanh;  // encoders' GELU (the F16 table: parity with llama.cpp)
};

// The rows [first_row, first_row + n_rows) of a step belong to one sequence with n_past tokens
// cached before it; `layers` holds that sequence's KV pages for each of the n_layer layers.
struct ForwardSequence {
  size_t first_row = 0;
  size_t n_rows = 0;
  size_t n_past = 0;
  const KvPageView* layers = nullptr;
};

struct ForwardBatch {
  std::span<const int32_t> tokens;
  std::span<const ForwardSequence> sequences;  // cover the rows, in row order
  std::span<const uint32_t> output_rows;       // rows whose logits are wanted, increasing
  float* logits = nullptr;                     // output_rows.size() rows of n_vocab floats
  size_t page_tokens = 0;                      // tokens per KV page
  // Rows whose final hidden state is wanted (increasing; may overlap output_rows): the output
  // head's input, i.e. the residual stream after the final norm, as embedding models pool it.
  // Rows that want only this skip the output head.
  std::span<const uint32_t> hidden_rows;
  float* hidden = nullptr;  // hidden_rows.size() rows of n_embd floats
  // One token type (segment id) per row, for models with token-type embeddings; empty: all 0.
  std::span<const int32_t> token_types;
};

class DecoderModel {
 public:
  // Opens the file, reads the hyper-parameters, checks the tensors, builds and verifies the IR.
  static Result<std::unique_ptr<DecoderModel>> open(const std::string& path, Backend& backend,
                                                    const DecoderOptions& options = {});
  static Result<std::unique_ptr<DecoderModel>> load(std::unique_ptr<ModelFile> file,
                                                    Backend& backend,
                                                    const DecoderOptions& options = {});

  const HParams& hparams() const { return ir_.hp; }
  const ModelIr& ir() const { return ir_; }
  const ExecutionPlan& plan() const { return plan_; }
  const ModelFile& file() const { return *file_; }
  Backend& backend() const { return backend_; }
  uint32_t n_ctx() const { return ir_.n_ctx; }
  uint32_t n_vocab() const { return ir_.hp.n_vocab; }
  // Floats per logits row: n_vocab for a decoder, the labels of a cross-encoder's classifier,
  // 0 for a model without an output head (it answers hidden states only).
  uint32_t n_logits() const { return ir_.n_logits(); }
  // Attention sees the whole sequence: a sequence runs in one forward pass, from position 0.
  bool bidirectional() const { return ir_.bidirectional; }
  uint32_t n_layer() const { return ir_.hp.n_layer; }
  uint32_t n_embd() const { return ir_.hp.n_embd; }
  KvFormat kv_format(size_t page_tokens) const;
  // Bytes of matrix weights read by one decode step (every matrix once; the embedding row aside).
  uint64_t weight_bytes_per_token() const;

  Status forward(const ForwardBatch& batch);

 private:
  DecoderModel(std::unique_ptr<ModelFile> file, Backend& backend, ModelIr ir, ExecutionPlan plan)
      : file_(std::move(file)), backend_(backend), ir_(std::move(ir)), plan_(std::move(plan)) {}
  Status ensure_buffers(size_t n_rows, size_t n_out);
  Status ensure_scratch(size_t bytes);
  Status validate(const ForwardBatch& batch) const;
  // The rows that run past the last block: output_rows, or their union with hidden_rows.
  std::span<const uint32_t> select_rows(const ForwardBatch& batch);
  // Before the first op on the logits rows (or at the end, for a model without a head): copies
  // the hidden rows out and returns where the head reads the final hidden state, compacted to
  // the logits rows when they are not all of the selected rows.
  struct HeadInput {
    const float* x = nullptr;
    size_t stride = 0;
  };
  HeadInput take_hidden_rows(const ForwardBatch& batch);
  // The ids a kEmbed op looks up for each row.
  const int32_t* embed_ids(const ForwardBatch& batch, EmbedSource source) const;
  float* value(IrValueId v) { return values_[v]; }

  std::unique_ptr<ModelFile> file_;
  Backend& backend_;
  ModelIr ir_;
  ExecutionPlan plan_;

  // Activations: one buffer per IR value, sized for rows_capacity_ (out_capacity_ for the
  // output-row values); the logits value points at the caller's buffer.
  size_t rows_capacity_ = 0;
  size_t out_capacity_ = 0;
  std::vector<BackendBuffer> buffers_;
  std::vector<float*> values_;
  BackendBuffer scratch_;
  std::vector<int64_t> positions_;
  // Per row: its position as an embedding id, and token type 0 for callers that give none.
  std::vector<int32_t> position_ids_;
  std::vector<int32_t> zero_types_;
  std::vector<SequenceRows> sequence_rows_;
  // Reused by forward() when hidden rows are asked for: the selected rows and where the logits
  // and hidden rows sit among them.
  std::vector<uint32_t> selected_rows_;
  std::vector<uint32_t> logits_positions_;
  std::vector<uint32_t> hidden_positions_;
};

}  // namespace synapse
