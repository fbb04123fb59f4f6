// SPDX-License-Identifier: Apache-2.0
// The framing between `synapse serve` (the front) and a model's worker process over a local
// stream socket: a 16-byte header (payload length u32, frame type u16, flags u16 = 0, request id
// u64; little-endian) and the payload, whose layout the frame type fixes (codec.h). No JSON on
// this path: a token's event is a few dozen bytes.
//
// Both ends are ours, but a worker may be killed mid-write and a bug may write garbage, so the
// reader trusts nothing: a length over kMaxPayloadBytes, an unknown type or nonzero flags is a
// `protocol_error`, never a large allocation or a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace synapse::worker {

// Bumped on any change of a frame's layout; both ends say theirs in kHello and refuse another.
inline constexpr uint32_t kProtocolVersion = 1;

enum class FrameType : uint16_t {
  kHello = 1,           // worker -> front, once, when its model is loaded: Hello
  kSubmit = 2,          // front -> worker: a GenerationRequest (+ its constraint's recipe)
  kSubmitReply = 3,     // worker -> front: the Status of Service::submit (OK: accepted)
  kEvent = 4,           // worker -> front: one GenerationEvent of the request id
  kCancel = 5,          // front -> worker: cancel the request id (empty payload)
  kHeartbeat = 6,       // worker -> front, about twice a second: Heartbeat
  kMetricsRequest = 7,  // front -> worker (empty payload); answered by kMetricsReply, same id
  kMetricsReply = 8,    // worker -> front: the service's Prometheus text
  kShutdown = 9,        // front -> worker: drain for the grace period (u64 milliseconds), then exit
  kStarted = 10,        // worker -> front: the request id starts running (empty payload)
};
inline constexpr uint16_t kMaxFrameType = 10;

inline constexpr size_t kFrameHeaderBytes = 16;
// An embedding event of a very wide model with every row (pooling none) is the largest payload.
inline constexpr uint32_t kMaxPayloadBytes = 64u << 20;

struct Frame {
  FrameType type = FrameType::kHello;
  uint64_t request_id = 0;  // 0 for frames about no request (hello, heartbeat, shutdown)
  std::string payload;
};

// The header and payload of `frame` as bytes.
std::string encode_frame(const Frame& frame);

// Decodes one frame from the front of `bytes`. Returns the bytes it used, 0 when `bytes` holds
// no whole frame yet (nothing is consumed), or protocol_error (a bad header: the stream cannot
// be resynchronised and must be closed).
Result<size_t> decode_frame(std::span<const uint8_t> bytes, Frame& out);

// Blocking I/O on a stream socket; EINTR retried, partial transfers continued.
// write_frame: io_error when the peer is gone (no SIGPIPE: MSG_NOSIGNAL).
Status write_frame(int fd, const Frame& frame);
// nullopt: the peer closed the stream at a frame boundary. io_error: a read failed or the stream
// ended inside a frame; protocol_error: as decode_frame.
Result<std::optional<Frame>> read_frame(int fd);

}  // namespace synapse::worker
