// SPDX-License-Identifier: Apache-2.0
// `synapse worker`: not a command for users. `synapse serve --isolate` starts one per model with
// a connected socket as its fd 3 and the serve options the model needs; the worker loads the
// model as `synapse serve` would in its own process, says hello (protocol, model, kernels,
// limits) and runs the model's Service for the front (worker/worker_host.h) until the front asks
// it to stop or goes away. Its stderr is the server's.
#include <unistd.h>

#include <cstdio>

#include "base/fail_point.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/serve_models.h"
#include "kernels/kernel_selection.h"
#include "request/output_constraints.h"
#include "worker/frame.h"
#include "worker/worker_host.h"

namespace synapse::cli {
namespace {

constexpr int kFrontFd = 3;

struct WorkerCommandOptions {
  ServeModelsOptions models;
  std::string name;
};

int run_worker(const WorkerCommandOptions& o) {
  if (o.models.models.size() != 1) {
    std::fprintf(stderr, "synapse worker: give exactly one -m MODEL\n");
    return kExitUsage;
  }
  request::ModelSource source;
  source.name = o.name;
  source.ref = o.models.models.front();
  const std::string drafted = o.models.draft.empty() ? std::string() : o.name;
  Result<std::unique_ptr<InProcessModel>> loaded =
      load_in_process(o.models, source, nullptr, drafted);
  if (!loaded.ok()) {
    std::fprintf(stderr, "synapse worker: %s: %s\n", o.name.c_str(),
                 loaded.status().to_string().c_str());
    return kExitFailure;
  }
  InProcessModel& model = **loaded;
  worker::Hello hello;
  hello.protocol = worker::kProtocolVersion;
  hello.pid = static_cast<int32_t>(::getpid());
  hello.build =
      std::string(build_info().version) + " (" + std::string(build_info().git_commit) + ")";
  hello.kernel_level = std::string(selected_kernels().variant);
  hello.model_path = model.loaded.resolved.path;
  if (model.loaded.resolved.lease) hello.model_digest = model.loaded.resolved.lease->digest();
  hello.limits = model.service->limits();
  hello.n_embd = model.service->n_embd();
  hello.kv_capacity_bytes = model.service->kv_capacity_bytes();
  request::OutputConstraints& constraints = *model.served.constraints;
  const Status served = worker::serve_front(
      kFrontFd, *model.service, hello,
      [&constraints](const std::string& recipe) { return constraints.compile_recipe(recipe); });
  if (!served.ok()) {
    std::fprintf(stderr, "synapse worker: %s: %s\n", o.name.c_str(), served.to_string().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_worker_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<WorkerCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "worker", "Run one model for `synapse serve --isolate` (started by the server)");
  cmd->group("");  // not listed: users never start it
  add_serve_model_options(cmd, options->models);
  cmd->add_option("--name", options->name, "The model's id in the server")->required();
  cmd->callback([options, &exit_code] { exit_code = run_worker(*options); });
}

}  // namespace synapse::cli
