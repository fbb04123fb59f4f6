// SPDX-License-Identifier: Apache-2.0
#include "http/request_parser.h"

#include <algorithm>
#include <charconv>

namespace synapse::http {
namespace {

constexpr size_t kMaxChunkLineBytes = 1024;
constexpr size_t kMaxTrailerBytes = 8 << 10;

// RFC 9110 5.6.2 token characters (method and field names).
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char);
}

// Field values may hold visible characters, spaces, tabs and obs-text; never CR, LF or NUL or
// other controls.
bool is_field_value(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The end of the line starting at `from` (the index of its LF), or npos.
size_t line_end(std::string_view buffer, size_t from) { return buffer.find('\n', from); }

std::string_view line_at(std::string_view buffer, size_t from, size_t lf) {
  std::string_view line = buffer.substr(from, lf - from);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

HeadParse error(int status, std::string message) {
  HeadParse out;
  out.state = HeadParse::State::kError;
  out.error = {status, std::move(message)};
  return out;
}

bool contains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (equals_ignore_case(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Splits the target into path and query; false when a part is badly escaped.
bool split_target(Request& r) {
  const std::string_view target = r.target;
  const size_t q = target.find('?');
  std::optional<std::string> path = percent_decode(target.substr(0, q), false);
  if (!path || path->find('\0') != std::string::npos) return false;
  r.path = std::move(*path);
  if (q == std::string_view::npos) return true;
  std::string_view query = target.substr(q + 1);
  const size_t hash = query.find('#');
  if (hash != std::string_view::npos) query = query.substr(0, hash);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      std::optional<std::string> name = percent_decode(pair.substr(0, eq), true);
      std::optional<std::string> value = percent_decode(
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
      if (!name || !value) return false;
      r.query.emplace_back(std::move(*name), std::move(*value));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return true;
}

// The request line: method SP request-target SP HTTP-version.
bool parse_request_line(std::string_view line, RequestHead& head, ProtocolError& err) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    err = {400, "malformed request line"};
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) {
    err = {400, "malformed method"};
    return false;
  }
  if (target.empty() || target.front() != '/' || !is_field_value(target) ||
      target.find_first_of(" \t") != std::string_view::npos) {
    err = {400, "the request target must be an absolute path"};
    return false;
  }
  if (version == "HTTP/1.1") {
    head.http10 = false;
  } else if (version == "HTTP/1.0") {
    head.http10 = true;
  } else if (version.starts_with("HTTP/")) {
    err = {505, "only HTTP/1.0 and HTTP/1.1 are served"};
    return false;
  } else {
    err = {400, "malformed HTTP version"};
    return false;
  }
  head.request.method = std::string(method);
  head.request.target = std::string(target);
  if (!split_target(head.request)) {
    err = {400, "badly escaped request target"};
    return false;
  }
  return true;
}

// Body framing and connection options from the fields.
bool read_framing(RequestHead& head, const ParserLimits& limits, ProtocolError& err) {
  const Headers& h = head.request.headers;
  const size_t te_count = h.count("Transfer-Encoding");
  const size_t cl_count = h.count("Content-Length");
  if (te_count > 0) {
    if (cl_count > 0) {
      err = {400, "Content-Length together with Transfer-Encoding"};
      return false;
    }
    if (te_count > 1 || !equals_ignore_case(trim(*h.get("Transfer-Encoding")), "chunked")) {
      err = {501, "only the chunked transfer coding is supported"};
      return false;
    }
    head.framing = BodyFraming::kChunked;
  } else if (cl_count > 0) {
    std::optional<uint64_t> length;
    for (const auto& [name, value] : h.fields()) {
      if (!equals_ignore_case(name, "Content-Length")) continue;
      const std::string_view v = trim(value);
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (v.empty() || ec != std::errc() || end != v.data() + v.size() || v.front() == '+') {
        err = {400, "invalid Content-Length"};
        return false;
      }
      if (length && *length != n) {
        err = {400, "differing Content-Length fields"};
        return false;
      }
      length = n;
    }
    if (*length > limits.max_body_bytes) {
      err = {413, "the request body has " + std::to_string(*length) + " bytes; the limit is " +
                      std::to_string(limits.max_body_bytes)};
      return false;
    }
    head.content_length = *length;
    head.framing = *length > 0 ? BodyFraming::kLength : BodyFraming::kNone;
  }
  const std::string_view connection = h.get("Connection").value_or("");
  head.keep_alive =
      head.http10 ? contains_token(connection, "keep-alive") : !contains_token(connection, "close");
  if (const auto expect = h.get("Expect")) {
    if (!equals_ignore_case(trim(*expect), "100-continue")) {
      err = {417, "unsupported Expect field"};
      return false;
    }
    head.expect_continue = !head.http10 && head.framing != BodyFraming::kNone;
  }
  return true;
}

}  // namespace

HeadParse parse_request_head(std::string_view buffer, const ParserLimits& limits) {
  // Blank lines before the request line are ignored (RFC 9112 2.2).
  size_t pos = 0;
  while (pos < buffer.size() && (buffer[pos] == '\r' || buffer[pos] == '\n')) {
    if (pos >= 4) return error(400, "malformed request line");
    ++pos;
  }
  const size_t first_lf = line_end(buffer, pos);
  if (first_lf == std::string_view::npos) {
    if (buffer.size() - pos > limits.max_request_line_bytes) {
      return error(414, "the request line is longer than " +
                            std::to_string(limits.max_request_line_bytes) + " bytes");
    }
    return {};
  }
  if (first_lf - pos > limits.max_request_line_bytes) {
    return error(414, "the request line is longer than " +
                          std::to_string(limits.max_request_line_bytes) + " bytes");
  }
  // Find the blank line that ends the head before parsing anything else.
  size_t cursor = first_lf + 1;
  size_t head_end = std::string_view::npos;
  while (cursor <= buffer.size()) {
    const size_t lf = line_end(buffer, cursor);
    if (lf == std::string_view::npos) break;
    if (line_at(buffer, cursor, lf).empty()) {
      head_end = lf + 1;
      break;
    }
    cursor = lf + 1;
    if (cursor - pos > limits.max_head_bytes) break;
  }
  if (head_end == std::string_view::npos) {
    if (buffer.size() - pos > limits.max_head_bytes) {
      return error(431, "the request head is longer than " + std::to_string(limits.max_head_bytes) +
                            " bytes");
    }
    return {};
  }
  if (head_end - pos > limits.max_head_bytes) {
    return error(
        431, "the request head is longer than " + std::to_string(limits.max_head_bytes) + " bytes");
  }

  HeadParse out;
  if (!parse_request_line(line_at(buffer, pos, first_lf), out.head, out.error)) {
    out.state = HeadParse::State::kError;
    return out;
  }
  cursor = first_lf + 1;
  size_t fields = 0;
  for (;;) {
    const size_t lf = line_end(buffer, cursor);
    const std::string_view line = line_at(buffer, cursor, lf);
    cursor = lf + 1;
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return error(400, "obsolete line folding");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return error(400, "malformed header field");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return error(400, "control character in a header field");
    if (++fields > limits.max_header_count) {
      return error(431, "more than " + std::to_string(limits.max_header_count) + " header fields");
    }
    out.head.request.headers.add(std::string(line.substr(0, colon)), std::string(value));
  }
  // A missing Host is tolerated (RFC 9112 3.2 says refuse): nothing here depends on it, and raw
  // test clients often leave it out.
  if (!read_framing(out.head, limits, out.error)) {
    out.state = HeadParse::State::kError;
    return out;
  }
  out.state = HeadParse::State::kComplete;
  out.consumed = head_end;
  return out;
}

BodyReader::BodyReader(const RequestHead& head, size_t max_body_bytes)
    : max_body_bytes_(max_body_bytes) {
  switch (head.framing) {
    case BodyFraming::kNone:
      state_ = State::kDone;
      break;
    case BodyFraming::kLength:
      state_ = State::kLength;
      remaining_ = head.content_length;
      // All at once (the length is within the body limit): one allocation, which the allocator
      // maps for a large body and returns to the system when the request is done, where growing
      // by doubling would leave a trail of freed blocks in the heap.
      body_.reserve(static_cast<size_t>(head.content_length));
      break;
    case BodyFraming::kChunked:
      state_ = State::kChunkSize;
      break;
  }
}

BodyReader::Step BodyReader::fail(size_t consumed, int status, std::string message) {
  state_ = State::kFailed;
  error_ = {status, std::move(message)};
  return {consumed, false, true};
}

BodyReader::Step BodyReader::feed(std::string_view input) {
  size_t pos = 0;
  while (pos < input.size() || state_ == State::kDone) {
    switch (state_) {
      case State::kDone:
        return {pos, true, false};
      case State::kFailed:
        return {pos, false, true};
      case State::kLength: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, input.size() - pos));
        body_.append(input.substr(pos, n));
        pos += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kDone;
        break;
      }
      case State::kChunkSize:
      case State::kChunkDataEnd:
      case State::kTrailer: {
        const size_t lf = input.find('\n', pos);
        const size_t take = (lf == std::string_view::npos ? input.size() : lf + 1) - pos;
        line_.append(input.substr(pos, take));
        pos += take;
        if (state_ == State::kTrailer) {
          trailer_bytes_ += take;
          if (trailer_bytes_ > kMaxTrailerBytes) return fail(pos, 431, "chunked trailer too long");
        } else if (line_.size() > kMaxChunkLineBytes) {
          return fail(pos, 400, "malformed chunk size line");
        }
        if (lf == std::string_view::npos) return {pos, false, false};
        std::string_view line = line_;
        line.remove_suffix(1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (state_ == State::kChunkDataEnd) {
          if (!line.empty()) return fail(pos, 400, "chunk data longer than its size");
          state_ = State::kChunkSize;
        } else if (state_ == State::kTrailer) {
          if (line.empty()) state_ = State::kDone;
        } else {
          const std::string_view size_text = trim(line.substr(0, line.find(';')));
          uint64_t size = 0;
          const auto [end, ec] =
              std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
          if (size_text.empty() || ec != std::errc() ||
              end != size_text.data() + size_text.size()) {
            return fail(pos, 400, "malformed chunk size");
          }
          if (size > max_body_bytes_ - body_.size()) {
            return fail(pos, 413,
                        "the request body is over the limit of " + std::to_string(max_body_bytes_) +
                            " bytes");
          }
          remaining_ = size;
          state_ = size == 0 ? State::kTrailer : State::kChunkData;
        }
        line_.clear();
        break;
      }
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, input.size() - pos));
        body_.append(input.substr(pos, n));
        pos += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kChunkDataEnd;
        break;
      }
    }
  }
  return {pos, state_ == State::kDone, state_ == State::kFailed};
}

}  // namespace synapse::http
