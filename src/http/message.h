// SPDX-License-Identifier: Apache-2.0
// One HTTP/1.1 request as the server hands it to a route, and the response the route fills in:
// a whole body, or a stream whose producer the connection thread calls until it ends. Plain data
// with no socket in it, so routes and their tests need no network.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace synapse::http {

// Header fields in arrival order; names compare without case (RFC 9110 5.1).
class Headers {
 public:
  void add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  // The first field of that name, if any.
  std::optional<std::string_view> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  size_t count(std::string_view name) const;
  void set(std::string name, std::string value);  // replaces every field of that name
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

bool equals_ignore_case(std::string_view a, std::string_view b);

struct Request {
  std::string method;  // as sent ("GET", "POST", ...)
  std::string target;  // the request-target as sent ("/v1/jobs?limit=2")
  std::string path;    // the target's path, percent-decoded
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  Headers headers;
  std::string body;  // de-chunked
  std::string remote_addr;
  int remote_port = 0;
  // The values of the route pattern's {name} segments, in order (set by the router).
  std::vector<std::pair<std::string, std::string>> path_params;
  // Whether the client has closed its side of the connection; set by the server (a request built
  // in a test has none and never reports a disconnect).
  std::function<bool()> peer_closed;

  std::string header(std::string_view name) const {
    return std::string(headers.get(name).value_or(std::string_view()));
  }
  bool has_header(std::string_view name) const { return headers.has(name); }
  // The first query parameter of that name.
  std::optional<std::string> query_param(std::string_view name) const;
  bool has_param(std::string_view name) const { return query_param(name).has_value(); }
  std::string param(std::string_view name) const { return query_param(name).value_or(""); }
  // The value of a {name} path segment; empty if the route has none.
  std::string path_param(std::string_view name) const;
  bool client_gone() const { return peer_closed && peer_closed(); }
};

// Where a streaming response's producer writes. write() is false once the client is gone or
// the write timed out; the producer should stop then.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual bool write(std::string_view data) = 0;
  // True once the client has closed its side (cheap: one poll, no wait).
  virtual bool client_gone() = 0;
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  // A streaming response: called again and again on the connection's thread until it returns
  // false (the stream is over: ended, or the client gone). The body is then sent in chunks as
  // the producer writes (close-delimited to an HTTP/1.0 client).
  std::function<bool(StreamSink&)> producer;
  // Called once when a streaming response ends for any reason (its end, a failed write, the
  // server stopping), on the connection's thread.
  std::function<void()> on_stream_end;

  void set_content(std::string content, std::string_view content_type) {
    body = std::move(content);
    headers.set("Content-Type", std::string(content_type));
  }
  void set_header(std::string name, std::string value) {
    headers.set(std::move(name), std::move(value));
  }
  void set_stream(std::string_view content_type, std::function<bool(StreamSink&)> produce,
                  std::function<void()> on_end = nullptr) {
    headers.set("Content-Type", std::string(content_type));
    producer = std::move(produce);
    on_stream_end = std::move(on_end);
  }
};

// "OK", "Not Found", ... for the status line ("Unknown" for codes without a phrase here).
std::string_view reason_phrase(int status);

// Percent-decodes `text` ('+' as space when `plus_is_space`); nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);

}  // namespace synapse::http
