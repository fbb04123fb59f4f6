// SPDX-License-Identifier: Apache-2.0
#include "worker/frame.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "base/unaligned.h"

namespace synapse::worker {
namespace {

static_assert(std::endian::native == std::endian::little, "frames are little-endian");

struct Header {
  uint32_t payload_bytes = 0;
  FrameType type = FrameType::kHello;
  uint64_t request_id = 0;
};

Status protocol_error(std::string message) {
  return Status(ErrorCode::kProtocolError, "worker frame: " + std::move(message));
}

Status io_error(std::string message) {
  return Status(ErrorCode::kIoError, "worker frame: " + std::move(message));
}

// Checks the header before any payload is waited for, so a bad one is refused at once.
Result<Header> parse_header(const uint8_t* at) {
  const uint32_t payload_bytes = load_unaligned<uint32_t>(at);
  const uint16_t type = load_unaligned<uint16_t>(at + 4);
  const uint16_t flags = load_unaligned<uint16_t>(at + 6);
  if (payload_bytes > kMaxPayloadBytes) {
    return protocol_error("payload length " + std::to_string(payload_bytes) +
                          " over the limit of " + std::to_string(kMaxPayloadBytes) + " bytes");
  }
  if (type == 0 || type > kMaxFrameType) {
    return protocol_error("unknown frame type " + std::to_string(type));
  }
  if (flags != 0) return protocol_error("flags " + std::to_string(flags) + " (must be 0)");
  return Header{payload_bytes, static_cast<FrameType>(type), load_unaligned<uint64_t>(at + 8)};
}

// Reads exactly `size` bytes unless the stream ends first; returns how many were read.
Result<size_t> read_full(int fd, uint8_t* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      return io_error("read failed: " + std::generic_category().message(errno));
    }
  }
  return done;
}

}  // namespace

std::string encode_frame(const Frame& frame) {
  SYN_CHECK(frame.payload.size() <= kMaxPayloadBytes,
            "worker frame payload over kMaxPayloadBytes (write_frame refuses it)");
  std::array<uint8_t, kFrameHeaderBytes> head{};
  store_unaligned<uint32_t>(head.data(), static_cast<uint32_t>(frame.payload.size()));
  store_unaligned<uint16_t>(head.data() + 4, static_cast<uint16_t>(frame.type));
  store_unaligned<uint16_t>(head.data() + 6, 0);
  store_unaligned<uint64_t>(head.data() + 8, frame.request_id);
  std::string out;
  out.reserve(kFrameHeaderBytes + frame.payload.size());
  out.append(reinterpret_cast<const char*>(head.data()), head.size());
  out.append(frame.payload);
  return out;
}

Result<size_t> decode_frame(std::span<const uint8_t> bytes, Frame& out) {
  if (bytes.size() < kFrameHeaderBytes) return size_t{0};
  SYN_ASSIGN_OR_RETURN(const Header header, parse_header(bytes.data()));
  const size_t frame_bytes = kFrameHeaderBytes + header.payload_bytes;
  if (bytes.size() < frame_bytes) return size_t{0};
  out.type = header.type;
  out.request_id = header.request_id;
  out.payload.assign(reinterpret_cast<const char*>(bytes.data()) + kFrameHeaderBytes,
                     header.payload_bytes);
  return frame_bytes;
}

Status write_frame(int fd, const Frame& frame) {
  if (frame.payload.size() > kMaxPayloadBytes) {
    return Status(ErrorCode::kLimitExceeded,
                  "worker frame: payload of " + std::to_string(frame.payload.size()) +
                      " bytes over the limit of " + std::to_string(kMaxPayloadBytes));
  }
  const std::string bytes = encode_frame(frame);
  size_t done = 0;
  while (done < bytes.size()) {
    // MSG_NOSIGNAL: a peer that is gone is an error value here, not a SIGPIPE for the process.
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      return io_error("send failed: " + std::generic_category().message(errno));
    }
  }
  return ok_status();
}

Result<std::optional<Frame>> read_frame(int fd) {
  std::array<uint8_t, kFrameHeaderBytes> head{};
  SYN_ASSIGN_OR_RETURN(const size_t head_read, read_full(fd, head.data(), head.size()));
  if (head_read == 0) return std::optional<Frame>();
  if (head_read < kFrameHeaderBytes) {
    return io_error("the stream ended inside a frame header (" + std::to_string(head_read) +
                    " of " + std::to_string(kFrameHeaderBytes) + " bytes)");
  }
  SYN_ASSIGN_OR_RETURN(const Header header, parse_header(head.data()));
  Frame frame{header.type, header.request_id, std::string(header.payload_bytes, '\0')};
  SYN_ASSIGN_OR_RETURN(
      const size_t payload_read,
      read_full(fd, reinterpret_cast<uint8_t*>(frame.payload.data()), header.payload_bytes));
  if (payload_read < header.payload_bytes) {
    return io_error("the stream ended inside a frame payload (" + std::to_string(payload_read) +
                    " of " + std::to_string(header.payload_bytes) + " bytes)");
  }
  return std::optional<Frame>(std::move(frame));
}

}  // namespace synapse::worker
