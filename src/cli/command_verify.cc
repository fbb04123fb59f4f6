// SPDX-License-Identifier: Apache-2.0
// `synapse verify MODEL [--json]`: checks every checksum of a package (header, manifest and
// tensor table at open, then every tensor's data and every padding byte), names the first damaged
// tensor, and says how fast it read.
#include <chrono>
#include <cstdio>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "store/model_ref.h"

namespace synapse::cli {
namespace {

struct Options {
  std::string model;
  std::string store;
  bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run(const Options& o) {
  nlohmann::ordered_json out = {{"file", o.model}};
  const auto report_failure = [&](const Status& status) {
    if (o.json) {
      out["ok"] = false;
      out["error"] = error_json(status);
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::printf("DAMAGED  %s: %s\n", o.model.c_str(), status.to_string().c_str());
    }
    return kExitFailure;
  };
  const Result<ResolvedModel> model = resolve_model(o.model, {.store_directory = o.store});
  if (!model.ok()) return fail(model.status());
  out["path"] = model->path;
  if (sniff_model_format(model->path) != "synapse") {
    return fail(Status(ErrorCode::kInvalidArgument,
                       "not a package: GGUF files carry no checksums (synapse inspect validates "
                       "their structure; synapse convert makes a package)",
                       ErrorWhere{.path = model->path}));
  }
  const auto start = std::chrono::steady_clock::now();
  const Result<PackageFile> package = PackageFile::open(model->path);
  const double open_seconds = seconds_since(start);
  if (!package.ok()) return report_failure(package.status());
  StageProgress progress(model->label);
  const auto verify_start = std::chrono::steady_clock::now();
  const auto verified = verify_package(*package, {.progress = [&](uint64_t done, uint64_t total) {
    progress.update("verifying", done, total);
  }});
  const double seconds = seconds_since(verify_start);
  progress.finish();
  if (!verified.ok()) return report_failure(verified.status());
  const double rate = megabytes_per_second(verified->bytes_checked, seconds);
  if (o.json) {
    out["ok"] = true;
    out["tensors_checked"] = verified->tensors_checked;
    out["bytes_checked"] = verified->bytes_checked;
    out["open_ms"] = open_seconds * 1e3;
    out["seconds"] = seconds;
    out["mb_per_s"] = rate;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf(
        "OK  %s: header, manifest and tensor table checksums valid (opened in %.1f ms); "
        "%zu tensors, %s checked in %.2f s (%.1f MB/s)\n",
        model->label.c_str(), open_seconds * 1e3, verified->tensors_checked,
        human_bytes(verified->bytes_checked).c_str(), seconds, rate);
  }
  return kExitOk;
}

}  // namespace

void add_verify_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check every checksum of a package and name the first damaged tensor");
  cmd->add_option("model", o->model, "Package file, or a stored model's name or digest")
      ->required();
  add_store_option(cmd, o->store);
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace synapse::cli
