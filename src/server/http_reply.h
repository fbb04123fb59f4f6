// SPDX-License-Identifier: Apache-2.0
// What every route of the server answers errors with: OpenAI's error body for a Status, its HTTP
// status from the error table, and Retry-After on every transient 429 or 503 (the caller's delay
// when it knows one, else the table's). Private to the server library.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "base/status.h"
#include "http/message.h"

namespace synapse::server {

inline constexpr std::string_view kJson = "application/json";

// The one place an error's status, Retry-After and body are written.
inline void send_api_error(http::Response& res, const api::ApiError& error) {
  res.status = error.http_status;
  if (std::optional<std::string> retry = api::retry_after_header(error)) {
    res.set_header("Retry-After", *retry);
  }
  res.set_content(api::error_body(error), std::string(kJson));
}

// `retry_after_ms`: the caller's estimate for a transient code (the scheduler's for a full
// queue); ignored for a permanent one.
inline void send_error(http::Response& res, const Status& status,
                       std::optional<uint32_t> retry_after_ms = std::nullopt) {
  send_api_error(res, api::api_error_from_status(status, retry_after_ms));
}

// Streams what `stream` produces (a request::GenerationStream or OllamaStream: `next(out)`
// appends the bytes of the next event and says whether more follow, `abandon()` cancels an
// unfinished request) as a response of `content_type`. A client that goes away, or a failed
// write, abandons the request; so does the server ending the stream for any other reason.
template <typename Stream>
void send_stream(http::Response& res, std::string content_type, std::shared_ptr<Stream> stream) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      std::move(content_type),
      [stream](http::StreamSink& sink) {
        std::string out;
        const bool more = stream->next(out);
        if (sink.client_gone() || (!out.empty() && !sink.write(out))) {
          stream->abandon();
          return false;
        }
        return more;
      },
      [stream] { stream->abandon(); });
}

}  // namespace synapse::server
