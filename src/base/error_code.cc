// SPDX-License-Identifier: Apache-2.0
#include "base/error_code.h"

#include <array>

namespace synapse {
namespace {

constexpr Retry kP = Retry::kPermanent;
constexpr Retry kT = Retry::kTransient;

// HTTP: 400 for malformed input the client sent, 404 missing, 409 conflict, 422 for input that is
// well-formed but unusable (a model file the engine refuses), 429/503 for transient overload,
// 500 for our own faults, 501 for features this build lacks.
constexpr std::array kTable = {
    ErrorCodeInfo{ErrorCode::kOk, "ok", kP, 200, "success"},
    ErrorCodeInfo{ErrorCode::kInvalidArgument, "invalid_argument", kP, 400, "invalid argument"},
    ErrorCodeInfo{ErrorCode::kNotFound, "not_found", kP, 404, "not found"},
    ErrorCodeInfo{ErrorCode::kAlreadyExists, "already_exists", kP, 409, "already exists"},
    ErrorCodeInfo{ErrorCode::kIoError, "io_error", kT, 500, "input/output error"},
    ErrorCodeInfo{ErrorCode::kPermissionDenied, "permission_denied", kP, 403, "permission denied"},
    ErrorCodeInfo{ErrorCode::kUnsupported, "unsupported", kP, 501, "not supported by this build"},
    ErrorCodeInfo{ErrorCode::kInternal, "internal", kP, 500, "internal error"},
    ErrorCodeInfo{ErrorCode::kResourceExhausted, "resource_exhausted", kT, 429,
                  "resource exhausted"},
    ErrorCodeInfo{ErrorCode::kUnavailable, "unavailable", kT, 503, "temporarily unavailable"},
    ErrorCodeInfo{ErrorCode::kCancelled, "cancelled", kP, 499, "cancelled"},
    ErrorCodeInfo{ErrorCode::kDeadlineExceeded, "deadline_exceeded", kT, 504, "deadline exceeded"},
    ErrorCodeInfo{ErrorCode::kFileTruncated, "file_truncated", kP, 422, "file ends early"},
    ErrorCodeInfo{ErrorCode::kBadMagic, "bad_magic", kP, 422, "not a file of the expected format"},
    ErrorCodeInfo{ErrorCode::kUnsupportedVersion, "unsupported_version", kP, 422,
                  "format version not supported"},
    ErrorCodeInfo{ErrorCode::kLimitExceeded, "limit_exceeded", kP, 422,
                  "a count or length exceeds a safety limit"},
    ErrorCodeInfo{ErrorCode::kUnknownValueType, "unknown_value_type", kP, 422,
                  "unknown metadata value type"},
    ErrorCodeInfo{ErrorCode::kUnknownTensorType, "unknown_tensor_type", kP, 422,
                  "unknown tensor type"},
    ErrorCodeInfo{ErrorCode::kDuplicateKey, "duplicate_key", kP, 422, "duplicate metadata key"},
    ErrorCodeInfo{ErrorCode::kDuplicateTensor, "duplicate_tensor", kP, 422,
                  "duplicate tensor name"},
    ErrorCodeInfo{ErrorCode::kInvalidUtf8, "invalid_utf8", kP, 422, "text is not valid UTF-8"},
    ErrorCodeInfo{ErrorCode::kBadShape, "bad_shape", kP, 422, "invalid tensor shape"},
    ErrorCodeInfo{ErrorCode::kBadAlignment, "bad_alignment", kP, 422, "invalid alignment"},
    ErrorCodeInfo{ErrorCode::kTensorOutOfRange, "tensor_out_of_range", kP, 422,
                  "tensor data lies outside the data section"},
    ErrorCodeInfo{ErrorCode::kTensorOverlap, "tensor_overlap", kP, 422,
                  "tensor data ranges overlap"},
    ErrorCodeInfo{ErrorCode::kSizeMismatch, "size_mismatch", kP, 422, "size does not match"},
    ErrorCodeInfo{ErrorCode::kTypeMismatch, "type_mismatch", kP, 422, "value has the wrong type"},
    ErrorCodeInfo{ErrorCode::kMissingKey, "missing_key", kP, 422, "required metadata key missing"},
    ErrorCodeInfo{ErrorCode::kBadValue, "bad_value", kP, 422, "metadata value out of range"},
    ErrorCodeInfo{ErrorCode::kChecksumMismatch, "checksum_mismatch", kP, 422,
                  "checksum does not match"},
    ErrorCodeInfo{ErrorCode::kUnknownArchitecture, "unknown_architecture", kP, 422,
                  "model architecture not supported"},
    ErrorCodeInfo{ErrorCode::kMissingTensor, "missing_tensor", kP, 422, "required tensor missing"},
    ErrorCodeInfo{ErrorCode::kKernelMismatch, "kernel_mismatch", kP, 500,
                  "a kernel disagrees with its reference"},
    ErrorCodeInfo{ErrorCode::kNumericFault, "numeric_fault", kP, 500,
                  "a computation produced NaN or infinity"},
    ErrorCodeInfo{ErrorCode::kQueueFull, "queue_full", kT, 429,
                  "the request queue is full; retry after the suggested delay"},
};

}  // namespace

std::span<const ErrorCodeInfo> error_code_table() { return kTable; }

const ErrorCodeInfo& error_code_info(ErrorCode code) {
  for (const ErrorCodeInfo& info : kTable) {
    if (info.code == code) return info;
  }
  for (const ErrorCodeInfo& info : kTable) {
    if (info.code == ErrorCode::kInternal) return info;
  }
  return kTable[0];  // unreachable: kInternal is in the table
}

std::string_view error_code_name(ErrorCode code) { return error_code_info(code).name; }

std::optional<ErrorCode> error_code_from_name(std::string_view name) {
  for (const ErrorCodeInfo& info : kTable) {
    if (info.name == name) return info.code;
  }
  return std::nullopt;
}

}  // namespace synapse
