// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the worker wire protocol (src/worker): the input is a stream of frames as
// a broken or killed worker might leave it. Frames are consumed with decode_frame until it wants
// more bytes or refuses a header (protocol_error only); every payload decoder runs on each
// frame's payload and on the raw input. What decodes must re-encode to the very bytes it came
// from (decoding is strict, so the encoding is canonical) and decode again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "worker/codec.h"
#include "worker/frame.h"

namespace {

using namespace synapse;
using namespace synapse::worker;

void require(bool condition) {
  if (!condition) std::abort();
}

// A decode either succeeds or fails with protocol_error; a success re-encodes to `payload`.
template <typename T, typename Encode, typename Decode>
void check_codec(std::string_view payload, Encode encode, Decode decode) {
  const Result<T> value = decode(payload);
  if (!value.ok()) {
    require(value.status().code() == ErrorCode::kProtocolError);
    return;
  }
  const std::string again = encode(*value);
  require(again == payload);
  const Result<T> twice = decode(again);
  require(twice.ok() && encode(*twice) == again);
  // Types without floats compare as values too (NaN != NaN rules the others out).
  if constexpr (std::is_same_v<T, Hello> || std::is_same_v<T, Heartbeat> ||
                std::is_same_v<T, uint64_t>) {
    require(*twice == *value);
  }
}

void check_status(std::string_view payload) {
  Status status;
  const Status decoded = decode_status(payload, status);
  if (!decoded.ok()) {
    require(decoded.code() == ErrorCode::kProtocolError);
    return;
  }
  const std::string again = encode_status(status);
  require(again == payload);
  Status twice;
  require(decode_status(again, twice).ok());
  require(twice.code() == status.code() && twice.message() == status.message() &&
          twice.where().path == status.where().path &&
          twice.where().byte_offset == status.where().byte_offset &&
          twice.where().key == status.where().key &&
          twice.where().tensor == status.where().tensor &&
          twice.where().field == status.where().field);
}

void check_payload(std::string_view payload) {
  check_codec<Hello>(payload, encode_hello, decode_hello);
  check_codec<Heartbeat>(payload, encode_heartbeat, decode_heartbeat);
  check_codec<serve::GenerationRequest>(payload, encode_request, decode_request);
  check_codec<serve::GenerationEvent>(payload, encode_event, decode_event);
  check_codec<uint64_t>(payload, encode_u64, decode_u64);
  check_status(payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_payload(std::string_view(reinterpret_cast<const char*>(data), size));
  std::span<const uint8_t> rest(data, size);
  while (true) {
    Frame frame;
    const Result<size_t> used = decode_frame(rest, frame);
    if (!used.ok()) {
      require(used.status().code() == ErrorCode::kProtocolError);
      break;
    }
    if (*used == 0) {
      // A short header, or a whole one whose payload has not all arrived.
      if (rest.size() >= kFrameHeaderBytes) {
        uint32_t payload_bytes = 0;
        std::memcpy(&payload_bytes, rest.data(), sizeof payload_bytes);
        require(rest.size() < kFrameHeaderBytes + payload_bytes);
      }
      break;
    }
    require(*used == kFrameHeaderBytes + frame.payload.size() && *used <= rest.size());
    const std::string bytes = encode_frame(frame);
    require(std::string_view(bytes) ==
            std::string_view(reinterpret_cast<const char*>(rest.data()), *used));
    check_payload(frame.payload);
    rest = rest.subspan(*used);
  }
  return 0;
}
