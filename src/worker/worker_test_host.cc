// SPDX-License-Identifier: Apache-2.0
// Tests only: a worker process for worker_service_test. What `synapse worker` does, minus the
// CLI and the model store, so that the supervisor's tests (and the TSan lane, which builds no
// CLI) start real processes: opens the model file given as argv[1] for serving, says hello on
// fd 3 and serves the front until it stops. Fail points come from SYNAPSE_FAILPOINTS as in any
// Synapse process.
//   worker_test_host MODEL.gguf
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "backend/cpu_backend.h"
#include "base/thread_pool.h"
#include "kernels/kernel_selection.h"
#include "serve/service.h"
#include "tokenizer/tokenizer.h"
#include "worker/frame.h"
#include "worker/worker_host.h"

namespace {

constexpr int kFrontFd = 3;

int fail(const char* what, const synapse::Status& status) {
  std::fprintf(stderr, "worker_test_host: %s: %s\n", what, status.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace synapse;
  if (argc != 2) {
    std::fprintf(stderr, "usage: worker_test_host MODEL.gguf (fd 3: the front's socket)\n");
    return 2;
  }
  ThreadPool pool(1);
  CpuBackend backend(selected_kernels(), pool);
  Result<std::unique_ptr<DecoderModel>> model =
      DecoderModel::open(argv[1], backend, serve::serving_decoder_options());
  if (!model.ok()) return fail("open", model.status());
  Result<tokenizer::Tokenizer> tokenizer =
      tokenizer::Tokenizer::from_gguf((*model)->file().metadata());
  if (!tokenizer.ok()) return fail("tokenizer", tokenizer.status());
  serve::ServiceConfig config;
  config.scheduler.max_active = 4;
  config.prefill_chunk_tokens = 16;
  config.page_tokens = 8;
  serve::Service service(**model, *tokenizer, config);

  worker::Hello hello;
  hello.protocol = worker::kProtocolVersion;
  hello.pid = static_cast<int32_t>(::getpid());
  hello.build = "worker_test_host";
  hello.kernel_level = std::string(selected_kernels().variant);
  hello.model_path = argv[1];
  hello.limits = service.limits();
  hello.n_embd = service.n_embd();
  hello.kv_capacity_bytes = service.kv_capacity_bytes();
  const Status served = worker::serve_front(kFrontFd, service, hello, [](const std::string&) {
    return Result<std::shared_ptr<constrain::TokenMasker>>(
        Status(ErrorCode::kInvalidArgument, "this test worker compiles no constraints"));
  });
  if (!served.ok()) return fail("serve", served);
  return 0;
}
