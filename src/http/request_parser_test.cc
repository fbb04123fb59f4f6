// SPDX-License-Identifier: Apache-2.0
// The request parser on strings: heads, framing, limits and the requests that could be read two
// ways (smuggling), which it must refuse.
#include "http/request_parser.h"

#include <gtest/gtest.h>

namespace synapse::http {
namespace {

HeadParse parse(std::string_view text, ParserLimits limits = {}) {
  return parse_request_head(text, limits);
}

TEST(RequestParser, ParsesAHeadAndItsQuery) {
  const std::string text =
      "GET /v1/jobs%2Fx?limit=2&status=running&q=a+b%21 HTTP/1.1\r\nHost: h\r\n"
      "X-Synapse-Class:  batch \r\n\r\nrest";
  const HeadParse p = parse(text);
  ASSERT_EQ(p.state, HeadParse::State::kComplete);
  EXPECT_EQ(p.consumed, text.size() - 4);
  EXPECT_EQ(p.head.request.method, "GET");
  EXPECT_EQ(p.head.request.path, "/v1/jobs/x");
  EXPECT_EQ(p.head.request.param("limit"), "2");
  EXPECT_EQ(p.head.request.param("q"), "a b!");
  EXPECT_EQ(p.head.request.header("x-synapse-class"), "batch");
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(p.head.framing, BodyFraming::kNone);
}

TEST(RequestParser, IncompleteUntilTheBlankLine) {
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\n").state, HeadParse::State::kIncomplete);
  EXPECT_EQ(parse("GET / HT").state, HeadParse::State::kIncomplete);
  EXPECT_EQ(parse("GET / HTTP/1.1\nHost: h\n\n").state, HeadParse::State::kComplete);
}

TEST(RequestParser, ConnectionAndExpect) {
  HeadParse p = parse("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n");
  EXPECT_FALSE(p.head.keep_alive);
  p = parse("GET / HTTP/1.0\r\n\r\n");
  EXPECT_FALSE(p.head.keep_alive);
  EXPECT_TRUE(p.head.http10);
  p = parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  EXPECT_TRUE(p.head.keep_alive);
  p = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_TRUE(p.head.expect_continue);
  EXPECT_EQ(p.head.content_length, 5u);
}

TEST(RequestParser, RefusesWhatCouldBeReadTwoWays) {
  const auto status = [](std::string_view text) {
    const HeadParse p = parse(text);
    return p.state == HeadParse::State::kError ? p.error.http_status : 0;
  };
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"), 0);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 3x\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nBad Name: a\r\n\r\n"), 400);
  EXPECT_EQ(status(std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26)), 400);
  EXPECT_EQ(status("GET http://x/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(status("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /%zz HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /%00 HTTP/1.1\r\n\r\n"), 400);
}

TEST(RequestParser, Limits) {
  ParserLimits limits;
  limits.max_request_line_bytes = 64;
  limits.max_head_bytes = 256;
  limits.max_header_count = 3;
  limits.max_body_bytes = 100;
  EXPECT_EQ(parse("GET /" + std::string(100, 'a'), limits).error.http_status, 414);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), limits).error.http_status, 431);
  EXPECT_EQ(
      parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits).error.http_status,
      431);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", limits).error.http_status, 413);
}

TEST(BodyReader, LengthArrivesInPieces) {
  const HeadParse p = parse("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n");
  BodyReader body(p.head, 100);
  EXPECT_FALSE(body.feed("01234").done);
  const BodyReader::Step step = body.feed("56789GET");
  EXPECT_TRUE(step.done);
  EXPECT_EQ(step.consumed, 5u);  // the next pipelined request is left alone
  EXPECT_EQ(body.take_body(), "0123456789");
}

TEST(BodyReader, Chunked) {
  const HeadParse p = parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  BodyReader body(p.head, 100);
  const std::string wire =
      "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  size_t used = 0;
  for (char c : wire.substr(0, wire.size() - 4)) {  // a byte at a time
    const BodyReader::Step step = body.feed(std::string_view(&c, 1));
    ASSERT_FALSE(step.failed) << body.error().message;
    used += step.consumed;
  }
  EXPECT_TRUE(body.done());
  EXPECT_EQ(used, wire.size() - 4);
  EXPECT_EQ(body.take_body(), "hello world");
}

TEST(BodyReader, ChunkedFramingErrorsAndLimit) {
  const HeadParse p = parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_TRUE(BodyReader(p.head, 100).feed("zz\r\n").failed);
  EXPECT_TRUE(BodyReader(p.head, 100).feed("2\r\nabc\r\n").failed);
  BodyReader big(p.head, 100);
  EXPECT_TRUE(big.feed("65\r\n").failed);  // 101 bytes
  EXPECT_EQ(big.error().http_status, 413);
  EXPECT_TRUE(BodyReader(p.head, 100).feed(std::string(2000, '1')).failed);
}

}  // namespace
}  // namespace synapse::http
