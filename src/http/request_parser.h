// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 request parser (RFC 9112), fed the bytes of a connection as they arrive: first the
// head (request line and header fields, bounded in size and count), then the body, framed by
// Content-Length or chunked transfer coding and bounded by the server's body limit. Strict where
// leniency lets a request be read two ways (request smuggling): Content-Length together with
// Transfer-Encoding, differing Content-Length values, obsolete line folding, control bytes in
// fields are all refused. Lenient where clients differ harmlessly: a bare LF ends a line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "http/message.h"

namespace synapse::http {

struct ParserLimits {
  size_t max_request_line_bytes = 8 << 10;  // 414 beyond
  size_t max_head_bytes = 32 << 10;         // request line + fields; 431 beyond
  size_t max_header_count = 100;            // 431 beyond
  size_t max_body_bytes = 8 << 20;          // 413 beyond
};

enum class BodyFraming { kNone, kLength, kChunked };

// A parsed head: the request without its body, and how the body and connection are framed.
struct RequestHead {
  Request request;
  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; 1.0 only if asked
  bool http10 = false;           // an HTTP/1.0 client: no chunked responses
  bool expect_continue = false;  // "Expect: 100-continue"
};

// A protocol error: the HTTP status to answer with (400, 413, 414, 431, 501, 505) and why.
struct ProtocolError {
  int http_status = 400;
  std::string message;
};

struct HeadParse {
  enum class State { kIncomplete, kComplete, kError } state = State::kIncomplete;
  size_t consumed = 0;  // bytes of the buffer the head took (kComplete)
  RequestHead head;
  ProtocolError error;
};

// Parses a request head from the start of `buffer`. kIncomplete until the blank line that ends
// the head has arrived (or a limit shows it never can).
HeadParse parse_request_head(std::string_view buffer, const ParserLimits& limits);

// The body, decoded as it arrives.
class BodyReader {
 public:
  BodyReader() = default;
  BodyReader(const RequestHead& head, size_t max_body_bytes);

  struct Step {
    size_t consumed = 0;  // bytes of the input taken
    bool done = false;    // the whole body has arrived
    bool failed = false;  // a framing error or the body limit: see error()
  };
  Step feed(std::string_view input);
  bool done() const { return state_ == State::kDone; }
  const ProtocolError& error() const { return error_; }
  std::string take_body() { return std::move(body_); }
  size_t body_bytes() const { return body_.size(); }

 private:
  enum class State { kLength, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone, kFailed };
  Step fail(size_t consumed, int status, std::string message);

  State state_ = State::kDone;
  uint64_t remaining_ = 0;  // of the body (kLength) or the chunk (kChunkData)
  size_t max_body_bytes_ = 0;
  std::string line_;  // a chunk-size or trailer line in progress
  size_t trailer_bytes_ = 0;
  std::string body_;
  ProtocolError error_;
};

}  // namespace synapse::http
