// SPDX-License-Identifier: Apache-2.0
// The worker process's side of the boundary: serves one loaded model's Service to the front over
// a connected socket. The calling thread reads frames (submit, cancel, metrics, shutdown); a pump
// thread forwards every request's events as they are pushed and sends a heartbeat about twice a
// second, which the front reads to tell a busy engine from a hung one.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "constrain/token_masker.h"
#include "serve/service.h"
#include "worker/codec.h"

namespace synapse::worker {

// Compiles a request's constraint recipe (request::OutputConstraints::compile_recipe).
using RecipeCompiler =
    std::function<Result<std::shared_ptr<constrain::TokenMasker>>(const std::string& recipe)>;

struct HostOptions {
  std::chrono::milliseconds heartbeat{500};
  // How long requests in flight may take to finish when the front closes the socket without a
  // shutdown frame (it died): none, since nobody is left to read them.
  std::chrono::milliseconds orphan_grace{0};
};

// Sends `hello`, then serves until a shutdown frame (the service drains for its grace period) or
// the end of the stream. Returns OK after an orderly end; an error when the front sent a frame
// that cannot be read or the socket failed (the service is shut down either way).
Status serve_front(int fd, serve::Service& service, const Hello& hello,
                   const RecipeCompiler& compile, const HostOptions& options = {});

}  // namespace synapse::worker
