// SPDX-License-Identifier: Apache-2.0
// The one taxonomy of stable error codes. Each code has a stable name and number, says whether a
// retry can succeed (transient) or not (permanent), and names the HTTP status the service maps it
// to.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace synapse {

// Numbers are stable: they cross process boundaries (worker framing) and appear in logs. Never
// reuse or renumber a code; append new ones.
enum class ErrorCode : uint16_t {
  kOk = 0,
  // Generic.
  kInvalidArgument = 1,
  kNotFound = 2,
  kAlreadyExists = 3,
  kIoError = 4,
  kPermissionDenied = 5,
  kUnsupported = 6,
  kInternal = 7,
  kResourceExhausted = 8,
  kUnavailable = 9,
  kCancelled = 10,
  kDeadlineExceeded = 11,
  // Reading files that an attacker may control (GGUF, packages).
  kFileTruncated = 100,
  kBadMagic = 101,
  kUnsupportedVersion = 102,
  kLimitExceeded = 103,
  kUnknownValueType = 104,
  kUnknownTensorType = 105,
  kDuplicateKey = 106,
  kDuplicateTensor = 107,
  kInvalidUtf8 = 108,
  kBadShape = 109,
  kBadAlignment = 110,
  kTensorOutOfRange = 111,
  kTensorOverlap = 112,
  kSizeMismatch = 113,
  kTypeMismatch = 114,
  kMissingKey = 115,
  kBadValue = 116,
  kChecksumMismatch = 117,
  // Models.
  kUnknownArchitecture = 200,
  kMissingTensor = 201,
  // Kernels and numerics.
  kKernelMismatch = 300,
  kNumericFault = 301,  // a computation produced NaN or infinity (e.g. logits)
  // Requests to the service's HTTP API (src/api): what the client sent.
  kInvalidJson = 600,
  kMissingParameter = 601,
  kInvalidType = 602,
  kInvalidValue = 603,
  kUnsupportedParameter = 604,
  kModelNotFound = 605,
  kContextLengthExceeded = 606,
  kRequestTooLarge = 607,
  kInvalidApiKey = 608,
  // The HTTP layer (src/http): how the request arrived.
  kInvalidHttp = 620,         // malformed, or framed two ways
  kRequestTimeout = 621,      // head or body too slow
  kHeadersTooLarge = 622,     // request head over its bound
  kUriTooLong = 623,          // request line over its bound
  kTooManyConnections = 624,  // connection cap, in all or per client
  kMethodNotAllowed = 625,    // the path exists but not with this method
  // Chat templates (src/chat).
  kTemplateSyntax = 650,
  kTemplateError = 651,
  kTemplateRaised = 652,
  kNoChatTemplate = 653,
  // Constrained decoding (src/constrain): schemas and grammars a request brings.
  kUnsupportedSchema = 660,  // a keyword or construct the grammar cannot enforce
  kSchemaTooComplex = 661,   // compiling went past its time or size bound
  kInvalidGrammar = 662,     // a grammar (GBNF) or schema that is malformed
  // The service's scheduler (src/serve).
  kQueueFull = 700,  // admission refused: the request's class queue is at its bound
  // Worker processes (src/worker): a model's engine runs apart from the front.
  kWorkerCrashed = 701,  // the worker died (or hung and was killed) with the request in flight
  kQuarantined = 702,    // the request was in flight at two of its worker's crashes
  kProtocolError = 703,  // a worker frame that cannot be read
  // Durable jobs and their storage.
  kJobNotFound = 800,
  kLeaseLost = 801,
  kJobCancelled = 802,
  kStorageFull = 803,
  kStorageReadOnly = 804,
  kIdempotencyConflict = 805,
  // 807 and 808 are retired (missing_field, invalid_field): jobs report missing_parameter,
  // invalid_type and invalid_value like the rest of the API. See kRetiredNames.
  kDuplicateCustomId = 809,
  kJobNotFinished = 810,
  // The model hub (src/hub): what a model hub answered, or could not.
  kHubUnauthorized = 900,  // the hub refused the credentials, or asked for some
  kHubNotFound = 901,      // no such repository, revision or file on the hub
  kHubUnavailable = 902,   // network failure, hub server error, download cut short
  kHubOffline = 903,       // offline mode (HF_HUB_OFFLINE) and no complete local copy
};

enum class Retry : uint8_t { kPermanent, kTransient };

struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view name;  // stable snake_case identifier, e.g. "file_truncated"
  Retry retry;
  int http_status;  // what the service answers for this code
  std::string_view summary;
  // Transient codes: how long a client should wait before retrying when the call site knows no
  // better (the scheduler does for queue_full). 0 for permanent codes.
  uint32_t retry_after_ms = 0;
};

// A name the table no longer has, and the code that replaced it. Stored job results written
// before the rename still read back (error_code_from_name), and docs/errors.md lists them.
struct RetiredErrorName {
  std::string_view name;
  ErrorCode replaced_by;
};

// All codes, in numeric order. The single source for names, retry class and HTTP mapping.
std::span<const ErrorCodeInfo> error_code_table();

// Never null: an unknown number maps to the entry of kInternal.
const ErrorCodeInfo& error_code_info(ErrorCode code);
std::string_view error_code_name(ErrorCode code);
// Also accepts a retired name, as the code that replaced it.
std::optional<ErrorCode> error_code_from_name(std::string_view name);
std::span<const RetiredErrorName> retired_error_names();

}  // namespace synapse
