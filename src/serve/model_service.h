// SPDX-License-Identifier: Apache-2.0
// What the request layer asks of a served model's engine, wherever it runs: `Service` runs it in
// this process (one engine-loop thread); `worker::WorkerService` runs it in a supervised worker
// process and forwards requests and events over a socket. Requests, events and errors are the
// same either way (request.h), so nothing above this interface knows which one it has.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "serve/request.h"
#include "serve/request_handle.h"

namespace synapse::serve {

// A worker process as `synapse ps` and /api/ps show it.
struct WorkerProcessInfo {
  int32_t pid = 0;
  std::string state;  // "running", "restarting", "unavailable" (crash budget spent), "stopped"
  uint64_t crashes = 0;
  uint64_t restarts = 0;
  uint64_t quarantined = 0;  // requests refused as quarantined so far
};

class ModelService {
 public:
  virtual ~ModelService() = default;

  // Validates and enqueues; see Service::submit for the errors. A worker adds worker_crashed
  // (its process died with the request in flight: transient), quarantined and unavailable
  // (restarting, or its crash budget is spent: transient, with a retry delay).
  virtual Result<std::shared_ptr<RequestHandle>> submit(GenerationRequest request) = 0;
  // Seconds a refused client should wait before retrying (1..60).
  virtual uint32_t retry_after_s(RequestClass c) const = 0;
  // Stops admitting, lets in-flight requests finish for up to `grace`, cancels the rest.
  // Idempotent.
  virtual void shutdown(std::chrono::milliseconds grace) = 0;
  virtual std::string render_prometheus() const = 0;

  virtual const ModelLimits& limits() const = 0;
  virtual uint32_t n_embd() const = 0;
  // Bytes the KV cache may grow to (its page limit): with the weights, what the model may hold.
  virtual uint64_t kv_capacity_bytes() const = 0;
  // The worker process running the engine; none when it runs in this process.
  virtual std::optional<WorkerProcessInfo> worker() const { return std::nullopt; }

  uint32_t n_ctx() const { return limits().n_ctx; }
  uint32_t n_vocab() const { return limits().n_vocab; }
  // A bidirectional encoder embeds (and reranks, with a classifier) but does not generate.
  bool generates() const { return !limits().bidirectional; }
  bool bidirectional() const { return limits().bidirectional; }
  bool can_rerank() const { return limits().can_rerank; }
};

}  // namespace synapse::serve
