// SPDX-License-Identifier: Apache-2.0
#include "model/hparams.h"

namespace synapse {

std::string_view rope_layout_name(RopeLayout layout) {
  switch (layout) {
    case RopeLayout::kNone:
      return "none";
    case RopeLayout::kAdjacentPairs:
      return "adjacent-pairs";
    case RopeLayout::kNeoX:
      return "neox";
  }
  return "unknown";
}

std::optional<PoolingType> pooling_type_from_name(std::string_view name) {
  for (const PoolingType p : {PoolingType::kNone, PoolingType::kMean, PoolingType::kCls,
                              PoolingType::kLast, PoolingType::kRank}) {
    if (pooling_type_name(p) == name) return p;
  }
  return std::nullopt;
}

std::string_view rope_scaling_name(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone:
      return "none";
    case RopeScaling::kLinear:
      return "linear";
    case RopeScaling::kYarn:
      return "yarn";
  }
  return "unknown";
}

std::string_view pooling_type_name(PoolingType pooling) {
  switch (pooling) {
    case PoolingType::kNone:
      return "none";
    case PoolingType::kMean:
      return "mean";
    case PoolingType::kCls:
      return "cls";
    case PoolingType::kLast:
      return "last";
    case PoolingType::kRank:
      return "rank";
  }
  return "unknown";
}

}  // namespace synapse
