// SPDX-License-Identifier: Apache-2.0
#include "http/router.h"

#include <gtest/gtest.h>

namespace synapse::http {
namespace {

TEST(Router, PatternsMethodsAndParams) {
  Router router;
  std::string hit;
  router.add("GET", "/v1/jobs", [&](Request&, Response&) { hit = "list"; });
  router.add("GET", "/v1/jobs/{id}", [&](Request&, Response&) { hit = "get"; });
  router.add("POST", "/v1/jobs/{id}/cancel", [&](Request&, Response&) { hit = "cancel"; });
  Request req;
  Response res;
  req.method = "GET";
  req.path = "/v1/jobs/job-7";
  Router::Match m = router.match(req);
  ASSERT_EQ(m.kind, Router::Match::Kind::kFound);
  m.route->handler(req, res);
  EXPECT_EQ(hit, "get");
  EXPECT_EQ(req.path_param("id"), "job-7");

  req.method = "HEAD";  // answered by GET
  EXPECT_EQ(router.match(req).kind, Router::Match::Kind::kFound);
  req.method = "DELETE";
  m = router.match(req);
  EXPECT_EQ(m.kind, Router::Match::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "GET");
  req.method = "POST";
  for (const char* path : {"/v1/jobs/", "/v1/jobs//cancel", "/v1/jobs/a/b", "/v1", "/"}) {
    req.path = path;
    EXPECT_EQ(router.match(req).kind, Router::Match::Kind::kNotFound) << path;
  }
}

}  // namespace
}  // namespace synapse::http
