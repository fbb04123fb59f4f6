// SPDX-License-Identifier: Apache-2.0
// The payloads of the worker frames (frame.h): binary, little-endian, every length bounded by the
// payload's own size. A decoder refuses what it cannot read whole (protocol_error naming what was
// being read) and never trusts a count before checking that many bytes remain.
//
// Strings are u32 length + bytes; vectors u32 count + elements; optionals a u8 flag; enums their
// underlying integer, checked against their range on decoding; a Status is its error-code number
// (base/error_code.h: numbers are stable across builds), message and ErrorWhere fields.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "serve/request.h"

namespace synapse::worker {

// What a worker says once its model is loaded.
struct Hello {
  uint32_t protocol = 0;      // kProtocolVersion of the worker's build
  int32_t pid = 0;            // the worker process
  std::string build;          // the worker binary's version and commit
  std::string kernel_level;   // e.g. "avx512+vnni"
  std::string model_path;     // the file it serves
  std::string model_digest;   // its SHA-256 (hex) when known
  serve::ModelLimits limits;  // n_vocab, n_ctx, n_token_types, bidirectional, can_rerank
  uint32_t n_embd = 0;
  uint64_t kv_capacity_bytes = 0;
  bool operator==(const Hello&) const = default;
};

// The worker's progress, sent about twice a second: the front detects a hung engine by `steps`
// not moving while requests are in flight.
struct Heartbeat {
  uint64_t steps = 0;
  uint64_t kv_pages_in_use = 0;
  uint64_t kv_pages_total = 0;
  uint64_t active = 0;
  uint64_t waiting = 0;
  uint64_t cached_sequences = 0;
  uint64_t prefix_hits = 0;
  bool operator==(const Heartbeat&) const = default;
};

std::string encode_hello(const Hello& hello);
Result<Hello> decode_hello(std::string_view payload);

std::string encode_heartbeat(const Heartbeat& heartbeat);
Result<Heartbeat> decode_heartbeat(std::string_view payload);

// Every field of the request but `constraint` (a compiled grammar, which stays in its process):
// its `constraint_recipe` travels instead and the worker compiles it again. The deadline is a
// steady_clock time point, which is the same clock (CLOCK_MONOTONIC) in both processes.
std::string encode_request(const serve::GenerationRequest& request);
Result<serve::GenerationRequest> decode_request(std::string_view payload);

std::string encode_event(const serve::GenerationEvent& event);
Result<serve::GenerationEvent> decode_event(std::string_view payload);

// OK is an empty payload. Decoding returns the decode's own status (protocol_error when the
// payload cannot be read) and puts the status that travelled in `out` (Result<Status> cannot
// hold a Status as its value).
std::string encode_status(const Status& status);
Status decode_status(std::string_view payload, Status& out);

// kShutdown's payload: the grace period in milliseconds (u64).
std::string encode_u64(uint64_t value);
Result<uint64_t> decode_u64(std::string_view payload);

}  // namespace synapse::worker
