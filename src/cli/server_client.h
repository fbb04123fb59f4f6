// SPDX-License-Identifier: Apache-2.0
// A client of a running `synapse serve` for `synapse run` and `synapse ps`: where the server is
// ($SYNAPSE_HOST, else http://127.0.0.1:8080; $SYNAPSE_API_KEY as its bearer token), small JSON
// GETs, and a POST whose response body streams to a callback and that a caller's flag can stop
// at any moment (even while no byte is coming). Over cpp-httplib; plain http only.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace synapse::cli {

// $SYNAPSE_HOST (a bare "host:port" gets http://), else http://127.0.0.1:8080.
std::string default_server_url();
// $SYNAPSE_API_KEY, else "".
std::string default_api_key();

struct ServerReply {
  int status = 0;
  std::string body;
};

class ServerClient {
 public:
  ServerClient(std::string url, std::string api_key);

  const std::string& url() const { return url_; }

  // One GET. unavailable when nothing answers within `timeout` (connection refused included).
  Result<ServerReply> get(std::string_view path, std::chrono::milliseconds timeout) const;

  // A POST of a JSON body; each piece of the response body goes to `on_body` with the status as
  // it arrives. `cancelled` is polled every few tens of milliseconds; when it says true the
  // connection is closed (the server cancels the request) and kCancelled returned. An error is
  // returned when no complete response arrived; otherwise the status.
  Result<int> post_stream(std::string_view path, const std::string& json_body,
                          const std::function<void(int status, std::string_view bytes)>& on_body,
                          const std::function<bool()>& cancelled) const;

  // The message of an error body ({"error": {"message"}} as OpenAI and Ollama write it), else the
  // body itself, shortened.
  static std::string error_message(const ServerReply& reply);

 private:
  std::string url_;
  std::string api_key_;
};

enum class ServerProbe {
  kNoServer,     // nothing answers /health
  kServesModel,  // /v1/models lists the model (name, or name:latest)
  kOtherModels,  // a server, without that model
};
// Asks /health, then /v1/models. An error only when the server refuses to list its models (an
// API key missing or wrong: invalid_api_key, naming SYNAPSE_API_KEY).
Result<ServerProbe> probe_server(const ServerClient& client, std::string_view model);

}  // namespace synapse::cli
