// SPDX-License-Identifier: Apache-2.0
#include "model/decoder.h"

#include <algorithm>

#include "base/check.h"
#include "model/graph_blocks.h"
#include "model/tensor_check.h"

namespace synapse {
namespace {

// Default context when the caller does not choose one: the model's, bounded so that a model
// trained on 128K tokens does not ask for a 128K-token page table by default.
constexpr uint32_t kDefaultMaxContext = 4096;

}  // namespace

Result<std::unique_ptr<DecoderModel>> DecoderModel::open(const std::string& path, Backend& backend,
                                                         const DecoderOptions& options) {
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<ModelFile> file, open_model_file(path));
  return load(std::move(file), backend, options);
}

Result<std::unique_ptr<DecoderModel>> DecoderModel::load(std::unique_ptr<ModelFile> file,
                                                         Backend& backend,
                                                         const DecoderOptions& options) {
  SYN_ASSIGN_OR_RETURN(HParams hp, read_model_hparams(file->metadata()));
  const Architecture* arch = find_architecture(hp.arch);
  if (arch == nullptr || arch->kind() != ModelKind::kDecoder) {
    return Status(ErrorCode::kUnsupported,
                  "architecture '" + hp.arch + "' is not a decoder this build can run",
                  ErrorWhere{.path = file->path(), .key = "general.architecture"});
  }
  const TensorCheckReport check = check_model_tensors(*arch, hp, *file);
  if (!check.ok()) {
    Status first = check.problems.front();
    return Status(
        first.code(),
        std::string(first.message()) +
            (check.problems.size() > 1
                 ? " (and " + std::to_string(check.problems.size() - 1) + " more tensor problems)"
                 : ""),
        ErrorWhere{.path = file->path(), .tensor = first.where().tensor});
  }
  GraphOptions graph_options;
  graph_options.n_ctx =
      options.n_ctx != 0
          ? options.n_ctx
          : std::min(hp.n_ctx_train != 0 ? hp.n_ctx_train : kDefaultMaxContext, kDefaultMaxContext);
  graph_options.kv_type = options.kv_type;
  SYN_ASSIGN_OR_RETURN(ModelIr ir, arch->build_graph(hp, *file, graph_options));
  SYN_ASSIGN_OR_RETURN(ExecutionPlan plan, lower_ir(ir, backend, options.matmul_mode));
  return std::unique_ptr<DecoderModel>(
      new DecoderModel(std::move(file), backend, std::move(ir), std::move(plan)));
}

KvFormat DecoderModel::kv_format(size_t page_tokens) const {
  return KvFormat{page_tokens, ir_.hp.n_head_kv, ir_.hp.head_dim_k, ir_.kv_type};
}

uint64_t DecoderModel::weight_bytes_per_token() const {
  uint64_t bytes = 0;
  for (const PlanRegion& r : plan_.regions) {
    for (const PlanOp& p : r.ops) {
      if (p.op.kind != IrOpKind::kMatmul) continue;
      for (const WeightMatrix& w : p.matrices) bytes += uint64_t{w.row_stride} * w.n_rows;
    }
  }
  return bytes;
}

Status DecoderModel::ensure_buffers(size_t n_rows, size_t n_out) {
  if (n_rows <= rows_capacity_ && n_out <= out_capacity_) return ok_status();
  rows_capacity_ = std::max(rows_capacity_, n_rows);
  out_capacity_ = std::max(out_capacity_, n_out);
  buffers_.clear();
  for (size_t v = 0; v < kIrValueCount; ++v) {
    const auto value = static_cast<IrValue>(v);
    values_[v] = nullptr;
    if (value == IrValue::kLogits) continue;  // the caller's buffer
    const bool out_rows = value == IrValue::kOutHidden || value == IrValue::kOutNormed;
    const size_t rows = out_rows ? out_capacity_ : rows_capacity_;
    SYN_ASSIGN_OR_RETURN(BackendBuffer b,
                         backend_.allocate(std::max<size_t>(rows, 1) * ir_.width(value) * 4));
    values_[v] = b.floats();
    buffers_.push_back(std::move(b));
  }
  positions_.resize(rows_capacity_);
  return ok_status();
}

Status DecoderModel::validate(const ForwardBatch& b) const {
  const auto bad = [](const std::string& field, const std::string& message) {
    return Status(ErrorCode::kInvalidArgument, message, ErrorWhere{.field = field});
  };
  if (b.page_tokens == 0) return bad("page_tokens", "KV pages of zero tokens");
  for (size_t i = 0; i < b.tokens.size(); ++i) {
    if (b.tokens[i] < 0 || static_cast<uint32_t>(b.tokens[i]) >= ir_.hp.n_vocab) {
      return bad("tokens", "token id " + std::to_string(b.tokens[i]) + " at row " +
                               std::to_string(i) + " is outside the vocabulary of " +
                               std::to_string(ir_.hp.n_vocab));
    }
  }
  size_t next_row = 0;
  for (const ForwardSequence& s : b.sequences) {
    if (s.first_row != next_row || s.layers == nullptr) {
      return bad("sequences", "sequences must cover the rows in order");
    }
    next_row += s.n_rows;
    if (s.n_past + s.n_rows > ir_.n_ctx) {
      return Status(ErrorCode::kLimitExceeded,
                    "sequence of " + std::to_string(s.n_past + s.n_rows) +
                        " tokens exceeds the context of " + std::to_string(ir_.n_ctx),
                    ErrorWhere{.field = "context"});
    }
  }
  if (next_row != b.tokens.size()) return bad("sequences", "sequences must cover the rows");
  for (size_t j = 0; j < b.output_rows.size(); ++j) {
    if (b.output_rows[j] >= b.tokens.size() ||
        (j > 0 && b.output_rows[j] <= b.output_rows[j - 1])) {
      return bad("output_rows", "output rows must be increasing rows of the batch");
    }
  }
  if (!b.output_rows.empty() && b.logits == nullptr) return bad("logits", "no logits buffer");
  for (size_t j = 0; j < b.hidden_rows.size(); ++j) {
    if (b.hidden_rows[j] >= b.tokens.size() ||
        (j > 0 && b.hidden_rows[j] <= b.hidden_rows[j - 1])) {
      return bad("hidden_rows", "hidden rows must be increasing rows of the batch");
    }
  }
  if (!b.hidden_rows.empty() && b.hidden == nullptr) return bad("hidden", "no hidden buffer");
  return ok_status();
}

std::span<const uint32_t> DecoderModel::select_rows(const ForwardBatch& b) {
  if (b.hidden_rows.empty()) return b.output_rows;
  selected_rows_.clear();
  logits_positions_.clear();
  hidden_positions_.clear();
  size_t i = 0, j = 0;
  while (i < b.output_rows.size() || j < b.hidden_rows.size()) {
    const uint32_t row = j == b.hidden_rows.size()   ? b.output_rows[i]
                         : i == b.output_rows.size() ? b.hidden_rows[j]
                                                     : std::min(b.output_rows[i], b.hidden_rows[j]);
    const auto position = static_cast<uint32_t>(selected_rows_.size());
    selected_rows_.push_back(row);
    if (i < b.output_rows.size() && b.output_rows[i] == row) {
      logits_positions_.push_back(position);
      ++i;
    }
    if (j < b.hidden_rows.size() && b.hidden_rows[j] == row) {
      hidden_positions_.push_back(position);
      ++j;
    }
  }
  return selected_rows_;
}

DecoderModel::HeadInput DecoderModel::take_hidden_rows(const ForwardBatch& b, const IrOp& head) {
  const HeadInput normed{value(head.input.value) + head.input.offset, ir_.width(head.input.value)};
  if (b.hidden_rows.empty()) return normed;
  SYN_CHECK(head.input.width == ir_.hp.n_embd && head.input.value != IrValue::kOutHidden,
            "the output head reads the final norm's n_embd-wide output");
  backend_.copy_rows(normed.x, normed.stride, hidden_positions_, head.input.width, b.hidden,
                     ir_.hp.n_embd);
  if (logits_positions_.empty() || logits_positions_.size() == selected_rows_.size()) {
    return normed;
  }
  // Some selected rows want no logits: gather the others into kOutHidden, which the final norm
  // has consumed, so that the head multiplies only the rows whose logits are wanted.
  float* compact = value(IrValue::kOutHidden);
  const size_t compact_stride = ir_.width(IrValue::kOutHidden);
  backend_.copy_rows(normed.x, normed.stride, logits_positions_, head.input.width, compact,
                     compact_stride);
  return HeadInput{compact, compact_stride};
}

Status DecoderModel::forward(const ForwardBatch& b) {
  SYN_RETURN_IF_ERROR(validate(b));
  const size_t n = b.tokens.size();
  if (n == 0) return ok_status();
  const std::span<const uint32_t> selected = select_rows(b);
  const size_t n_out = selected.size();
  SYN_RETURN_IF_ERROR(ensure_buffers(n, n_out));
  values_[static_cast<size_t>(IrValue::kLogits)] = b.logits;
  for (const ForwardSequence& s : b.sequences) {
    for (size_t i = 0; i < s.n_rows; ++i) {
      positions_[s.first_row + i] = static_cast<int64_t>(s.n_past + i);
    }
  }
  sequence_rows_.resize(b.sequences.size());
  const KvFormat kv = kv_format(b.page_tokens);
  const MatmulMode mode = plan_.matmul_mode;
  const auto ptr = [&](IrSlice s) { return value(s.value) + s.offset; };
  const auto stride = [&](IrSlice s) { return static_cast<size_t>(ir_.width(s.value)); };
  const auto set_layer = [&](uint32_t layer) {
    for (size_t i = 0; i < b.sequences.size(); ++i) {
      const ForwardSequence& s = b.sequences[i];
      sequence_rows_[i] = SequenceRows{s.first_row, s.n_rows, s.n_past, s.layers[layer]};
    }
  };

  for (const PlanRegion& region : plan_.regions) {
    for (const PlanOp& p : region.ops) {
      const IrOp& op = p.op;
      size_t rows = op.rows == RowSpace::kOutput ? n_out : n;
      HeadInput head_input{};
      if (op.output.value == IrValue::kLogits) {
        if (rows == 0) continue;
        head_input = take_hidden_rows(b, op);
        rows = b.output_rows.size();
      }
      if (rows == 0) continue;
      switch (op.kind) {
        case IrOpKind::kEmbed:
          backend_.embed(p.matrices[0], b.tokens.data(), n, ptr(op.output), stride(op.output));
          break;
        case IrOpKind::kRmsNorm:
          backend_.rms_norm(ptr(op.input), stride(op.input), rows, op.n_segments,
                            op.input.width / op.n_segments, p.vector, op.eps, ptr(op.output),
                            stride(op.output));
          break;
        case IrOpKind::kMatmul: {
          std::array<MatmulOutput, kMaxMatmulGroup> outputs{};
          float* y = ptr(op.output);
          for (size_t i = 0; i < p.matrices.size(); ++i) {
            outputs[i] = MatmulOutput{p.matrices[i], y, stride(op.output)};
            y += p.matrices[i].n_rows;
          }
          const size_t scratch_bytes = backend_.matmul_scratch_bytes(p.matrices, rows, mode);
          if (scratch_bytes > scratch_.size()) {
            SYN_ASSIGN_OR_RETURN(scratch_, backend_.allocate(scratch_bytes));
          }
          const bool head = op.output.value == IrValue::kLogits;
          backend_.matmul(std::span(outputs.data(), p.matrices.size()),
                          head ? head_input.x : ptr(op.input),
                          head ? head_input.stride : stride(op.input), rows, scratch_.span(), mode);
          break;
        }
        case IrOpKind::kAddBias:
          backend_.add_bias(ptr(op.output), stride(op.output), rows, p.vector, op.output.width);
          break;
        case IrOpKind::kRope: {
          RopeParams params = op.rope;
          params.freq_factors = p.vector;
          backend_.rope(ptr(op.input), stride(op.input), rows, op.n_heads, op.head_dim,
                        positions_.data(), params);
          break;
        }
        case IrOpKind::kKvStore: {
          set_layer(op.layer);
          const float* k = ptr(op.input);
          backend_.kv_store(k, k + ir_.hp.k_dim(), stride(op.input), sequence_rows_, kv);
          break;
        }
        case IrOpKind::kAttention: {
          set_layer(op.layer);
          const AttentionParams params{op.n_heads, op.n_kv_heads, op.head_dim, op.attention_scale,
                                       0.0f};
          backend_.attention(ptr(op.input), stride(op.input), positions_.data(), ptr(op.output),
                             stride(op.output), sequence_rows_, kv, params);
          break;
        }
        case IrOpKind::kSwiGlu: {
          const float* gate = ptr(op.input);
          backend_.swiglu(gate, gate + op.output.width, stride(op.input), rows, op.output.width,
                          ptr(op.output), stride(op.output));
          break;
        }
        case IrOpKind::kAddResidual:
          backend_.add(ptr(op.input), stride(op.input), rows, op.input.width, ptr(op.output),
                       stride(op.output));
          break;
        case IrOpKind::kSelectRows:
          backend_.copy_rows(ptr(op.input), stride(op.input), selected, op.input.width,
                             ptr(op.output), stride(op.output));
          break;
      }
    }
  }
  backend_.sync();
  return ok_status();
}

}  // namespace synapse
