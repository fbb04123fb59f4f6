// SPDX-License-Identifier: Apache-2.0
#include "cli/server_client.h"

#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

namespace synapse::cli {
namespace {

constexpr std::chrono::milliseconds kCancelPoll{40};
// A server on this machine answers at once; a port held by something else must not stall us.
constexpr std::chrono::milliseconds kProbeTimeout{2000};
// A generation may think for a long time before its first byte (a long prompt on a slow
// machine); the caller's flag, not a timeout, is what stops a wait.
constexpr time_t kStreamReadTimeoutS = 3600;

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// What httplib's Client takes ("http://host:port"), or why `url` is not one.
Result<std::string> client_address(const std::string& url) {
  if (url.starts_with("https://")) {
    return Status(ErrorCode::kUnsupported, "https is not supported for a Synapse server: " + url);
  }
  if (!url.starts_with("http://") || url.size() <= 7) {
    return Status(ErrorCode::kInvalidArgument, "not an http:// URL: " + url);
  }
  return url;
}

httplib::Headers headers_for(const std::string& api_key) {
  httplib::Headers headers;
  if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
  return headers;
}

Status transport_error(const std::string& url, httplib::Error error) {
  return Status(ErrorCode::kUnavailable,
                "no answer from " + url + ": " + httplib::to_string(error));
}

}  // namespace

std::string default_server_url() {
  std::string url = env_or("SYNAPSE_HOST", "http://127.0.0.1:8080");
  if (url.find("://") == std::string::npos) url = "http://" + url;
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

std::string default_api_key() { return env_or("SYNAPSE_API_KEY", ""); }

ServerClient::ServerClient(std::string url, std::string api_key)
    : url_(std::move(url)), api_key_(std::move(api_key)) {
  while (url_.size() > 1 && url_.back() == '/') url_.pop_back();
}

Result<ServerReply> ServerClient::get(std::string_view path,
                                      std::chrono::milliseconds timeout) const {
  SYN_ASSIGN_OR_RETURN(const std::string address, client_address(url_));
  httplib::Client client(address);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  httplib::Result r = client.Get(std::string(path), headers_for(api_key_));
  if (!r) return transport_error(url_, r.error());
  return ServerReply{r->status, r->body};
}

Result<int> ServerClient::post_stream(
    std::string_view path, const std::string& json_body,
    const std::function<void(int status, std::string_view bytes)>& on_body,
    const std::function<bool()>& cancelled) const {
  SYN_ASSIGN_OR_RETURN(const std::string address, client_address(url_));
  httplib::Client client(address);
  client.set_connection_timeout(std::chrono::seconds(10));
  client.set_read_timeout(kStreamReadTimeoutS, 0);
  httplib::Request request;
  request.method = "POST";
  request.path = std::string(path);
  request.headers = headers_for(api_key_);
  request.set_header("Content-Type", "application/json");
  request.set_header("Accept", "text/event-stream");
  request.body = json_body;
  int status = 0;
  std::atomic<bool> stopped{false};
  request.response_handler = [&](const httplib::Response& head) {
    status = head.status;
    return true;
  };
  request.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (stopped.load()) return false;
    on_body(status, std::string_view(data, n));
    return true;
  };
  // Closing the socket is the one way to end a blocked read at once: a watcher does it when the
  // caller's flag goes up.
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load()) {
      // Again until the request ends: a stop before its socket is connected does nothing.
      if (stopped.load() || cancelled()) {
        stopped.store(true);
        client.stop();
      }
      std::this_thread::sleep_for(kCancelPoll);
    }
  });
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool ok = client.send(request, response, error);
  done.store(true);
  watcher.join();
  if (stopped.load()) return Status(ErrorCode::kCancelled, "stopped");
  if (!ok) return transport_error(url_, error);
  return response.status;
}

std::string ServerClient::error_message(const ServerReply& reply) {
  const nlohmann::json body = nlohmann::json::parse(reply.body, nullptr, false);
  if (body.is_object() && body.contains("error")) {
    const nlohmann::json& e = body["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return e["message"].get<std::string>();
    }
  }
  std::string text = reply.body.substr(0, 200);
  return "HTTP " + std::to_string(reply.status) + (text.empty() ? "" : ": " + text);
}

Result<ServerProbe> probe_server(const ServerClient& client, std::string_view model) {
  const Result<ServerReply> health = client.get("/health", kProbeTimeout);
  if (!health.ok() || health->status != 200) return ServerProbe::kNoServer;
  SYN_ASSIGN_OR_RETURN(const ServerReply models, client.get("/v1/models", kProbeTimeout));
  if (models.status == 401) {
    return Status(ErrorCode::kInvalidApiKey,
                  "the server at " + client.url() + " wants an API key: set SYNAPSE_API_KEY " +
                      "(or use --local): " + ServerClient::error_message(models));
  }
  const nlohmann::json list = nlohmann::json::parse(models.body, nullptr, false);
  if (models.status != 200 || !list.is_object() ||
      !list.value("data", nlohmann::json()).is_array()) {
    return ServerProbe::kOtherModels;
  }
  const std::string name(model);
  for (const nlohmann::json& m : list["data"]) {
    if (!m.is_object() || !m.value("id", nlohmann::json()).is_string()) continue;
    const std::string id = m["id"].get<std::string>();
    if (id == name || id == name + ":latest" || name == id + ":latest") {
      return ServerProbe::kServesModel;
    }
  }
  return ServerProbe::kOtherModels;
}

}  // namespace synapse::cli
