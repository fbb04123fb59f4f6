// SPDX-License-Identifier: Apache-2.0
#include "model/ir.h"

namespace synapse {

std::string_view ir_region_kind_name(IrRegionKind kind) {
  switch (kind) {
    case IrRegionKind::kEmbedding:
      return "token_embedding";
    case IrRegionKind::kAttention:
      return "attention";
    case IrRegionKind::kShortConv:
      return "short_conv";
    case IrRegionKind::kFeedForward:
      return "feed_forward";
    case IrRegionKind::kOutputHead:
      return "output_head";
  }
  return "?";
}

std::string IrRegion::name() const {
  if (block < 0) return std::string(ir_region_kind_name(kind));
  return "blk." + std::to_string(block) + "." + std::string(ir_region_kind_name(kind));
}

}  // namespace synapse
