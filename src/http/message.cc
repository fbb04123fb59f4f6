// SPDX-License-Identifier: Apache-2.0
#include "http/message.h"

#include <algorithm>

namespace synapse::http {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

std::optional<std::string_view> Headers::get(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (equals_ignore_case(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

size_t Headers::count(std::string_view name) const {
  return static_cast<size_t>(std::count_if(fields_.begin(), fields_.end(), [&](const auto& f) {
    return equals_ignore_case(f.first, name);
  }));
}

void Headers::set(std::string name, std::string value) {
  std::erase_if(fields_, [&](const auto& f) { return equals_ignore_case(f.first, name); });
  fields_.emplace_back(std::move(name), std::move(value));
}

std::optional<std::string> Request::query_param(std::string_view name) const {
  for (const auto& [n, v] : query) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::string Request::path_param(std::string_view name) const {
  for (const auto& [n, v] : path_params) {
    if (n == name) return v;
  }
  return {};
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace synapse::http
