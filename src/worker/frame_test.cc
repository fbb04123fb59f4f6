// SPDX-License-Identifier: Apache-2.0
// Framing: frames decode from a buffer whole or not at all, a bad header is refused as soon as
// it is seen, and frames cross a socketpair intact whatever their size, with the stream's end
// and a vanished peer reported as values (no SIGPIPE).
#include "worker/frame.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

namespace synapse::worker {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The two ends of a connected stream socket, closed on destruction unless closed before.
class SocketPair {
 public:
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  ~SocketPair() {
    close(0);
    close(1);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;

  int fd(int end) const { return fds_[end]; }
  void close(int end) {
    if (fds_[end] >= 0) ::close(fds_[end]);
    fds_[end] = -1;
  }
  // Writes raw bytes, as a broken or killed writer would leave them.
  void send_raw(const std::string& bytes) {
    ASSERT_EQ(::send(fds_[0], bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

 private:
  int fds_[2] = {-1, -1};
};

std::vector<Frame> sample_frames() {
  return {Frame{FrameType::kHello, 0, "hello payload"},
          Frame{FrameType::kSubmit, 7, std::string("with\0nul", 8)},
          Frame{FrameType::kCancel, 7, ""},
          Frame{FrameType::kEvent, UINT64_MAX, std::string(1000, 'e')},
          Frame{FrameType::kShutdown, 0, std::string(8, '\x01')}};
}

void expect_same_frame(const Frame& a, const Frame& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.payload, b.payload);
}

// A header with the given fields, little-endian.
std::string header(uint32_t payload_bytes, uint16_t type, uint16_t flags, uint64_t id = 0) {
  std::string out(kFrameHeaderBytes, '\0');
  std::memcpy(out.data(), &payload_bytes, 4);
  std::memcpy(out.data() + 4, &type, 2);
  std::memcpy(out.data() + 6, &flags, 2);
  std::memcpy(out.data() + 8, &id, 8);
  return out;
}

TEST(WorkerFrame, HeaderLayoutIsLittleEndianLengthTypeFlagsId) {
  const std::string bytes = encode_frame(Frame{FrameType::kEvent, 0x0102030405060708, "abc"});
  EXPECT_EQ(bytes, header(3, 4, 0, 0x0102030405060708) + "abc");
}

TEST(WorkerFrame, SeveralFramesDecodeOneAfterAnotherFromOneBuffer) {
  std::string stream;
  for (const Frame& frame : sample_frames()) stream += encode_frame(frame);
  std::span<const uint8_t> rest = bytes_of(stream);
  for (const Frame& expected : sample_frames()) {
    Frame frame;
    const Result<size_t> used = decode_frame(rest, frame);
    ASSERT_TRUE(used.ok()) << used.status().to_string();
    ASSERT_EQ(*used, kFrameHeaderBytes + expected.payload.size());
    expect_same_frame(frame, expected);
    rest = rest.subspan(*used);
  }
  EXPECT_TRUE(rest.empty());
}

TEST(WorkerFrame, PartialInputConsumesNothing) {
  const std::string bytes = encode_frame(Frame{FrameType::kMetricsReply, 3, "# HELP x\n"});
  for (size_t length = 0; length < bytes.size(); ++length) {
    Frame frame;
    const Result<size_t> used = decode_frame(bytes_of(bytes).first(length), frame);
    ASSERT_TRUE(used.ok()) << length;
    EXPECT_EQ(*used, 0u) << length;
  }
  // The largest length allowed waits for its payload.
  Frame frame;
  const std::string largest = header(kMaxPayloadBytes, 4, 0);
  const Result<size_t> used = decode_frame(bytes_of(largest), frame);
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(*used, 0u);
}

TEST(WorkerFrame, BadHeadersAreProtocolErrorsBeforeAnyPayload) {
  const std::pair<std::string, std::string> cases[] = {
      {header(kMaxPayloadBytes + 1, 4, 0), "payload length 67108865 over the limit"},
      {header(UINT32_MAX, 4, 0), "payload length 4294967295 over the limit"},
      {header(0, 0, 0), "unknown frame type 0"},
      {header(0, kMaxFrameType + 1, 0), "unknown frame type 11"},
      {header(0, 4, 1), "flags 1 (must be 0)"},
  };
  for (const auto& [bytes, message] : cases) {
    Frame frame;
    const Result<size_t> used = decode_frame(bytes_of(bytes), frame);
    ASSERT_FALSE(used.ok()) << message;
    EXPECT_EQ(used.status().code(), ErrorCode::kProtocolError);
    EXPECT_NE(used.status().message().find(message), std::string::npos) << used.status().message();
  }
}

TEST(WorkerFrame, FramesCrossASocketPair) {
  SocketPair pair;
  for (const Frame& frame : sample_frames()) ASSERT_TRUE(write_frame(pair.fd(0), frame).ok());
  for (const Frame& expected : sample_frames()) {
    Result<std::optional<Frame>> frame = read_frame(pair.fd(1));
    ASSERT_TRUE(frame.ok()) << frame.status().to_string();
    ASSERT_TRUE(frame->has_value());
    expect_same_frame(**frame, expected);
  }
}

TEST(WorkerFrame, AFrameLargerThanTheSocketBufferArrivesWhole) {
  SocketPair pair;
  int buffer_bytes = 0;
  socklen_t size = sizeof buffer_bytes;
  ASSERT_EQ(::getsockopt(pair.fd(0), SOL_SOCKET, SO_SNDBUF, &buffer_bytes, &size), 0);
  std::string payload(static_cast<size_t>(buffer_bytes) * 8 + 12345, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 131 % 251);
  const Frame big{FrameType::kEvent, 99, payload};

  Status written;
  std::thread writer([&] {
    written = write_frame(pair.fd(0), big);
    if (written.ok()) written = write_frame(pair.fd(0), Frame{FrameType::kHeartbeat, 0, "hb"});
  });
  Result<std::optional<Frame>> first = read_frame(pair.fd(1));
  Result<std::optional<Frame>> second = read_frame(pair.fd(1));
  writer.join();
  ASSERT_TRUE(written.ok()) << written.to_string();
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status().to_string();
  expect_same_frame(**first, big);
  ASSERT_TRUE(second.ok() && second->has_value()) << second.status().to_string();
  EXPECT_EQ((*second)->payload, "hb");
}

TEST(WorkerFrame, EndOfStreamAtAFrameBoundaryIsNullopt) {
  SocketPair pair;
  ASSERT_TRUE(write_frame(pair.fd(0), Frame{FrameType::kCancel, 1, ""}).ok());
  pair.close(0);
  Result<std::optional<Frame>> frame = read_frame(pair.fd(1));
  ASSERT_TRUE(frame.ok() && frame->has_value());
  frame = read_frame(pair.fd(1));
  ASSERT_TRUE(frame.ok()) << frame.status().to_string();
  EXPECT_FALSE(frame->has_value());
}

TEST(WorkerFrame, EndOfStreamInsideAFrameIsAnIoError) {
  const std::string bytes = encode_frame(Frame{FrameType::kEvent, 5, "twelve bytes"});
  for (const size_t cut : {size_t{1}, kFrameHeaderBytes - 1, kFrameHeaderBytes,
                           kFrameHeaderBytes + 5, bytes.size() - 1}) {
    SocketPair pair;
    pair.send_raw(bytes.substr(0, cut));
    pair.close(0);
    const Result<std::optional<Frame>> frame = read_frame(pair.fd(1));
    ASSERT_FALSE(frame.ok()) << cut;
    EXPECT_EQ(frame.status().code(), ErrorCode::kIoError) << cut;
    EXPECT_NE(frame.status().message().find(cut < kFrameHeaderBytes ? "inside a frame header"
                                                                    : "inside a frame payload"),
              std::string::npos)
        << frame.status().message();
  }
}

TEST(WorkerFrame, ABadHeaderOnTheSocketIsAProtocolError) {
  SocketPair pair;
  pair.send_raw(header(0, 4, 2));
  const Result<std::optional<Frame>> frame = read_frame(pair.fd(1));
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.status().code(), ErrorCode::kProtocolError);
}

TEST(WorkerFrame, WritingToAClosedPeerIsAnIoErrorNotASignal) {
  SocketPair pair;
  pair.close(1);
  // Without MSG_NOSIGNAL the default SIGPIPE action would end this test binary here.
  const Status status = write_frame(pair.fd(0), Frame{FrameType::kEvent, 1, "late"});
  EXPECT_EQ(status.code(), ErrorCode::kIoError) << status.to_string();
}

TEST(WorkerFrame, WriteFrameRefusesAPayloadOverTheLimit) {
  SocketPair pair;
  const Frame huge{FrameType::kEvent, 1, std::string(kMaxPayloadBytes + 1, 'x')};
  const Status status = write_frame(pair.fd(0), huge);
  EXPECT_EQ(status.code(), ErrorCode::kLimitExceeded) << status.to_string();
}

}  // namespace
}  // namespace synapse::worker
