// SPDX-License-Identifier: Apache-2.0
// Maps a request's method and path to its handler. Patterns are paths whose segments are literal
// or a {name} that matches one non-empty segment ("/v1/jobs/{id}/cancel"); the values land in
// Request::path_params. HEAD is answered by the GET route. A path no route has is 404; a path
// some route has under another method is 405 with an Allow field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/server.h"

namespace synapse::http {

class Router {
 public:
  struct Route {
    std::string method;
    std::string pattern;
    Handler handler;
  };

  void add(std::string method, std::string pattern, Handler handler);

  struct Match {
    enum class Kind { kFound, kNotFound, kMethodNotAllowed } kind = Kind::kNotFound;
    const Route* route = nullptr;
    std::string allow;  // kMethodNotAllowed: the methods the path has, "GET, POST"
  };
  // Finds the route for `req` and fills its path_params.
  Match match(Request& req) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// True when `path` matches `pattern`; fills `params` with the {name} segments' values.
bool match_pattern(std::string_view pattern, std::string_view path,
                   std::vector<std::pair<std::string, std::string>>* params);

}  // namespace synapse::http
