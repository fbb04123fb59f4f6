// SPDX-License-Identifier: Apache-2.0
// One HTTP request over libcurl, one hop at a time: redirects are followed here, not by curl, so
// that a HEAD can stop at the hub's redirect to its CDN (whose headers carry the file's metadata)
// and credentials never travel to another host. Bodies of successful responses stream to a sink;
// other bodies are kept (bounded) for error messages.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace synapse::hub {

enum class RedirectPolicy {
  kNone,      // return the 3xx response
  kRelative,  // follow a Location without a scheme (same site: a renamed repository)
  kAll,       // follow every redirect (the download itself, to the CDN)
};

struct HttpResponse {
  long status = 0;
  std::string url;  // where the last hop went (after redirects)
  std::vector<std::pair<std::string, std::string>> headers;  // of the last hop, names lowercase
  std::string body;                                          // kept when no sink took it
  uint64_t body_bytes = 0;     // how many bytes the sink (or `body`) received
  std::string transfer_error;  // curl's message when the connection failed mid-body

  // The first header of that name (lowercase), or empty.
  std::string header(std::string_view lowercase_name) const;
};

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  // Sent only to the host of `url`: dropped when a redirect leads elsewhere.
  std::string bearer_token;
  RedirectPolicy redirects = RedirectPolicy::kAll;
  // Receives the body of a 2xx response as it arrives, with the response's status and headers;
  // false aborts the transfer.
  std::function<bool(const HttpResponse& head, std::string_view bytes)> on_body;
  // Polled while the transfer runs; true aborts it (kCancelled).
  std::function<bool()> cancelled;
  // A body kept in memory (no on_body, or not 2xx) past this size is an error.
  size_t max_kept_body_bytes = 16u << 20;
  long connect_timeout_s = 30;
  long stall_timeout_s = 60;  // no byte for this long: the transfer fails
};

// Performs the request. An error is returned only when no response arrived at all (DNS,
// connection refused, cancelled); a response cut short mid-body comes back with transfer_error
// set, so the caller keeps what it received.
Result<HttpResponse> http_fetch(const HttpRequest& request);

// `location` resolved against `base` (RFC 3986: absolute, host-relative or path-relative).
Result<std::string> resolve_url(const std::string& base, const std::string& location);

// Percent-encodes each segment of a path, keeping the '/' between them.
std::string encode_path(std::string_view path);
// Percent-encodes one segment, '/' included ("refs/pr/1" -> "refs%2Fpr%2F1", as the hub wants a
// revision).
std::string encode_segment(std::string_view segment);

}  // namespace synapse::hub
