// SPDX-License-Identifier: Apache-2.0
// The one table of every endpoint Synapse serves: method, path pattern, what it does (its kind)
// and what it needs. Everything that names an endpoint reads it: the HTTP server registers its
// routes from it (server/http_server.cc), the durable-job validator and /v1/batches accept the
// urls it marks as job items, the job executor runs an item by its kind, and /metrics labels a
// request with the pattern it matched. Adding an endpoint is one row here plus its handler
// (docs/adding-an-endpoint.md).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace synapse::request {

enum class EndpointKind {
  // The server itself.
  kHealth,
  kListModels,
  kMetrics,
  // A model's work.
  kCompletions,
  kChatCompletions,
  kEmbeddings,
  kRerank,
  kTokenize,
  kDetokenize,
  // The model store, as the server manages it.
  kPullModel,
  // Durable jobs (/v1/jobs) and OpenAI's Batch API over them.
  kSubmitJob,
  kListJobs,
  kGetJob,
  kJobResults,
  kCancelJob,
  kUploadFile,
  kListFiles,
  kGetFile,
  kFileContent,
  kDeleteFile,
  kCreateBatch,
  kListBatches,
  kGetBatch,
  kCancelBatch,
  // Ollama's API (docs/ollama.md) over the same models.
  kOllamaRoot,
  kOllamaVersion,
  kOllamaTags,
  kOllamaPs,
  kOllamaShow,
  kOllamaGenerate,
  kOllamaChat,
  kOllamaEmbed,
  kOllamaEmbeddings,
  kOllamaPull,
  kOllamaDelete,
  kOllamaCopy,
  // The web UI (server/web_routes.h, docs/web.md): its files, and the machine facts it shows.
  kWebAsset,
  kSystemInfo,
};

// Which part of the server answers an endpoint: its routes exist only when that part is served.
enum class EndpointGroup { kServer, kModel, kJobs };  // Ollama's rows are kModel

struct Endpoint {
  std::string_view method;
  std::string_view path;  // a pattern: literal segments and {name} for one segment
  EndpointKind kind;
  EndpointGroup group;
  bool job_item = false;  // a durable job's (and a batch's) request may name this url
  bool open = false;      // answered without the API key (health probes)
};

// Every endpoint, in the order the router tries them.
std::span<const Endpoint> endpoints();

// The urls a durable job's items may name (POST endpoints marked job_item).
std::vector<std::string> job_item_urls();

// The endpoint whose pattern matches `path` (any method), or null.
const Endpoint* find_endpoint(std::string_view path);
// The POST endpoint a job item's url names, or null.
const Endpoint* find_job_endpoint(std::string_view url);

// The label /metrics counts a request under: the pattern it matched, else "other" (so that
// client-chosen paths cannot grow the label set).
std::string metrics_label(std::string_view path);

}  // namespace synapse::request
