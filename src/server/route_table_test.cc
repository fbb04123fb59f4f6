// SPDX-License-Identifier: Apache-2.0
// The endpoint table is the one list of what the server answers: with every part served, the
// router holds exactly one route per table row, and nothing the table does not name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "jobs/sqlite_job_store.h"
#include "request/endpoints.h"
#include "server/http_server.h"

namespace synapse::server {
namespace {

std::set<std::string> table_rows(bool models, bool jobs) {
  std::set<std::string> rows;
  for (const request::Endpoint& e : request::endpoints()) {
    const bool served = e.group == request::EndpointGroup::kServer ||
                        (e.group == request::EndpointGroup::kModel && models) ||
                        (e.group == request::EndpointGroup::kJobs && jobs);
    if (served) rows.insert(std::string(e.method) + " " + std::string(e.path));
  }
  return rows;
}

std::set<std::string> served_routes(const ServerOptions& options) {
  HttpMetrics metrics;
  std::set<std::string> routes;
  const http::Router router = build_routes(options, metrics);
  for (const http::Router::Route& r : router.routes()) {
    EXPECT_TRUE(routes.insert(r.method + " " + r.pattern).second)
        << "served twice: " << r.method << " " << r.pattern;
  }
  return routes;
}

TEST(RouteTable, EveryServedRouteIsATableRowAndEveryRowIsServed) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("synapse-route-table-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto store = jobs::SqliteJobStore::open((dir / "jobs.db").string());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  request::ModelDirectory models;
  JobsApi jobs;
  jobs.store = store->get();

  ServerOptions options;
  EXPECT_EQ(served_routes(options), table_rows(false, false));
  options.models = &models;
  EXPECT_EQ(served_routes(options), table_rows(true, false));
  options.jobs = &jobs;
  EXPECT_EQ(served_routes(options), table_rows(true, true));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace synapse::server
