// SPDX-License-Identifier: Apache-2.0
#include "base/error_code.h"

#include <array>

namespace synapse {
namespace {

constexpr Retry kP = Retry::kPermanent;
constexpr Retry kT = Retry::kTransient;

// Default retry delays of transient codes: overload clears within a second or so; storage and
// the hub wait on someone else (freeing disk, a server coming back), so clients back off longer.
constexpr uint32_t kRetrySoonMs = 1000;
constexpr uint32_t kRetryLaterMs = 30000;

// HTTP: 400 for malformed input the client sent, 404 missing, 409 conflict, 422 for input that is
// well-formed but unusable (a model file the engine refuses), 429/503 for transient overload,
// 500 for our own faults, 501 for features this build lacks; 401 for a missing or wrong API key,
// 413 for a body over the size limit.
constexpr std::array kTable = {
    ErrorCodeInfo{ErrorCode::kOk, "ok", kP, 200, "success"},
    ErrorCodeInfo{ErrorCode::kInvalidArgument, "invalid_argument", kP, 400, "invalid argument"},
    ErrorCodeInfo{ErrorCode::kNotFound, "not_found", kP, 404, "not found"},
    ErrorCodeInfo{ErrorCode::kAlreadyExists, "already_exists", kP, 409, "already exists"},
    ErrorCodeInfo{ErrorCode::kIoError, "io_error", kT, 500, "input/output error", kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kPermissionDenied, "permission_denied", kP, 403, "permission denied"},
    ErrorCodeInfo{ErrorCode::kUnsupported, "unsupported", kP, 501, "not supported by this build"},
    ErrorCodeInfo{ErrorCode::kInternal, "internal", kP, 500, "internal error"},
    ErrorCodeInfo{ErrorCode::kResourceExhausted, "resource_exhausted", kT, 429,
                  "resource exhausted", kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kUnavailable, "unavailable", kT, 503, "temporarily unavailable",
                  kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kCancelled, "cancelled", kP, 499, "cancelled"},
    ErrorCodeInfo{ErrorCode::kDeadlineExceeded, "deadline_exceeded", kT, 504, "deadline exceeded",
                  kRetrySoonMs},
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
    ErrorCodeInfo{ErrorCode::kInvalidJson, "invalid_json", kP, 400, "input is not valid JSON"},
    ErrorCodeInfo{ErrorCode::kMissingParameter, "missing_parameter", kP, 400,
                  "a required request parameter is missing"},
    ErrorCodeInfo{ErrorCode::kInvalidType, "invalid_type", kP, 400,
                  "a request parameter has the wrong JSON type"},
    ErrorCodeInfo{ErrorCode::kInvalidValue, "invalid_value", kP, 400,
                  "a request parameter is out of range or not an allowed value"},
    ErrorCodeInfo{ErrorCode::kUnsupportedParameter, "unsupported_parameter", kP, 400,
                  "a request parameter value this server does not support"},
    ErrorCodeInfo{ErrorCode::kModelNotFound, "model_not_found", kP, 404,
                  "no model of that name is served"},
    ErrorCodeInfo{ErrorCode::kContextLengthExceeded, "context_length_exceeded", kP, 400,
                  "the prompt does not fit the model's context"},
    ErrorCodeInfo{ErrorCode::kRequestTooLarge, "request_too_large", kP, 413,
                  "request body too large"},
    ErrorCodeInfo{ErrorCode::kInvalidApiKey, "invalid_api_key", kP, 401,
                  "missing or wrong API key"},
    ErrorCodeInfo{ErrorCode::kInvalidHttp, "invalid_http", kP, 400, "malformed HTTP request"},
    ErrorCodeInfo{ErrorCode::kRequestTimeout, "request_timeout", kT, 408,
                  "the request did not arrive in time", kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kHeadersTooLarge, "headers_too_large", kP, 431,
                  "request head too large"},
    ErrorCodeInfo{ErrorCode::kUriTooLong, "uri_too_long", kP, 414, "request line too long"},
    ErrorCodeInfo{ErrorCode::kTooManyConnections, "too_many_connections", kT, 429,
                  "too many open connections", kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kMethodNotAllowed, "method_not_allowed", kP, 405,
                  "the path does not take this method (see the Allow header)"},
    ErrorCodeInfo{ErrorCode::kTemplateSyntax, "template_syntax", kP, 422,
                  "the chat template does not parse"},
    ErrorCodeInfo{ErrorCode::kTemplateError, "template_error", kP, 422,
                  "the chat template failed while rendering"},
    ErrorCodeInfo{ErrorCode::kTemplateRaised, "template_raised", kP, 400,
                  "the chat template rejected the messages"},
    ErrorCodeInfo{ErrorCode::kNoChatTemplate, "no_chat_template", kP, 400,
                  "the model has no chat template and none was named"},
    ErrorCodeInfo{ErrorCode::kUnsupportedSchema, "unsupported_schema", kP, 400,
                  "the schema uses a keyword the constraint cannot enforce"},
    ErrorCodeInfo{ErrorCode::kSchemaTooComplex, "schema_too_complex", kP, 400,
                  "the schema or grammar is too large to compile within its bounds"},
    ErrorCodeInfo{ErrorCode::kInvalidGrammar, "invalid_grammar", kP, 400,
                  "the grammar or schema is malformed"},
    ErrorCodeInfo{ErrorCode::kQueueFull, "queue_full", kT, 429,
                  "the request queue is full; retry after the suggested delay", kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kWorkerCrashed, "worker_crashed", kT, 503,
                  "the model's worker process stopped while running the request; it is being "
                  "restarted",
                  kRetrySoonMs},
    ErrorCodeInfo{ErrorCode::kQuarantined, "quarantined", kP, 422,
                  "the same request was running at two crashes of its model's worker; it is "
                  "refused so that it cannot crash the worker again"},
    ErrorCodeInfo{ErrorCode::kProtocolError, "protocol_error", kP, 500,
                  "a worker process sent a frame that cannot be read"},
    // Storage problems are transient: freeing disk space or fixing permissions lets a retry work.
    ErrorCodeInfo{ErrorCode::kJobNotFound, "job_not_found", kP, 404, "no job with this id"},
    ErrorCodeInfo{ErrorCode::kLeaseLost, "lease_lost", kP, 409,
                  "the job's lease was taken over or ended (stale epoch)"},
    ErrorCodeInfo{ErrorCode::kJobCancelled, "job_cancelled", kP, 409, "the job was cancelled"},
    ErrorCodeInfo{ErrorCode::kStorageFull, "storage_full", kT, 507,
                  "the database's disk or quota is full", kRetryLaterMs},
    ErrorCodeInfo{ErrorCode::kStorageReadOnly, "storage_read_only", kT, 503,
                  "the database cannot be written", kRetryLaterMs},
    ErrorCodeInfo{ErrorCode::kIdempotencyConflict, "idempotency_conflict", kP, 422,
                  "the idempotency key was used with a different request"},
    ErrorCodeInfo{ErrorCode::kDuplicateCustomId, "duplicate_custom_id", kP, 400,
                  "custom_id repeats within one job"},
    ErrorCodeInfo{ErrorCode::kJobNotFinished, "job_not_finished", kP, 409,
                  "the job still has items to run"},
    // Hub errors are about a server behind this one: never 401 (that would read as this
    // server's API key), 502 for what the hub did wrong or could not do.
    ErrorCodeInfo{ErrorCode::kHubUnauthorized, "hub_unauthorized", kP, 403,
                  "the model hub refused access (set HF_TOKEN)"},
    ErrorCodeInfo{ErrorCode::kHubNotFound, "hub_not_found", kP, 404,
                  "no such repository, revision or file on the model hub"},
    ErrorCodeInfo{ErrorCode::kHubUnavailable, "hub_unavailable", kT, 502,
                  "the model hub could not be reached or the download was cut short",
                  kRetryLaterMs},
    ErrorCodeInfo{ErrorCode::kHubOffline, "hub_offline", kP, 503,
                  "offline mode and no complete local copy"},
};

constexpr std::array kRetired = {
    RetiredErrorName{"missing_field", ErrorCode::kMissingParameter},
    RetiredErrorName{"invalid_field", ErrorCode::kInvalidValue},
};

}  // namespace

std::span<const ErrorCodeInfo> error_code_table() { return kTable; }

std::span<const RetiredErrorName> retired_error_names() { return kRetired; }

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
  for (const RetiredErrorName& retired : kRetired) {
    if (retired.name == name) return retired.replaced_by;
  }
  return std::nullopt;
}

}  // namespace synapse
