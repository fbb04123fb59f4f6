// SPDX-License-Identifier: Apache-2.0
#include "backend/backend.h"

#include "tensor/quant.h"

namespace synapse {

std::string_view backend_op_name(BackendOp op) {
  switch (op) {
    case BackendOp::kEmbed:
      return "embed";
    case BackendOp::kRmsNorm:
      return "rms_norm";
    case BackendOp::kMatmul:
      return "matmul";
    case BackendOp::kAddBias:
      return "add_bias";
    case BackendOp::kRope:
      return "rope";
    case BackendOp::kKvStore:
      return "kv_store";
    case BackendOp::kAttention:
      return "attention";
    case BackendOp::kSwiGlu:
      return "swiglu";
    case BackendOp::kAdd:
      return "add";
    case BackendOp::kCopyRows:
      return "copy_rows";
    case BackendOp::kGeGlu:
      return "geglu";
    case BackendOp::kScale:
      return "scale";
    case BackendOp::kSoftcap:
      return "softcap";
    case BackendOp::kMoe:
      return "moe";
    case BackendOp::kMul:
      return "mul";
    case BackendOp::kShortConv:
      return "short_conv";
    case BackendOp::kLayerNorm:
      return "layer_norm";
    case BackendOp::kGelu:
      return "gelu";
  }
  return "unknown";
}

BackendBuffer& BackendBuffer::operator=(BackendBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    release_ = other.release_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.release_ = nullptr;
  }
  return *this;
}

void BackendBuffer::reset() {
  if (data_ != nullptr && release_ != nullptr) release_(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

size_t KvFormat::token_bytes() const { return row_bytes(type, token_elements()); }

bool is_block_kv_type(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
}

}  // namespace synapse
