// SPDX-License-Identifier: Apache-2.0
#include "hub/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <memory>
#include <mutex>

#include "base/echo.h"

namespace synapse::hub {
namespace {

constexpr int kMaxRedirects = 10;

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

// What one hop's callbacks fill in.
struct Hop {
  const HttpRequest* request = nullptr;
  CURL* curl = nullptr;
  HttpResponse response;
  bool sink_refused = false;
  bool body_too_large = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* hop = static_cast<Hop*>(user);
  const size_t n = size * count;
  const std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    hop->response.headers.clear();  // a new response (after "100 Continue")
    return n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    hop->response.headers.emplace_back(lowercase(line.substr(0, colon)),
                                       trim(line.substr(colon + 1)));
  }
  return n;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* hop = static_cast<Hop*>(user);
  const size_t n = size * count;
  if (hop->response.status == 0) {
    // The status line is in before the first body byte; only 2xx bodies go to the sink.
    curl_easy_getinfo(hop->curl, CURLINFO_RESPONSE_CODE, &hop->response.status);
  }
  hop->response.body_bytes += n;
  const bool success = hop->response.status >= 200 && hop->response.status < 300;
  if (success && hop->request->on_body) {
    if (!hop->request->on_body(hop->response, std::string_view(data, n))) {
      hop->sink_refused = true;
      return 0;  // aborts the transfer
    }
    return n;
  }
  if (hop->response.body.size() + n > hop->request->max_kept_body_bytes) {
    hop->body_too_large = true;
    return 0;
  }
  hop->response.body.append(data, n);
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* hop = static_cast<Hop*>(user);
  return hop->request->cancelled && hop->request->cancelled() ? 1 : 0;
}

std::string host_of(const std::string& url) {
  std::unique_ptr<CURLU, CurlDeleter> handle(curl_url());
  if (!handle || curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return {};
  std::string out;
  for (const CURLUPart part : {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT}) {
    char* value = nullptr;
    if (curl_url_get(handle.get(), part, &value, CURLU_DEFAULT_PORT) == CURLUE_OK && value) {
      out += lowercase(value) + "|";
    }
    curl_free(value);
  }
  return out;
}

// One request, no redirects followed.
Result<HttpResponse> fetch_one(const HttpRequest& request, const std::string& url,
                               bool send_token) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return Status(ErrorCode::kInternal, "curl_easy_init failed");
  Hop hop;
  hop.request = &request;
  hop.curl = curl.get();
  std::unique_ptr<curl_slist, CurlDeleter> headers;
  const auto add_header = [&headers](const std::string& line) {
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  };
  for (const auto& [name, value] : request.headers) add_header(name + ": " + value);
  if (send_token && !request.bearer_token.empty()) {
    add_header("Authorization: Bearer " + request.bearer_token);
  }
  // The hub's LFS sizes and hashes are of the stored bytes: never a compressed encoding.
  add_header("Accept-Encoding: identity");
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "synapse/0.1 (hub client)");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, request.stall_timeout_s);
  if (request.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &hop);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &hop);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &hop);
  char error_text[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);
  hop.response.url = url;
  const CURLcode code = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  hop.response.status = status;
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    return Status(ErrorCode::kCancelled, "cancelled while fetching " + clip_for_echo(url));
  }
  if (hop.sink_refused) {
    hop.response.transfer_error = "the download's writer stopped";
    return hop.response;
  }
  if (hop.body_too_large) {
    return Status(ErrorCode::kLimitExceeded,
                  "the answer from " + clip_for_echo(url) + " is larger than " +
                      std::to_string(request.max_kept_body_bytes) + " bytes");
  }
  if (code != CURLE_OK) {
    const std::string why = error_text[0] ? error_text : curl_easy_strerror(code);
    if (status == 0) {
      return Status(ErrorCode::kHubUnavailable,
                    "could not reach " + clip_for_echo(url) + ": " + why);
    }
    hop.response.transfer_error = why;  // the response began: the caller keeps its bytes
  }
  return hop.response;
}

}  // namespace

std::string HttpResponse::header(std::string_view lowercase_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lowercase_name) return value;
  }
  return {};
}

Result<std::string> resolve_url(const std::string& base, const std::string& location) {
  std::unique_ptr<CURLU, CurlDeleter> handle(curl_url());
  if (!handle) return Status(ErrorCode::kInternal, "curl_url failed");
  if (curl_url_set(handle.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      curl_url_set(handle.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK) {
    return Status(ErrorCode::kHubUnavailable,
                  "the hub redirected to an invalid location '" + clip_for_echo(location) + "'");
  }
  char* out = nullptr;
  if (curl_url_get(handle.get(), CURLUPART_URL, &out, 0) != CURLUE_OK || !out) {
    return Status(ErrorCode::kInternal, "curl_url_get failed");
  }
  std::string url(out);
  curl_free(out);
  return url;
}

namespace {

std::string percent_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string encode_path(std::string_view path) { return percent_encode(path, true); }
std::string encode_segment(std::string_view segment) { return percent_encode(segment, false); }

Result<HttpResponse> http_fetch(const HttpRequest& request) {
  global_init();
  const std::string origin = host_of(request.url);
  std::string url = request.url;
  for (int hop = 0;; ++hop) {
    SYN_ASSIGN_OR_RETURN(HttpResponse response, fetch_one(request, url, host_of(url) == origin));
    const bool redirect = response.status >= 300 && response.status < 400 &&
                          response.status != 304 && !response.header("location").empty();
    if (!redirect || request.redirects == RedirectPolicy::kNone) return response;
    const std::string location = response.header("location");
    // Absolute: "scheme://..." or network-path "//host/..."; anything else stays on this site.
    const size_t scheme_end = location.find("://");
    const bool has_scheme =
        scheme_end != std::string::npos && scheme_end > 0 &&
        std::all_of(location.begin(), location.begin() + static_cast<std::ptrdiff_t>(scheme_end),
                    [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' ||
                             c == '.';
                    });
    const bool relative = !has_scheme && !location.starts_with("//");
    if (request.redirects == RedirectPolicy::kRelative && !relative) return response;
    if (hop + 1 >= kMaxRedirects) {
      return Status(ErrorCode::kHubUnavailable, "more than " + std::to_string(kMaxRedirects) +
                                                    " redirects from " +
                                                    clip_for_echo(request.url));
    }
    SYN_ASSIGN_OR_RETURN(url, resolve_url(url, location));
  }
}

}  // namespace synapse::hub
