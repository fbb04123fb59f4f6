// SPDX-License-Identifier: Apache-2.0
#include "request/job_items.h"

#include "base/echo.h"
#include "request/embeddings.h"
#include "request/endpoints.h"
#include "request/generation.h"

namespace synapse::request {

Result<std::string> run_job_item(const ModelDirectory& models, std::string_view url,
                                 std::string_view body, serve::RequestClass request_class,
                                 const std::function<bool()>& cancelled,
                                 const api::RequestLimits& limits) {
  const Endpoint* endpoint = find_job_endpoint(url);
  const EndpointKind kind = endpoint != nullptr ? endpoint->kind : EndpointKind::kHealth;
  switch (kind) {
    case EndpointKind::kCompletions:
    case EndpointKind::kChatCompletions:
      return run_generation(models, kind, body, request_class, cancelled, limits);
    case EndpointKind::kEmbeddings: {
      SYN_ASSIGN_OR_RETURN(const api::EmbeddingsRequest request,
                           api::parse_embeddings_request(body, limits));
      return run_embeddings(models, request, request_class, cancelled);
    }
    default:
      break;
  }
  std::string urls;
  for (const std::string& u : job_item_urls()) urls += (urls.empty() ? "" : ", ") + u;
  return Status(ErrorCode::kUnsupportedParameter,
                "a job's item runs " + urls + ", not " + clip_for_echo(url),
                ErrorWhere{.field = "url"});
}

ItemCall job_item_call(const ModelDirectory& models, const api::RequestLimits& limits) {
  return [&models, limits](std::string_view url, std::string_view body, serve::RequestClass c,
                           const std::function<bool()>& cancelled) {
    return run_job_item(models, url, body, c, cancelled, limits);
  };
}

}  // namespace synapse::request
