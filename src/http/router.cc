// SPDX-License-Identifier: Apache-2.0
#include "http/router.h"

namespace synapse::http {

bool match_pattern(std::string_view pattern, std::string_view path,
                   std::vector<std::pair<std::string, std::string>>* params) {
  std::vector<std::pair<std::string, std::string>> found;
  for (;;) {
    if (pattern.empty() || path.empty()) {
      if (!pattern.empty() || !path.empty()) return false;
      break;
    }
    if (pattern.front() != '/' || path.front() != '/') return false;
    pattern.remove_prefix(1);
    path.remove_prefix(1);
    const std::string_view p = pattern.substr(0, pattern.find('/'));
    const std::string_view s = path.substr(0, path.find('/'));
    if (p.size() >= 2 && p.front() == '{' && p.back() == '}') {
      if (s.empty()) return false;
      found.emplace_back(std::string(p.substr(1, p.size() - 2)), std::string(s));
    } else if (p != s) {
      return false;
    }
    pattern.remove_prefix(p.size());
    path.remove_prefix(s.size());
  }
  if (params != nullptr) *params = std::move(found);
  return true;
}

void Router::add(std::string method, std::string pattern, Handler handler) {
  routes_.push_back({std::move(method), std::move(pattern), std::move(handler)});
}

Router::Match Router::match(Request& req) const {
  Match out;
  const std::string_view method = req.method == "HEAD" ? std::string_view("GET") : req.method;
  for (const Route& route : routes_) {
    std::vector<std::pair<std::string, std::string>> params;
    if (!match_pattern(route.pattern, req.path, &params)) continue;
    if (route.method == method) {
      req.path_params = std::move(params);
      out.kind = Match::Kind::kFound;
      out.route = &route;
      return out;
    }
    if (out.allow.find(route.method) == std::string::npos) {
      out.allow += (out.allow.empty() ? "" : ", ") + route.method;
    }
    out.kind = Match::Kind::kMethodNotAllowed;
  }
  return out;
}

}  // namespace synapse::http
