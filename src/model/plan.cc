// SPDX-License-Identifier: Apache-2.0
#include "model/plan.h"

#include <cstring>
#include <sstream>

#include "tensor/quant.h"
#include "tensor/quant_common.h"

namespace synapse {
namespace {

std::string where(const IrRegion& region, const IrOp& op) {
  return region.name() + " / " + std::string(backend_op_name(op.kind)) + " '" + op.label + "'";
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t elements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

bool vector_type_ok(TensorType t) {
  return t == TensorType::kF32 || t == TensorType::kF16 || t == TensorType::kBF16;
}

// Taps of a short convolution (LFM2 has 3); a bound keeps a hostile file's op cheap.
constexpr uint32_t kMaxConvKernel = 64;

Status geometry_error(const std::string& key, const std::string& message) {
  return Status(ErrorCode::kBadValue, "model geometry: " + message, ErrorWhere{.key = key});
}

Status verify_geometry(const ModelIr& ir) {
  const HParams& hp = ir.hp;
  if (hp.n_layer == 0) return geometry_error("block_count", "no blocks");
  if (hp.n_head == 0 || hp.n_head_kv == 0) {
    return geometry_error("attention.head_count", "zero attention heads");
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return geometry_error("attention.head_count_kv",
                          std::to_string(hp.n_head_kv) + " KV heads do not divide " +
                              std::to_string(hp.n_head) + " query heads");
  }
  if (!hp.head_dim_explicit && hp.n_embd % hp.n_head != 0) {
    return geometry_error("attention.head_count", std::to_string(hp.n_head) +
                                                      " heads do not divide the embedding " +
                                                      std::to_string(hp.n_embd));
  }
  if (hp.head_dim_k == 0 || hp.head_dim_k != hp.head_dim_v) {
    return geometry_error("attention.value_length",
                          "key length " + std::to_string(hp.head_dim_k) + " and value length " +
                              std::to_string(hp.head_dim_v) + " must be equal and non-zero");
  }
  if (hp.rope_layout != RopeLayout::kNone && (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim_k)) {
    return geometry_error("rope.dimension_count", "rotary dimensions " + std::to_string(hp.n_rot) +
                                                      " must be even and at most the head size " +
                                                      std::to_string(hp.head_dim_k));
  }
  if (hp.rope_layout != RopeLayout::kNone && !(hp.rope_freq_base > 0.0f)) {
    return geometry_error("rope.freq_base", "must be positive");
  }
  if (hp.rope_scaling != RopeScaling::kNone && !(hp.rope_scaling_factor > 0.0f)) {
    return geometry_error("rope.scaling.factor", "must be positive");
  }
  if (ir.n_ctx == 0) return geometry_error("context_length", "context of zero tokens");
  if (hp.n_ctx_train != 0 && ir.n_ctx > hp.n_ctx_train) {
    return geometry_error("context_length", "context " + std::to_string(ir.n_ctx) +
                                                " exceeds the model's " +
                                                std::to_string(hp.n_ctx_train) + " tokens");
  }
  return ok_status();
}

Status verify_slice(const ModelIr& ir, const IrRegion& region, const IrOp& op, IrSlice s) {
  if (s.width == 0 && op.kind != BackendOp::kEmbed) return ok_status();
  if (s.value >= ir.values.size()) {
    return Status(ErrorCode::kBadShape,
                  where(region, op) + ": reads or writes an undeclared value");
  }
  if (uint64_t{s.offset} + s.width > ir.width(s.value)) {
    return Status(ErrorCode::kBadShape,
                  where(region, op) + ": columns [" + std::to_string(s.offset) + ", " +
                      std::to_string(s.offset + s.width) + ") outside " + ir.value_name(s.value) +
                      " of width " + std::to_string(ir.width(s.value)));
  }
  return ok_status();
}

// The expert tensors of a kMoe op: [router, gate_exps, up_exps, down_exps] with shapes
// [in, n_expert], [in, n_ff, n_expert] twice and [n_ff, out, n_expert].
Status verify_moe(const ModelIr& ir, const IrRegion& region, const IrOp& op, const Backend& be) {
  const IrMoe& m = op.moe;
  const auto bad = [&](const std::string& message, const std::string& tensor) {
    return Status(ErrorCode::kBadShape, where(region, op) + ": " + message,
                  ErrorWhere{.tensor = tensor});
  };
  if (op.weights.size() != 4) return bad("expects a router and three expert tensors", "");
  if (m.n_expert == 0 || m.n_expert > kMaxMoeExperts || m.n_used == 0 || m.n_used > m.n_expert) {
    return Status(ErrorCode::kBadValue,
                  where(region, op) + ": " + std::to_string(m.n_used) + " of " +
                      std::to_string(m.n_expert) + " experts (at most " +
                      std::to_string(kMaxMoeExperts) + ")",
                  ErrorWhere{.key = ir.hp.arch + ".expert_used_count"});
  }
  const uint64_t in = op.input.width, out = op.output.width;
  const std::vector<uint64_t> expected[4] = {{in, m.n_expert},
                                             {in, m.n_ff, m.n_expert},
                                             {in, m.n_ff, m.n_expert},
                                             {m.n_ff, out, m.n_expert}};
  for (size_t i = 0; i < 4; ++i) {
    const IrWeight& w = op.weights[i];
    if (w.shape != expected[i]) {
      return bad("tensor '" + w.name + "' has shape " + shape_text(w.shape) + ", expected " +
                     shape_text(expected[i]),
                 w.name);
    }
    const BackendOp needs = i == 0 ? BackendOp::kMatmul : BackendOp::kMoe;
    if (!be.supports(needs, w.type) || w.shape[0] % block_elements(w.type) != 0) {
      return Status(ErrorCode::kUnsupported,
                    where(region, op) + ": backend " + std::string(be.name()) + " cannot run " +
                        std::string(backend_op_name(needs)) + " on " +
                        std::string(tensor_type_name(w.type)) + " (tensor '" + w.name + "')",
                    ErrorWhere{.tensor = w.name});
    }
  }
  return ok_status();
}

Status verify_op(const ModelIr& ir, const IrRegion& region, const IrOp& op, const Backend& be) {
  SYN_RETURN_IF_ERROR(verify_slice(ir, region, op, op.input));
  SYN_RETURN_IF_ERROR(verify_slice(ir, region, op, op.input2));
  SYN_RETURN_IF_ERROR(verify_slice(ir, region, op, op.output));
  for (const IrWeight& w : op.weights) {
    if (w.view == nullptr) {
      return Status(ErrorCode::kMissingTensor,
                    where(region, op) + ": tensor '" + w.name + "' is missing from the file",
                    ErrorWhere{.tensor = w.name});
    }
  }
  const auto bad_shape = [&](const IrWeight& w, const std::string& expected) {
    return Status(ErrorCode::kBadShape,
                  where(region, op) + ": tensor '" + w.name + "' has shape " + shape_text(w.shape) +
                      ", expected " + expected,
                  ErrorWhere{.tensor = w.name});
  };
  const auto unsupported = [&](BackendOp bop, TensorType type, const std::string& tensor) {
    return Status(ErrorCode::kUnsupported,
                  where(region, op) + ": backend " + std::string(be.name()) + " cannot run " +
                      std::string(backend_op_name(bop)) + " on " +
                      std::string(tensor_type_name(type)) +
                      (tensor.empty() ? "" : " (tensor '" + tensor + "')"),
                  ErrorWhere{.tensor = tensor});
  };
  const BackendOp bop = op.kind;
  switch (op.kind) {
    case BackendOp::kMoe:
      return verify_moe(ir, region, op, be);
    case BackendOp::kEmbed: {
      const IrWeight& w = op.weights.at(0);
      // Rows the ids can reach: the vocabulary, the token types, or every position of the
      // context (a table may be longer than the context it is run with).
      const uint64_t rows = op.embed_source == EmbedSource::kTokens       ? ir.hp.n_vocab
                            : op.embed_source == EmbedSource::kTokenTypes ? ir.hp.n_token_types
                                                                          : ir.n_ctx;
      const bool rows_ok =
          w.shape.size() == 2 &&
          (op.embed_source == EmbedSource::kPositions ? w.shape[1] >= rows : w.shape[1] == rows);
      if (!rows_ok || w.shape[0] != op.output.width) {
        return bad_shape(w, "[" + std::to_string(op.output.width) + ", " + std::to_string(rows) +
                                (op.embed_source == EmbedSource::kPositions ? "+" : "") + "]");
      }
      if (!be.supports(bop, w.type)) return unsupported(bop, w.type, w.name);
      return ok_status();
    }
    case BackendOp::kMatmul: {
      uint64_t rows = 0;
      for (const IrWeight& w : op.weights) {
        if (w.shape.size() != 2 || w.shape[0] != op.input.width) {
          return bad_shape(w, "[" + std::to_string(op.input.width) + ", *]");
        }
        if (!be.supports(bop, w.type)) return unsupported(bop, w.type, w.name);
        if (w.shape[0] % block_elements(w.type) != 0) {
          return bad_shape(w, "rows a multiple of " + std::to_string(block_elements(w.type)));
        }
        rows += w.shape[1];
      }
      if (rows != op.output.width || op.weights.size() > kMaxMatmulGroup) {
        return Status(ErrorCode::kBadShape, where(region, op) + ": matrices give " +
                                                std::to_string(rows) + " outputs, expected " +
                                                std::to_string(op.output.width));
      }
      return ok_status();
    }
    case BackendOp::kRmsNorm:
    case BackendOp::kLayerNorm:
    case BackendOp::kAddBias:
    case BackendOp::kRope: {
      uint64_t expected = 0;
      if (op.kind == BackendOp::kLayerNorm) {
        if (op.weights.empty() || op.weights.size() > 2 || op.input.width != op.output.width) {
          return Status(ErrorCode::kBadShape,
                        where(region, op) + ": a layer norm takes a scale and an optional bias");
        }
        expected = op.input.width;
      } else if (op.kind == BackendOp::kRmsNorm) {
        if (op.n_segments == 0 || op.input.width % op.n_segments != 0) {
          return Status(ErrorCode::kBadShape, where(region, op) + ": bad segment count");
        }
        expected = op.input.width / op.n_segments;
      } else if (op.kind == BackendOp::kAddBias) {
        expected = op.output.width;
      } else {
        expected = ir.hp.n_rot / 2;
      }
      for (const IrWeight& w : op.weights) {
        if (elements(w.shape) != expected) {
          return bad_shape(w, "[" + std::to_string(expected) + "]");
        }
        if (!vector_type_ok(w.type)) return unsupported(bop, w.type, w.name);
      }
      if (!be.supports(bop, TensorType::kF32)) return unsupported(bop, TensorType::kF32, "");
      return ok_status();
    }
    case BackendOp::kKvStore:
      if (op.input.width % 2 != 0 || op.input.width / 2 > ir.kv_row_elements) {
        return Status(ErrorCode::kBadShape,
                      where(region, op) + ": k | v of odd or too large width");
      }
      if (!be.supports(bop, ir.kv_type)) return unsupported(bop, ir.kv_type, "");
      if (is_block_kv_type(ir.kv_type) && (ir.hp.head_dim_k % kQuantBlockElements != 0 ||
                                           ir.kv_row_elements % kQuantBlockElements != 0)) {
        return Status(ErrorCode::kUnsupported,
                      where(region, op) + ": a " + std::string(tensor_type_name(ir.kv_type)) +
                          " KV cache stores each head as blocks of 32 values; this model's "
                          "heads have " +
                          std::to_string(ir.hp.head_dim_k) + " (use an f16 or f32 cache)");
      }
      return ok_status();
    case BackendOp::kAttention:
      if (!be.supports(bop, ir.kv_type)) return unsupported(bop, ir.kv_type, "");
      return ok_status();
    case BackendOp::kShortConv: {
      const IrWeight& w = op.weights.at(0);
      const std::vector<uint64_t> expected = {op.conv_kernel, op.output.width};
      if (op.conv_kernel == 0 || op.conv_kernel > kMaxConvKernel || w.shape != expected) {
        return bad_shape(
            w, shape_text(expected) + " with 1.." + std::to_string(kMaxConvKernel) + " taps");
      }
      if (op.output.width % 2 != 0 || op.output.width / 2 > ir.kv_row_elements) {
        return Status(ErrorCode::kBadShape, where(region, op) + ": convolution width " +
                                                std::to_string(op.output.width) +
                                                " does not fit the KV pages");
      }
      if (!vector_type_ok(w.type)) return unsupported(bop, w.type, w.name);
      if (!be.supports(bop, ir.kv_type)) return unsupported(bop, ir.kv_type, "");
      return ok_status();
    }
    case BackendOp::kMul:
      if (op.input.width != op.output.width || op.input2.width != op.output.width) {
        return Status(ErrorCode::kBadShape, where(region, op) + ": factors of different widths");
      }
      if (!be.supports(bop, TensorType::kF32)) return unsupported(bop, TensorType::kF32, "");
      return ok_status();
    case BackendOp::kSoftcap:
      if (!(op.softcap > 0.0f)) {
        return Status(ErrorCode::kBadValue, where(region, op) + ": soft-cap must be positive");
      }
      if (!be.supports(bop, TensorType::kF32)) return unsupported(bop, TensorType::kF32, "");
      return ok_status();
    default:
      if (!be.supports(bop, TensorType::kF32)) return unsupported(bop, TensorType::kF32, "");
      return ok_status();
  }
}

// A 2-D weight (or, for an expert tensor, `rows` rows of it from byte `first`) as the backend
// reads it. When the backend keeps a copy (the CPU's rearranged rows, a device's upload), the
// file's pages of those bytes are released at once: they are not read again, and would
// otherwise stay resident beside the copy (a 1 GB F16 model interleaved on AVX-512 held 2 GB).
Result<WeightMatrix> matrix_of(const TensorView& v, Backend& backend, const MappedFile* source,
                               size_t first = 0, size_t rows = 0) {
  const size_t stride = row_bytes(v.type, v.dims[0]);
  if (rows == 0) rows = static_cast<size_t>(v.rows());
  const std::span<const uint8_t> bytes = v.data.subspan(first, rows * stride);
  SYN_ASSIGN_OR_RETURN(
      const WeightMatrix m,
      backend.prepare_matrix(v.type, bytes.data(), stride, rows, static_cast<size_t>(v.dims[0])));
  if (source != nullptr && m.data != bytes.data()) source->release_pages_within(bytes);
  return m;
}

// The router, then every expert's gate, every expert's up and every expert's down matrix:
// slice e of each 3-D tensor (ne[2] = expert), so the backend takes each role as one span.
Status lower_moe(const IrOp& op, Backend& backend, const MappedFile* source, PlanOp& p) {
  SYN_ASSIGN_OR_RETURN(const WeightMatrix router, matrix_of(*op.weights[0].view, backend, source));
  p.matrices.push_back(router);
  for (size_t i = 1; i < 4; ++i) {
    const TensorView& v = *op.weights[i].view;
    const size_t rows = static_cast<size_t>(v.dims[1]);
    const size_t stride = row_bytes(v.type, v.dims[0]);
    for (uint32_t e = 0; e < op.moe.n_expert; ++e) {
      SYN_ASSIGN_OR_RETURN(const WeightMatrix m,
                           matrix_of(v, backend, source, e * rows * stride, rows));
      p.matrices.push_back(m);
    }
  }
  return ok_status();
}

}  // namespace

Status verify_ir(const ModelIr& ir, const Backend& backend, MatmulMode /*mode*/) {
  SYN_RETURN_IF_ERROR(verify_geometry(ir));
  for (const IrRegion& region : ir.regions) {
    for (const IrOp& op : region.ops) SYN_RETURN_IF_ERROR(verify_op(ir, region, op, backend));
  }
  return ok_status();
}

Result<ExecutionPlan> lower_ir(const ModelIr& ir, Backend& backend, MatmulMode mode,
                               const MappedFile* source) {
  SYN_RETURN_IF_ERROR(verify_ir(ir, backend, mode));
  ExecutionPlan plan;
  plan.matmul_mode = mode;
  plan.backend_name = std::string(backend.name());
  for (const IrRegion& region : ir.regions) {
    PlanRegion pr;
    pr.name = region.name();
    for (const IrOp& op : region.ops) {
      PlanOp p;
      p.op = op;
      TensorType type = TensorType::kF32;
      if (op.kind == BackendOp::kMoe) {
        SYN_RETURN_IF_ERROR(lower_moe(op, backend, source, p));
        type = op.weights[1].type;
      } else if (op.kind == BackendOp::kEmbed || op.kind == BackendOp::kMatmul) {
        for (const IrWeight& w : op.weights) {
          SYN_ASSIGN_OR_RETURN(const WeightMatrix m, matrix_of(*w.view, backend, source));
          p.matrices.push_back(m);
        }
        type = op.weights.front().type;
      } else {
        // Vector weights (norm scale and bias, bias, RoPE factors), as F32 in the backend.
        for (size_t i = 0; i < op.weights.size() && i < 2; ++i) {
          const TensorView& v = *op.weights[i].view;
          SYN_ASSIGN_OR_RETURN(const float* f,
                               backend.prepare_vector(v.type, v.data.data(),
                                                      static_cast<size_t>(v.element_count())));
          (i == 0 ? p.vector : p.vector2) = f;
        }
      }
      if (op.kind == BackendOp::kKvStore || op.kind == BackendOp::kAttention ||
          op.kind == BackendOp::kShortConv) {
        type = ir.kv_type;
      }
      p.kernel = backend.kernel_name(op.kind, type, mode);
      if (op.kind == BackendOp::kMoe && op.weights[3].type != type) {
        p.kernel += "; " + backend.kernel_name(op.kind, op.weights[3].type, mode);
      }
      if (op.kind == BackendOp::kMatmul && op.weights.size() > 1) {
        // Mixed types in one group (Q4_K_M mixes): name each matrix's kernel.
        for (size_t i = 1; i < op.weights.size(); ++i) {
          if (op.weights[i].type != type) {
            p.kernel += "; " + backend.kernel_name(op.kind, op.weights[i].type, mode);
          }
        }
      }
      pr.ops.push_back(std::move(p));
    }
    plan.regions.push_back(std::move(pr));
  }
  return plan;
}

std::string format_plan(const ModelIr& ir, const ExecutionPlan& plan) {
  std::ostringstream out;
  const HParams& hp = ir.hp;
  out << "model IR: " << hp.arch << ", " << hp.n_layer << " blocks, embedding " << hp.n_embd << ", "
      << hp.n_head << " heads / " << hp.n_head_kv << " KV heads of " << hp.head_dim_k
      << ", feed-forward " << hp.n_ff << ", vocabulary " << hp.n_vocab << "\n";
  out << "context " << ir.n_ctx << " tokens, KV cache " << tensor_type_name(ir.kv_type)
      << ", backend " << plan.backend_name << ", matmul activations "
      << (plan.matmul_mode.path == DotPath::kF32 ? "F32" : "quantized") << "\n";
  const auto slice = [&](IrSlice s) {
    std::string t = ir.value_name(s.value);
    if (s.offset != 0 || s.width != ir.width(s.value)) {
      t += "[" + std::to_string(s.offset) + ":" + std::to_string(s.offset + s.width) + "]";
    }
    return t;
  };
  for (const PlanRegion& r : plan.regions) {
    out << r.name << "\n";
    for (const PlanOp& p : r.ops) {
      const IrOp& op = p.op;
      out << "  " << backend_op_name(op.kind) << " '" << op.label << "'";
      if (op.rows == RowSpace::kOutput) out << " (output rows)";
      if (op.rows == RowSpace::kLogits) out << " (logits rows)";
      out << ": ";
      if (op.input.width != 0) out << slice(op.input) << " -> ";
      out << (op.kind == BackendOp::kKvStore
                  ? std::string("cache layer ") + std::to_string(op.layer)
                  : slice(op.output));
      for (const IrWeight& w : op.weights) {
        out << "; " << w.name << " " << tensor_type_name(w.type) << " " << shape_text(w.shape);
      }
      out << "\n      kernel: " << p.kernel << "\n";
    }
  }
  return out.str();
}

}  // namespace synapse
