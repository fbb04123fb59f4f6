// SPDX-License-Identifier: Apache-2.0
#include "model/decoder.h"

#include <algorithm>
#include <optional>

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
  if (arch == nullptr) {
    return Status(ErrorCode::kUnsupported,
                  "architecture '" + hp.arch + "' is not one this build can run",
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
  graph_options.gelu = options.gelu;
  SYN_ASSIGN_OR_RETURN(ModelIr ir, arch->build_graph(hp, *file, graph_options));
  // A bidirectional encoder's keys and values live for the one pass that computes them (as in
  // llama.cpp, which keeps them F32 in its graph): F32 keeps it at parity, and its context is
  // short.
  if (ir.bidirectional) ir.kv_type = TensorType::kF32;
  // A caller that fixes the stream route does so for batch invariance (decode-shaped kernels
  // for every row). A bidirectional model never decodes: all its rows are prefill, where the
  // tiled kernels are much faster and just as batch-invariant (a fixed route either way).
  MatmulMode mode = options.matmul_mode;
  if (ir.bidirectional && mode.route == MatmulRoute::kStream) mode.route = MatmulRoute::kTiled;
  SYN_ASSIGN_OR_RETURN(ExecutionPlan plan, lower_ir(ir, backend, mode, &file->mapping()));
  return std::unique_ptr<DecoderModel>(
      new DecoderModel(std::move(file), backend, std::move(ir), std::move(plan)));
}

KvFormat DecoderModel::kv_format(size_t page_tokens) const {
  KvFormat format{page_tokens, ir_.hp.n_head_kv, ir_.hp.head_dim_k, ir_.kv_type};
  if (ir_.kv_row_elements > format.token_elements()) format.row_elements = ir_.kv_row_elements;
  return format;
}

uint64_t DecoderModel::weight_bytes_per_token() const {
  uint64_t bytes = 0;
  const auto matrix_bytes = [](const WeightMatrix& w) { return uint64_t{w.row_stride} * w.n_rows; };
  for (const PlanRegion& r : plan_.regions) {
    for (const PlanOp& p : r.ops) {
      if (p.op.kind == BackendOp::kMatmul) {
        for (const WeightMatrix& w : p.matrices) bytes += matrix_bytes(w);
      } else if (p.op.kind == BackendOp::kMoe) {
        // The router and the experts a token uses (every expert is the same size): the first
        // gate, up and down matrices stand for any.
        const size_t n_expert = p.op.moe.n_expert;
        bytes += matrix_bytes(p.matrices[0]);
        for (size_t role = 0; role < 3; ++role) {
          bytes += p.op.moe.n_used * matrix_bytes(p.matrices[1 + role * n_expert]);
        }
      }
    }
  }
  return bytes;
}

Status DecoderModel::ensure_buffers(size_t n_rows, size_t n_out) {
  const bool rows_grow = n_rows > rows_capacity_;
  const bool out_grow = n_out > out_capacity_;
  if (!rows_grow && !out_grow) return ok_status();
  // At least twice the old capacity, and only the buffers of the row space that grew: a
  // service's steps vary in rows (a prefill chunk beside the sequences decoding) and in output
  // rows, and growing to each new maximum exactly, every buffer at once, made them all again in
  // fresh memory -- zeroed at its first touch -- step after step (serve_bench at 8 streams: 128,
  // 129, 130, 132, 134 rows within one round). The output-row values are n_embd wide.
  const size_t rows_capacity = rows_grow ? std::max(n_rows, 2 * rows_capacity_) : rows_capacity_;
  const size_t out_capacity = out_grow ? std::max(n_out, 2 * out_capacity_) : out_capacity_;
  // Until every grown buffer is made, the grown spaces hold nothing: a failed allocation leaves
  // them to be made again by the next call rather than half made.
  if (rows_grow) rows_capacity_ = 0;
  if (out_grow) out_capacity_ = 0;
  buffers_.resize(ir_.values.size());
  values_.resize(ir_.values.size(), nullptr);
  for (IrValueId v = 0; v < ir_.values.size(); ++v) {
    if (v == ir_.logits) continue;  // the caller's buffer
    const bool output_rows = ir_.values[v].rows == RowSpace::kOutput;
    if (!(output_rows ? out_grow : rows_grow)) continue;
    const size_t rows = output_rows ? out_capacity : rows_capacity;
    buffers_[v] = BackendBuffer();  // the old one goes first: the two need not fit together
    values_[v] = nullptr;
    SYN_ASSIGN_OR_RETURN(buffers_[v],
                         backend_.allocate(std::max<size_t>(rows, 1) * ir_.width(v) * 4));
    values_[v] = buffers_[v].floats();
  }
  rows_capacity_ = rows_capacity;
  out_capacity_ = out_capacity;
  if (rows_grow) {
    positions_.resize(rows_capacity_);
    position_ids_.resize(rows_capacity_);
    zero_types_.assign(rows_capacity_, 0);
  }
  return ok_status();
}

Status DecoderModel::ensure_scratch(size_t bytes) {
  if (bytes <= scratch_.size()) return ok_status();
  // Twice the old size at least, as ensure_buffers: the matrix products' scratch follows the rows.
  SYN_ASSIGN_OR_RETURN(scratch_, backend_.allocate(std::max(bytes, 2 * scratch_.size())));
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
  if (!b.token_types.empty()) {
    if (b.token_types.size() != b.tokens.size()) {
      return bad("token_types", "token types and tokens differ in length");
    }
    for (size_t i = 0; i < b.token_types.size(); ++i) {
      if (b.token_types[i] < 0 || static_cast<uint32_t>(b.token_types[i]) >= ir_.hp.n_token_types) {
        return bad("token_types", "token type " + std::to_string(b.token_types[i]) + " at row " +
                                      std::to_string(i) + " is outside 0.." +
                                      std::to_string(ir_.hp.n_token_types - 1));
      }
    }
  }
  if (!b.output_rows.empty() && !ir_.has_logits) {
    return Status(ErrorCode::kUnsupported,
                  "the model has no output head: it answers hidden states (embeddings) only",
                  ErrorWhere{.field = "output_rows"});
  }
  size_t next_row = 0;
  for (const ForwardSequence& s : b.sequences) {
    if (s.first_row != next_row || s.layers == nullptr) {
      return bad("sequences", "sequences must cover the rows in order");
    }
    if (ir_.bidirectional && s.n_past != 0) {
      return bad("sequences",
                 "a bidirectional model runs each sequence whole in one pass, from position 0");
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

DecoderModel::HeadInput DecoderModel::take_hidden_rows(const ForwardBatch& b) {
  const HeadInput final{value(ir_.final_hidden), ir_.width(ir_.final_hidden)};
  if (b.hidden_rows.empty()) return final;
  backend_.copy_rows(final.x, final.stride, hidden_positions_, ir_.hp.n_embd, b.hidden,
                     ir_.hp.n_embd);
  if (logits_positions_.empty() || logits_positions_.size() == selected_rows_.size()) {
    return final;
  }
  // Some selected rows want no logits: gather the others into the head's scratch value (free by
  // now), so that the head computes only those rows.
  float* compact = value(ir_.head_scratch);
  const size_t compact_stride = ir_.width(ir_.head_scratch);
  backend_.copy_rows(final.x, final.stride, logits_positions_, ir_.hp.n_embd, compact,
                     compact_stride);
  return HeadInput{compact, compact_stride};
}

const int32_t* DecoderModel::embed_ids(const ForwardBatch& b, EmbedSource source) const {
  switch (source) {
    case EmbedSource::kPositions:
      return position_ids_.data();
    case EmbedSource::kTokenTypes:
      return b.token_types.empty() ? zero_types_.data() : b.token_types.data();
    case EmbedSource::kTokens:
      break;
  }
  return b.tokens.data();
}

Status DecoderModel::forward(const ForwardBatch& b) {
  SYN_RETURN_IF_ERROR(validate(b));
  const size_t n = b.tokens.size();
  if (n == 0) return ok_status();
  const std::span<const uint32_t> selected = select_rows(b);
  const size_t n_out = selected.size();
  SYN_RETURN_IF_ERROR(ensure_buffers(n, n_out));
  values_[ir_.logits] = b.logits;
  for (const ForwardSequence& s : b.sequences) {
    for (size_t i = 0; i < s.n_rows; ++i) {
      positions_[s.first_row + i] = static_cast<int64_t>(s.n_past + i);
      position_ids_[s.first_row + i] = static_cast<int32_t>(s.n_past + i);
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

  // Where the ops on the logits rows read the final hidden state (set at the first of them).
  std::optional<HeadInput> head_input;
  for (const PlanRegion& region : plan_.regions) {
    for (const PlanOp& p : region.ops) {
      const IrOp& op = p.op;
      const size_t rows = op.rows == RowSpace::kTokens   ? n
                          : op.rows == RowSpace::kOutput ? n_out
                                                         : b.output_rows.size();
      if (op.rows == RowSpace::kLogits && !head_input && n_out != 0) {
        head_input = take_hidden_rows(b);
      }
      if (rows == 0) continue;
      const bool head =
          op.rows == RowSpace::kLogits && op.input.value == ir_.final_hidden && op.input.width != 0;
      switch (op.kind) {
        case BackendOp::kEmbed:
          backend_.embed(p.matrices[0], embed_ids(b, op.embed_source), n, ptr(op.output),
                         stride(op.output));
          break;
        case BackendOp::kLayerNorm:
          backend_.layer_norm(ptr(op.input), stride(op.input), rows, op.input.width, p.vector,
                              p.vector2, op.eps, ptr(op.output), stride(op.output));
          break;
        case BackendOp::kGelu:
          backend_.gelu(ptr(op.output), stride(op.output), rows, op.output.width, op.gelu);
          break;
        case BackendOp::kRmsNorm:
          backend_.rms_norm(ptr(op.input), stride(op.input), rows, op.n_segments,
                            op.input.width / op.n_segments, p.vector, op.eps, ptr(op.output),
                            stride(op.output));
          break;
        case BackendOp::kMatmul: {
          std::array<MatmulOutput, kMaxMatmulGroup> outputs{};
          float* y = ptr(op.output);
          for (size_t i = 0; i < p.matrices.size(); ++i) {
            outputs[i] = MatmulOutput{p.matrices[i], y, stride(op.output)};
            y += p.matrices[i].n_rows;
          }
          SYN_RETURN_IF_ERROR(
              ensure_scratch(backend_.matmul_scratch_bytes(p.matrices, rows, mode)));
          backend_.matmul(
              std::span(outputs.data(), p.matrices.size()), head ? head_input->x : ptr(op.input),
              head ? head_input->stride : stride(op.input), rows, scratch_.span(), mode);
          break;
        }
        case BackendOp::kMoe: {
          const std::span<const WeightMatrix> m(p.matrices);
          const size_t n_expert = op.moe.n_expert;
          const MoeWeights w{m[0],
                             m.subspan(1, n_expert),
                             m.subspan(1 + n_expert, n_expert),
                             m.subspan(1 + 2 * n_expert, n_expert),
                             op.moe.n_used,
                             op.moe.normalize};
          SYN_RETURN_IF_ERROR(ensure_scratch(backend_.moe_scratch_bytes(w, rows, mode)));
          backend_.moe(w, ptr(op.input), stride(op.input), rows, ptr(op.output), stride(op.output),
                       scratch_.span(), mode);
          break;
        }
        case BackendOp::kAddBias:
          backend_.add_bias(ptr(op.output), stride(op.output), rows, p.vector, op.output.width);
          break;
        case BackendOp::kRope: {
          RopeParams params = op.rope;
          params.freq_factors = p.vector;
          backend_.rope(ptr(op.input), stride(op.input), rows, op.n_heads, op.head_dim,
                        positions_.data(), params);
          break;
        }
        case BackendOp::kKvStore: {
          set_layer(op.layer);
          const float* k = ptr(op.input);
          const size_t half = op.input.width / 2;
          backend_.kv_store(k, k + half, stride(op.input), half, sequence_rows_, kv);
          break;
        }
        case BackendOp::kShortConv:
          set_layer(op.layer);
          backend_.short_conv(sequence_rows_, kv, p.vector, op.conv_kernel, op.output.width,
                              ptr(op.output), stride(op.output));
          break;
        case BackendOp::kMul:
          backend_.mul(ptr(op.input), stride(op.input), ptr(op.input2), stride(op.input2), rows,
                       op.output.width, ptr(op.output), stride(op.output));
          break;
        case BackendOp::kAttention: {
          set_layer(op.layer);
          const AttentionParams params{op.n_heads, op.n_kv_heads, op.head_dim, op.attention_scale,
                                       op.softcap, op.window,     op.causal};
          backend_.attention(ptr(op.input), stride(op.input), positions_.data(), ptr(op.output),
                             stride(op.output), sequence_rows_, kv, params);
          break;
        }
        case BackendOp::kSwiGlu:
        case BackendOp::kGeGlu: {
          const float* gate = ptr(op.input);
          const auto act = op.kind == BackendOp::kSwiGlu ? &Backend::swiglu : &Backend::geglu;
          (backend_.*act)(gate, gate + op.output.width, stride(op.input), rows, op.output.width,
                          ptr(op.output), stride(op.output));
          break;
        }
        case BackendOp::kScale:
          backend_.scale(ptr(op.output), stride(op.output), rows, op.output.width, op.scale);
          break;
        case BackendOp::kSoftcap:
          backend_.softcap(ptr(op.output), stride(op.output), rows, op.output.width, op.softcap);
          break;
        case BackendOp::kAdd:
          backend_.add(ptr(op.input), stride(op.input), rows, op.input.width, ptr(op.output),
                       stride(op.output));
          break;
        case BackendOp::kCopyRows:
          backend_.copy_rows(ptr(op.input), stride(op.input), selected, op.input.width,
                             ptr(op.output), stride(op.output));
          break;
      }
    }
  }
  // A model without ops on the logits rows (an embedding encoder) still answers hidden rows.
  if (!head_input && n_out != 0) take_hidden_rows(b);
  backend_.sync();
  return ok_status();
}

}  // namespace synapse
