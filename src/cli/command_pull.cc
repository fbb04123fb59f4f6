// SPDX-License-Identifier: Apache-2.0
// `synapse pull hf.co/ORG/REPO[:TAG]`: a GGUF from the Hugging Face hub into the model store,
// verified by its SHA-256 before it enters (hub/pull.h does the work). A progress bar with rate
// and ETA on a terminal, nothing but the result otherwise.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "hub/pull.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Options {
  hub::PullRequest request;
  bool json = false;
  uint64_t crash_after_bytes = 0;  // hidden: SIGKILL itself mid-download (resume tests)
};

// Draws the pull's events: a byte bar per file, a stage line for the import, status text else.
class PullDisplay {
 public:
  void operator()(const hub::PullProgress& event) {
    if (event.status.starts_with("importing")) {
      end_bar();
      import_.update(event.status, event.completed, event.total);
      return;
    }
    const bool counted = event.total > 0 && !event.digest.empty();
    if (counted) {
      if (event.status != bar_status_) {
        end_bar();
        bar_status_ = event.status;
        bar_ =
            std::make_unique<ProgressLine>(event.status, event.total, stderr, ProgressUnit::kBytes);
      }
      bar_->update(event.completed);
      return;
    }
    if (event.status == status_) return;
    end_bar();
    import_.finish();
    status_ = event.status;
    if (interactive_ && event.status != "success") std::fprintf(stderr, "%s\n", status_.c_str());
  }
  void end_bar() {
    if (bar_ != nullptr) bar_->finish();
    bar_.reset();
    bar_status_.clear();
  }
  void finish() {
    end_bar();
    import_.finish();
  }

 private:
  bool interactive_ = ::isatty(::fileno(stderr)) == 1;
  std::string status_;
  std::string bar_status_;
  std::unique_ptr<ProgressLine> bar_;
  StageProgress import_{"import"};
};

int run_pull(const Options& o) {
  PullDisplay display;
  const auto on_progress = [&](const hub::PullProgress& event) {
    if (o.crash_after_bytes > 0 && event.status.starts_with("pulling ") && !event.digest.empty() &&
        event.completed >= o.crash_after_bytes) {
      std::fprintf(stderr, "crashing on purpose after %llu bytes (--crash-after-bytes)\n",
                   static_cast<unsigned long long>(event.completed));
      std::fflush(stderr);
      ::kill(::getpid(), SIGKILL);  // a real crash: no destructor, no cleanup
    }
    display(event);
  };
  const Result<hub::PullResult> pulled = hub::pull_model(o.request, on_progress, nullptr);
  display.finish();
  if (!pulled.ok()) return fail(pulled.status());
  if (o.json) {
    std::printf("%s\n", Json({{"name", pulled->name},
                              {"repo", pulled->repo},
                              {"commit", pulled->commit},
                              {"files", pulled->files},
                              {"sha256", pulled->sha256},
                              {"bytes", pulled->bytes},
                              {"source", pulled->source},
                              {"digest", pulled->model.digest}})
                            .dump(2)
                            .c_str());
    return kExitOk;
  }
  const char* how = pulled->source == "store"               ? "already in the store"
                    : pulled->source == "huggingface-cache" ? "from the Hugging Face cache"
                                                            : "downloaded";
  std::printf("pulled %s (sha256:%s, %s, %s)\n", pulled->name.c_str(),
              pulled->model.digest.substr(0, 12).c_str(), human_bytes(pulled->bytes).c_str(), how);
  return kExitOk;
}

}  // namespace

void add_pull_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "pull", "Download a GGUF from the Hugging Face hub into the store (hf.co/ORG/REPO[:TAG])");
  cmd->add_option("model", o->request.model,
                  "hf.co/ORG/REPO[:TAG] (also huggingface.co/..., hf://..., ORG/REPO); the tag "
                  "picks a quantization (default Q4_K_M, then the documented order)")
      ->required();
  cmd->add_option("--file", o->request.file, "An exact file of the repository instead of a tag");
  cmd->add_option("--revision", o->request.revision, "Branch, tag or commit")
      ->capture_default_str();
  cmd->add_option("--name", o->request.name, "Store name (default: hf.co/ORG/REPO:TAG)");
  add_store_option(cmd, o->request.store_directory);
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->add_option("--crash-after-bytes", o->crash_after_bytes)->group("");  // tests only
  cmd->callback([o, &exit_code] {
    o->request.created_by = created_by();
    exit_code = run_pull(*o);
  });
}

}  // namespace synapse::cli
