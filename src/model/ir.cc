// SPDX-License-Identifier: Apache-2.0
#include "model/ir.h"

namespace synapse {

std::string_view ir_value_name(IrValue value) {
  switch (value) {
    case IrValue::kHidden: return "hidden";
    case IrValue::kNormed: return "normed";
    case IrValue::kQkv: return "qkv";
    case IrValue::kAttention: return "attention";
    case IrValue::kGateUp: return "gate_up";
    case IrValue::kFfn: return "ffn";
    case IrValue::kOutHidden: return "out_hidden";
    case IrValue::kOutNormed: return "out_normed";
    case IrValue::kLogits: return "logits";
  }
  return "?";
}

std::string_view ir_op_name(IrOpKind kind) {
  switch (kind) {
    case IrOpKind::kEmbed: return "embed";
    case IrOpKind::kRmsNorm: return "rms_norm";
    case IrOpKind::kMatmul: return "matmul";
    case IrOpKind::kAddBias: return "add_bias";
    case IrOpKind::kRope: return "rope";
    case IrOpKind::kKvStore: return "kv_store";
    case IrOpKind::kAttention: return "attention";
    case IrOpKind::kSwiGlu: return "swiglu";
    case IrOpKind::kAddResidual: return "add";
    case IrOpKind::kSelectRows: return "select_rows";
  }
  return "?";
}

std::string_view ir_region_kind_name(IrRegionKind kind) {
  switch (kind) {
    case IrRegionKind::kEmbedding: return "token_embedding";
    case IrRegionKind::kAttention: return "attention";
    case IrRegionKind::kFeedForward: return "feed_forward";
    case IrRegionKind::kOutputHead: return "output_head";
  }
  return "?";
}

std::string IrRegion::name() const {
  if (block < 0) return std::string(ir_region_kind_name(kind));
  return "blk." + std::to_string(block) + "." + std::string(ir_region_kind_name(kind));
}

}  // namespace synapse
