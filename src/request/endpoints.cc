// SPDX-License-Identifier: Apache-2.0
#include "request/endpoints.h"

#include <array>

namespace synapse::request {
namespace {

using enum EndpointKind;
constexpr EndpointGroup kServer = EndpointGroup::kServer;
constexpr EndpointGroup kModel = EndpointGroup::kModel;
constexpr EndpointGroup kJobs = EndpointGroup::kJobs;

constexpr auto kEndpoints = std::to_array<Endpoint>({
    {"GET", "/health", kHealth, kServer, false, true},
    {"GET", "/v1/models", kListModels, kServer},
    {"GET", "/metrics", kMetrics, kServer},
    {"POST", "/v1/completions", kCompletions, kModel, true},
    {"POST", "/v1/chat/completions", kChatCompletions, kModel, true},
    {"POST", "/v1/embeddings", kEmbeddings, kModel, true},
    {"POST", "/v1/rerank", kRerank, kModel},
    {"POST", "/rerank", kRerank, kModel},  // llama-server's path
    {"POST", "/tokenize", kTokenize, kModel},
    {"POST", "/detokenize", kDetokenize, kModel},
    {"POST", "/v1/models/pull", kPullModel, kModel},  // gated as /api/pull is
    {"POST", "/v1/jobs", kSubmitJob, kJobs},
    {"GET", "/v1/jobs", kListJobs, kJobs},
    {"GET", "/v1/jobs/{id}", kGetJob, kJobs},
    {"GET", "/v1/jobs/{id}/results", kJobResults, kJobs},
    {"POST", "/v1/jobs/{id}/cancel", kCancelJob, kJobs},
    {"POST", "/v1/files", kUploadFile, kJobs},
    {"GET", "/v1/files", kListFiles, kJobs},
    {"GET", "/v1/files/{id}/content", kFileContent, kJobs},
    {"GET", "/v1/files/{id}", kGetFile, kJobs},
    {"DELETE", "/v1/files/{id}", kDeleteFile, kJobs},
    {"POST", "/v1/batches", kCreateBatch, kJobs},
    {"GET", "/v1/batches", kListBatches, kJobs},
    {"GET", "/v1/batches/{id}", kGetBatch, kJobs},
    {"POST", "/v1/batches/{id}/cancel", kCancelBatch, kJobs},
    {"GET", "/", kOllamaRoot, kModel, false, true},  // clients probe it, maybe without the key
    {"GET", "/api/version", kOllamaVersion, kModel},
    {"GET", "/api/tags", kOllamaTags, kModel},
    {"GET", "/api/ps", kOllamaPs, kModel},
    {"POST", "/api/show", kOllamaShow, kModel},
    {"POST", "/api/generate", kOllamaGenerate, kModel},
    {"POST", "/api/chat", kOllamaChat, kModel},
    {"POST", "/api/embed", kOllamaEmbed, kModel},
    {"POST", "/api/embeddings", kOllamaEmbeddings, kModel},
    {"POST", "/api/pull", kOllamaPull, kModel},
    {"DELETE", "/api/delete", kOllamaDelete, kModel},
    {"POST", "/api/copy", kOllamaCopy, kModel},
    // The web UI's files are open: the page itself asks for the key (GET / serves the page).
    {"GET", "/ui/{file}", kWebAsset, kServer, false, true},
    {"GET", "/v1/system", kSystemInfo, kServer},
});

// A literal segment matches itself, a {name} segment any one non-empty segment.
bool matches(std::string_view pattern, std::string_view path) {
  while (!pattern.empty() && !path.empty()) {
    if (pattern[0] != '/' || path[0] != '/') return false;
    pattern.remove_prefix(1);
    path.remove_prefix(1);
    const size_t p_end = std::min(pattern.find('/'), pattern.size());
    const size_t s_end = std::min(path.find('/'), path.size());
    const std::string_view p = pattern.substr(0, p_end);
    const std::string_view s = path.substr(0, s_end);
    const bool param = p.size() >= 2 && p.front() == '{' && p.back() == '}';
    if (param ? s.empty() : p != s) return false;
    pattern.remove_prefix(p_end);
    path.remove_prefix(s_end);
  }
  return pattern.empty() && path.empty();
}

}  // namespace

std::span<const Endpoint> endpoints() { return kEndpoints; }

std::vector<std::string> job_item_urls() {
  std::vector<std::string> urls;
  for (const Endpoint& e : kEndpoints) {
    if (e.job_item) urls.emplace_back(e.path);
  }
  return urls;
}

const Endpoint* find_endpoint(std::string_view path) {
  for (const Endpoint& e : kEndpoints) {
    if (matches(e.path, path)) return &e;
  }
  return nullptr;
}

const Endpoint* find_job_endpoint(std::string_view url) {
  for (const Endpoint& e : kEndpoints) {
    if (e.job_item && e.method == "POST" && e.path == url) return &e;
  }
  return nullptr;
}

std::string metrics_label(std::string_view path) {
  const Endpoint* e = find_endpoint(path);
  return e != nullptr ? std::string(e->path) : std::string("other");
}

}  // namespace synapse::request
