// SPDX-License-Identifier: Apache-2.0
// `synapse models import|list|show|rm|gc`: the model store. Import prepares a GGUF (or copies a
// package) into content-addressed storage under a name, also straight from Ollama's blobs
// (--from-ollama); list --discover shows the GGUFs other tools keep on this machine; rm refuses
// (or waits, --wait) while a running process holds the model; gc deletes what has had no name for
// a grace period, and partial downloads of pulls interrupted more than a week ago.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "format/package/package_file.h"
#include "hub/local_models.h"
#include "hub/pull.h"
#include "store/model_store.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Options {
  std::string store;
  bool json = false;
  // import
  std::string path;
  std::string name;
  std::string from_ollama;         // an Ollama model name instead of a path
  uint64_t crash_after_bytes = 0;  // hidden: abort() mid-import (crash-safety tests)
  // list
  bool discover = false;
  // show, rm
  std::string ref;
  double wait_seconds = 0;
  // gc
  double grace_seconds = 3600;
  bool dry_run = false;
};

std::string date_text(int64_t unix_seconds) {
  const std::time_t t = unix_seconds;
  std::tm local{};
  localtime_r(&t, &local);
  return fmt::format("{:%Y-%m-%d %H:%M}", local);
}

std::string short_digest(const std::string& digest) { return digest.substr(0, 12); }

Json model_json(const StoredModel& m) {
  Json j = {{"digest", m.digest},
            {"aliases", m.aliases},
            {"path", m.path},
            {"bytes", m.bytes},
            {"architecture", m.architecture},
            {"source_name", m.source_name},
            {"source_sha256", m.source_sha256},
            {"graph_sha256", m.graph_hash},
            {"imported_at", m.imported_at},
            {"unreferenced_since", nullptr},
            {"lease_holders", m.lease_holders}};
  if (m.unreferenced_since) j["unreferenced_since"] = *m.unreferenced_since;
  return j;
}

void print_json(const Json& j) { std::printf("%s\n", j.dump(2).c_str()); }

int run_import(ModelStore& store, const Options& given) {
  Options o = given;
  if (!o.from_ollama.empty() && !o.path.empty()) {
    return fail(Status(ErrorCode::kInvalidArgument, "give a path or --from-ollama, not both",
                       ErrorWhere{.field = "from-ollama"}));
  }
  if (!o.from_ollama.empty()) {
    const Result<hub::LocalModel> found =
        hub::find_ollama_model(hub::HubConfig::from_environment(), o.from_ollama);
    if (!found.ok()) return fail(found.status());
    o.path = found->path;
    if (o.name.empty()) o.name = found->name;  // Ollama's name, "llama3.2:latest"
  } else if (o.path.empty()) {
    return fail(Status(ErrorCode::kInvalidArgument, "name a file to import, or --from-ollama NAME",
                       ErrorWhere{.field = "path"}));
  }
  StageProgress progress(o.path);
  ImportOptions options;
  options.name = o.name;
  options.created_by = created_by();
  options.progress = [&](std::string_view stage, uint64_t done, uint64_t total) {
    if (o.crash_after_bytes > 0 && stage == "converting" && done >= o.crash_after_bytes) {
      std::fprintf(stderr, "crashing on purpose after %llu bytes (--crash-after-bytes)\n",
                   static_cast<unsigned long long>(done));
      std::abort();
    }
    progress.update(stage, done, total);
  };
  const Result<ImportResult> imported = store.import(o.path, options);
  progress.finish();
  if (!imported.ok()) return fail(imported.status());
  const StoredModel& m = imported->model;
  if (o.json) {
    Json j = {{"name", imported->name},
              {"already_stored", imported->already_stored},
              {"previous_digest", nullptr},
              {"model", model_json(m)}};
    if (!imported->previous_digest.empty()) j["previous_digest"] = imported->previous_digest;
    print_json(j);
    return kExitOk;
  }
  std::printf("%s %s as '%s' (sha256:%s, %s)\n",
              imported->already_stored ? "already stored:" : "imported", o.path.c_str(),
              imported->name.c_str(), short_digest(m.digest).c_str(), human_bytes(m.bytes).c_str());
  if (!imported->previous_digest.empty()) {
    std::printf("'%s' pointed to sha256:%s before; if nothing else names it, gc will delete it\n",
                imported->name.c_str(), short_digest(imported->previous_digest).c_str());
  }
  return kExitOk;
}

// GGUFs in the Hugging Face cache, llama.cpp's cache and Ollama's models directory.
int run_discover(const Options& o) {
  const hub::HubConfig config = hub::HubConfig::from_environment();
  const std::vector<hub::LocalModel> found = hub::discover_local_models(config);
  if (o.json) {
    Json all = Json::array();
    for (const hub::LocalModel& m : found) {
      all.push_back({{"name", m.name},
                     {"path", m.path},
                     {"bytes", m.bytes},
                     {"source", m.source},
                     {"sha256", m.sha256}});
    }
    print_json({{"searched",
                 {{"huggingface", config.hub_cache},
                  {"llama.cpp", config.llama_cache},
                  {"ollama", config.ollama_models}}},
                {"models", all}});
    return kExitOk;
  }
  if (found.empty()) {
    std::printf("no GGUF files in %s, %s or %s\n", config.hub_cache.c_str(),
                config.llama_cache.c_str(), config.ollama_models.c_str());
    return kExitOk;
  }
  std::printf("%-48s %10s  %-11s %s\n", "NAME", "SIZE", "FOUND IN", "PATH");
  for (const hub::LocalModel& m : found) {
    std::printf("%-48s %10s  %-11s %s\n", m.name.c_str(), human_bytes(m.bytes).c_str(),
                m.source.c_str(), m.path.c_str());
  }
  std::printf("(synapse models import PATH --name NAME, or --from-ollama NAME, adds one)\n");
  return kExitOk;
}

int run_list(ModelStore& store, const Options& o) {
  if (o.discover) return run_discover(o);
  const auto models = store.list();
  if (!models.ok()) return fail(models.status());
  if (o.json) {
    Json all = Json::array();
    for (const StoredModel& m : *models) all.push_back(model_json(m));
    print_json({{"store", store.directory()}, {"models", all}});
    return kExitOk;
  }
  if (models->empty()) {
    std::printf("no models in %s (synapse models import FILE adds one)\n",
                store.directory().c_str());
    return kExitOk;
  }
  std::printf("%-32s %-12s %10s  %-8s %-16s %s\n", "NAME", "DIGEST", "SIZE", "ARCH", "IMPORTED",
              "STATE");
  for (const StoredModel& m : *models) {
    std::string state;
    if (!m.lease_holders.empty())
      state = fmt::format("in use ({} lease(s))", m.lease_holders.size());
    if (m.unreferenced_since) state += (state.empty() ? "" : ", ") + std::string("unreferenced");
    const std::vector<std::string> names =
        m.aliases.empty() ? std::vector<std::string>{"-"} : m.aliases;
    for (const std::string& name : names) {
      std::printf("%-32s %-12s %10s  %-8s %-16s %s\n", name.c_str(), short_digest(m.digest).c_str(),
                  human_bytes(m.bytes).c_str(), m.architecture.c_str(),
                  date_text(m.imported_at).c_str(), state.c_str());
    }
  }
  return kExitOk;
}

int run_show(ModelStore& store, const Options& o) {
  const auto found = store.find(o.ref);
  if (!found.ok()) return fail(found.status());
  const StoredModel& m = *found;
  const Result<PackageFile> package = PackageFile::open(m.path);
  if (o.json) {
    Json j = model_json(m);
    if (package.ok()) {
      j["tensors"] = package->tensors().size();
      j["package_version"] = package->header().version;
      j["created_by"] = std::string(package->source().created_by);
    } else {
      j["error"] = error_json(package.status());
    }
    print_json(j);
    return package.ok() ? kExitOk : kExitFailure;
  }
  std::string names;
  for (const std::string& a : m.aliases) names += (names.empty() ? "" : ", ") + a;
  std::printf("names         %s\n", names.empty() ? "(none: gc will delete it)" : names.c_str());
  std::printf("digest        sha256:%s\n", m.digest.c_str());
  std::printf("path          %s\n", m.path.c_str());
  std::printf("size          %s (%llu bytes)\n", human_bytes(m.bytes).c_str(),
              static_cast<unsigned long long>(m.bytes));
  std::printf("architecture  %s\n", m.architecture.c_str());
  std::printf("source        %s, sha256 %s\n", m.source_name.c_str(), m.source_sha256.c_str());
  std::printf("graph         sha256 %s\n", m.graph_hash.c_str());
  std::printf("imported      %s\n", date_text(m.imported_at).c_str());
  if (m.unreferenced_since) {
    std::printf("unreferenced  since %s\n", date_text(*m.unreferenced_since).c_str());
  }
  std::string holders;
  for (const int pid : m.lease_holders)
    holders += (holders.empty() ? "" : ", ") + std::to_string(pid);
  std::printf("in use by     %s\n", holders.empty() ? "nobody" : ("pid " + holders).c_str());
  if (!package.ok()) return fail(package.status());
  std::printf("package       v%u, %zu tensors, created by %s\n", package->header().version,
              package->tensors().size(), std::string(package->source().created_by).c_str());
  return kExitOk;
}

int run_remove(ModelStore& store, const Options& o) {
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(o.wait_seconds * 1000));
  const auto removed = store.remove(o.ref, {.wait = wait});
  if (!removed.ok()) return fail(removed.status());
  if (o.json) {
    Json j = {{"aliases_removed", removed->aliases_removed},
              {"blob_deleted", nullptr},
              {"bytes_freed", removed->bytes_freed}};
    if (removed->blob_deleted) j["blob_deleted"] = *removed->blob_deleted;
    print_json(j);
    return kExitOk;
  }
  std::string names;
  for (const std::string& a : removed->aliases_removed) names += (names.empty() ? "" : ", ") + a;
  if (removed->blob_deleted) {
    std::printf("removed %s and deleted sha256:%s (%s freed)\n",
                names.empty() ? "(no names)" : names.c_str(),
                short_digest(*removed->blob_deleted).c_str(),
                human_bytes(removed->bytes_freed).c_str());
  } else {
    std::printf("removed the name %s (the model keeps its other names)\n", names.c_str());
  }
  return kExitOk;
}

int run_gc(ModelStore& store, const Options& o) {
  const auto grace = std::chrono::seconds(static_cast<int64_t>(o.grace_seconds));
  const auto report = store.gc({.grace = grace, .dry_run = o.dry_run});
  if (!report.ok()) return fail(report.status());
  // Downloads `synapse pull` left when interrupted: resumable for a week, then leftovers.
  const auto partials =
      hub::remove_stale_partials(store.directory(), hub::kStalePartialAge, {}, o.dry_run);
  if (!partials.ok()) return fail(partials.status());
  if (o.json) {
    print_json({{"dry_run", o.dry_run},
                {"grace_seconds", grace.count()},
                {"marked", report->marked},
                {"unmarked", report->unmarked},
                {"deleted", report->deleted},
                {"kept_leased", report->kept_leased},
                {"missing_removed", report->missing_removed},
                {"stray_files_removed", report->stray_files_removed},
                {"stale_partials_removed", *partials},
                {"bytes_freed", report->bytes_freed}});
    return kExitOk;
  }
  const char* verb = o.dry_run ? "would delete" : "deleted";
  std::printf(
      "%s %zu model(s), %s; %zu newly unreferenced (deleted after %llds without a name); "
      "%zu kept while in use; %zu stray file(s), %zu lost entr%s, %zu stale partial download(s) "
      "cleaned\n",
      verb, report->deleted.size(), human_bytes(report->bytes_freed).c_str(), report->marked.size(),
      static_cast<long long>(grace.count()), report->kept_leased.size(),
      report->stray_files_removed.size(), report->missing_removed.size(),
      report->missing_removed.size() == 1 ? "y" : "ies", partials->size());
  return kExitOk;
}

}  // namespace

void add_models_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* models = app.add_subcommand("models", "The model store: import, list, show, rm, gc");
  models->require_subcommand(1);
  add_store_option(models, o->store);
  const auto with_store = [o, &exit_code](int (*run)(ModelStore&, const Options&)) {
    return [o, &exit_code, run] {
      Result<ModelStore> store = ModelStore::open(o->store);
      exit_code = store.ok() ? run(*store, *o) : fail(store.status());
    };
  };

  CLI::App* import = models->add_subcommand(
      "import", "Prepare a GGUF (or copy a package) into the store under a name");
  import->add_option("path", o->path, "GGUF or .synapse file");
  import->add_option("--from-ollama", o->from_ollama,
                     "Import Ollama's model NAME[:TAG] (tag default latest) from its blobs "
                     "($OLLAMA_MODELS, else ~/.ollama/models)");
  import->add_option("--name", o->name,
                     "Name to give it (default: the file name without extension)");
  import->add_flag("--json", o->json, "Print the result as JSON");
  import->add_option("--crash-after-bytes", o->crash_after_bytes)->group("");  // tests only
  import->callback(with_store(run_import));

  CLI::App* list = models->add_subcommand("list", "List the stored models and their names");
  list->add_flag("--json", o->json, "Print the result as JSON");
  list->add_flag("--discover", o->discover,
                 "List the GGUFs of the Hugging Face cache, llama.cpp's cache and Ollama instead");
  list->callback(with_store(run_list));

  CLI::App* show = models->add_subcommand("show", "Show one stored model");
  show->add_option("model", o->ref, "Name, digest or digest prefix")->required();
  show->add_flag("--json", o->json, "Print the result as JSON");
  show->callback(with_store(run_show));

  CLI::App* rm = models->add_subcommand(
      "rm", "Remove a name; the model itself goes with its last name, unless it is in use");
  rm->add_option("model", o->ref, "Name (removes that name) or digest (removes the model)")
      ->required();
  rm->add_option("--wait", o->wait_seconds,
                 "Wait up to this many seconds for processes using the model to finish");
  rm->add_flag("--json", o->json, "Print the result as JSON");
  rm->callback(with_store(run_remove));

  CLI::App* gc = models->add_subcommand(
      "gc",
      "Delete models that have had no name for the grace period, leftovers of crashes, and "
      "partial downloads of pulls interrupted more than a week ago");
  gc->add_option("--grace", o->grace_seconds,
                 "Seconds a model must have been without a name before it is deleted")
      ->capture_default_str();
  gc->add_flag("--dry-run", o->dry_run, "Say what would be deleted, delete nothing");
  gc->add_flag("--json", o->json, "Print the result as JSON");
  gc->callback(with_store(run_gc));
}

}  // namespace synapse::cli
