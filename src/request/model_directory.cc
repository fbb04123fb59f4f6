// SPDX-License-Identifier: Apache-2.0
#include "request/model_directory.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "base/echo.h"
#include "format/model_file.h"
#include "model/arch/architecture.h"

namespace synapse::request {
namespace {

using Clock = std::chrono::steady_clock;

// "name:tag" and "name" name the same model when the tag is "latest" (Ollama's rule).
bool same_name(std::string_view a, std::string_view b) {
  if (a == b) return true;
  constexpr std::string_view kLatest = ":latest";
  if (a.ends_with(kLatest) && a.substr(0, a.size() - kLatest.size()) == b) return true;
  return b.ends_with(kLatest) && b.substr(0, b.size() - kLatest.size()) == a;
}

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

// Prometheus text of several services merged into one exposition: each metric family once (its
// HELP and TYPE lines, then the samples of every model), every sample labelled with its model.
std::string merge_metrics(const std::vector<std::pair<std::string, std::string>>& by_model) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, std::string>> families;  // headers, samples
  for (const auto& [model, text] : by_model) {
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      if (line.empty()) continue;
      const bool header = line.starts_with("# ");
      // "# HELP name ..." / "# TYPE name ...", or "name{labels} value" / "name value".
      const size_t name_at = header ? line.find(' ', 2) + 1 : 0;
      const size_t name_end = line.find_first_of("{ ", name_at);
      std::string family = line.substr(name_at, name_end - name_at);
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (!header && family.ends_with(suffix) && families.count(family) == 0) {
          const std::string base = family.substr(0, family.size() - std::strlen(suffix));
          if (families.count(base) != 0) family = base;
        }
      }
      if (families.count(family) == 0) order.push_back(family);
      auto& [headers, samples] = families[family];
      if (header) {
        if (headers.find(line) == std::string::npos) headers += line + "\n";
        continue;
      }
      const std::string label = "model=\"" + model + "\"";
      if (line[name_end] == '{') {
        samples += line.substr(0, name_end + 1) + label + (line[name_end + 1] == '}' ? "" : ",") +
                   line.substr(name_end + 1) + "\n";
      } else {
        samples += line.substr(0, name_end) + "{" + label + "}" + line.substr(name_end) + "\n";
      }
    }
  }
  std::string out;
  for (const std::string& family : order) out += families[family].first + families[family].second;
  return out;
}

}  // namespace

std::string_view served_kind_name(ServedKind kind) {
  switch (kind) {
    case ServedKind::kGeneration:
      return "generation";
    case ServedKind::kEmbedding:
      return "embedding";
    case ServedKind::kRerank:
      return "rerank";
  }
  return "generation";
}

Result<ServedKind> probe_served_kind(const std::string& path) {
  SYN_ASSIGN_OR_RETURN(const std::unique_ptr<ModelFile> file, open_model_file(path));
  SYN_ASSIGN_OR_RETURN(const HParams hp, read_model_hparams(file->metadata()));
  if (hp.kind == ModelKind::kDecoder) return ServedKind::kGeneration;
  return hp.pooling == PoolingType::kRank ? ServedKind::kRerank : ServedKind::kEmbedding;
}

Result<KeepAlive> parse_keep_alive(std::string_view text) {
  const auto bad = [&] {
    return Status(ErrorCode::kInvalidValue,
                  "keep_alive must be a duration (\"5m\", \"30s\", \"1h\") or seconds; \"" +
                      clip_for_echo(text) + "\" is neither",
                  ErrorWhere{.field = "keep_alive"});
  };
  std::string_view rest = text;
  const bool negative = rest.starts_with('-');
  if (negative) rest.remove_prefix(1);
  if (rest.empty()) return bad();
  double total_ms = 0.0;
  bool units = false;
  while (!rest.empty()) {
    size_t digits = 0;
    while (digits < rest.size() &&
           (std::isdigit(static_cast<unsigned char>(rest[digits])) != 0 || rest[digits] == '.')) {
      ++digits;
    }
    if (digits == 0 || digits > 12) return bad();
    const double value = std::strtod(std::string(rest.substr(0, digits)).c_str(), nullptr);
    rest.remove_prefix(digits);
    double unit_ms = 1000.0;  // a bare number is seconds
    if (rest.starts_with("ms")) {
      unit_ms = 1.0, rest.remove_prefix(2);
    } else if (rest.starts_with('h')) {
      unit_ms = 3600e3, rest.remove_prefix(1);
    } else if (rest.starts_with('m')) {
      unit_ms = 60e3, rest.remove_prefix(1);
    } else if (rest.starts_with('s')) {
      rest.remove_prefix(1);
    } else if (!rest.empty() || units) {
      return bad();  // "5m30" or "5x"
    }
    units = true;
    total_ms += value * unit_ms;
  }
  if (negative) return KeepAlive(-1);
  return KeepAlive(static_cast<int64_t>(std::min(total_ms, 1e15)));
}

uint64_t default_memory_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{8} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) / 4 * 3;
}

struct ModelDirectory::State {
  struct Entry {
    ModelSource source;
    ModelHandle pinned;                       // given loaded (add)
    std::shared_ptr<ModelInstance> instance;  // loaded on demand
    bool loading = false;
    size_t requests = 0;  // handles alive
    Clock::time_point last_used{};
    std::optional<KeepAlive> keep_alive;  // the last request's, else the source's
    bool removed = false;                 // no longer served (remove_source)
    // What it held when it was last loaded (its KV cache's limit beside the file); 0 before
    // its first load, when only the file's size is known.
    uint64_t loaded_bytes = 0;
    bool loaded() const { return pinned != nullptr || instance != nullptr; }
    // The memory it holds, or will need to be loaded.
    uint64_t needs() const {
      return instance ? instance->bytes : loaded_bytes != 0 ? loaded_bytes : source.bytes;
    }
  };
  // Entries are shared so that one outlives its removal while a request still refers to it.
  using EntryPtr = std::shared_ptr<Entry>;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<EntryPtr> entries;
  ModelLoader loader;
  DirectoryOptions options;
  bool stopping = false;
  std::thread reaper;

  KeepAlive keep_alive_of(const Entry& e) const {
    return e.keep_alive.value_or(e.source.keep_alive.value_or(options.keep_alive));
  }

  EntryPtr lookup(std::string_view name) {
    if (entries.empty()) return nullptr;
    if (name.empty()) return entries.front();
    for (const EntryPtr& e : entries) {
      if (same_name(e->source.name, name)) return e;
      for (const std::string& alias : e->source.aliases) {
        if (same_name(alias, name)) return e;
      }
    }
    return nullptr;
  }

  Status not_found(std::string_view name) const {
    if (entries.empty()) return Status(ErrorCode::kModelNotFound, "this server serves no model");
    std::string served;
    for (const EntryPtr& e : entries) {
      served += (served.empty() ? "'" : ", '") + e->source.name + "'";
    }
    return Status(
        ErrorCode::kModelNotFound,
        "the model '" + clip_for_echo(name) + "' does not exist; this server serves " + served,
        ErrorWhere{.field = "model"});
  }

  // A handle that counts a request on `e` until it is destroyed.
  ModelHandle handle(const std::shared_ptr<State>& self, const EntryPtr& e) {
    ++e->requests;
    e->last_used = Clock::now();
    const ServedModel* served = e->pinned ? e->pinned.get() : &e->instance->served;
    std::shared_ptr<const void> keep = e->pinned ? std::shared_ptr<const void>(e->pinned)
                                                 : std::shared_ptr<const void>(e->instance);
    return ModelHandle(served, [self, keep, e](const ServedModel*) mutable {
      {
        std::lock_guard lock(self->mu);
        if (e->requests > 0) --e->requests;
        e->last_used = Clock::now();
      }
      self->cv.notify_all();
      keep.reset();  // outside the lock: the last owner of an unloaded model stops it here
    });
  }

  // What the loaded (and loading) models other than `except` hold, how many they are, and the
  // least recently used idle one (none: every one is busy or loading).
  struct Usage {
    uint64_t bytes = 0;
    size_t count = 0;
    Entry* lru_idle = nullptr;
  };
  Usage usage(const Entry* except) {
    Usage u;
    for (const EntryPtr& p : entries) {
      Entry& other = *p;
      if (&other == except || !(other.loaded() || other.loading)) continue;
      u.bytes += other.needs();
      ++u.count;
      const bool idle = other.instance && other.requests == 0 && !other.loading;
      if (idle && (u.lru_idle == nullptr || other.last_used < u.lru_idle->last_used)) {
        u.lru_idle = &other;
      }
    }
    return u;
  }
  // Takes `e`'s instance out (destroyed by the caller once the lock is released).
  static void unload(Entry& e, std::vector<std::shared_ptr<ModelInstance>>& unloaded) {
    unloaded.push_back(std::move(e.instance));
    e.keep_alive.reset();
  }

  // Unloads idle models, least recently used first, until `e` fits beside what stays. Waits
  // (until `deadline`) for busy models to go idle. The unloaded instances go to `unloaded`, to be
  // destroyed once the lock is released.
  Status make_room(Entry& e, std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
                   std::vector<std::shared_ptr<ModelInstance>>& unloaded) {
    const uint64_t budget = options.max_memory_bytes;
    if (e.needs() > budget) {
      return Status(ErrorCode::kLimitExceeded,
                    "the model '" + e.source.name + "' needs " + std::to_string(e.needs()) +
                        " bytes; the server's memory budget (--max-memory) is " +
                        std::to_string(budget),
                    ErrorWhere{.field = "model"});
    }
    for (;;) {
      const Usage others = usage(&e);
      const bool fits = others.bytes + e.needs() <= budget &&
                        (options.max_loaded == 0 || others.count + 1 <= options.max_loaded);
      if (fits) return ok_status();
      if (others.lru_idle != nullptr) {
        unload(*others.lru_idle, unloaded);
        continue;
      }
      if (stopping || cv.wait_until(lock, deadline) == std::cv_status::timeout) {
        return Status(ErrorCode::kUnavailable,
                      "cannot load the model '" + e.source.name +
                          "': the models loaded are busy and no memory is free for it (see "
                          "--max-memory and --max-loaded); retry later");
      }
    }
  }

  // Unloads idle models, least recently used first, while the loaded ones pass the budget (a
  // model that turned out larger than its file once loaded).
  void trim(std::vector<std::shared_ptr<ModelInstance>>& unloaded) {
    for (;;) {
      const Usage all = usage(nullptr);
      if (all.bytes <= options.max_memory_bytes || all.lru_idle == nullptr) return;
      unload(*all.lru_idle, unloaded);
    }
  }

  // Unloads models idle past their keep-alive; runs until stopping.
  void reap() {
    std::unique_lock lock(mu);
    while (!stopping) {
      std::vector<std::shared_ptr<ModelInstance>> expired;
      const auto now = Clock::now();
      for (const EntryPtr& p : entries) {
        Entry& e = *p;
        if (!e.instance || e.requests > 0 || e.loading) continue;
        const KeepAlive keep = keep_alive_of(e);
        if (keep.count() >= 0 && now - e.last_used >= keep) unload(e, expired);
      }
      // A model loaded while the one it should have replaced was still busy (its size beyond
      // its file known only once loaded) leaves the budget exceeded until that one is idle.
      trim(expired);
      if (!expired.empty()) {
        lock.unlock();
        expired.clear();  // stops their services, outside the lock
        lock.lock();
        continue;
      }
      cv.wait_for(lock, std::chrono::milliseconds(250));
    }
  }
};

ModelDirectory::ModelDirectory() : state_(std::make_shared<State>()) {}

ModelDirectory::~ModelDirectory() {
  std::vector<std::shared_ptr<ModelInstance>> loaded;
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
    for (const State::EntryPtr& e : state_->entries) {
      if (e->instance) loaded.push_back(std::move(e->instance));
    }
  }
  state_->cv.notify_all();
  if (state_->reaper.joinable()) state_->reaper.join();
}

void ModelDirectory::add(ModelHandle model, ServedKind kind) {
  std::lock_guard lock(state_->mu);
  auto e = std::make_shared<State::Entry>();
  e->source.name = model->id;
  e->source.kind = kind;
  e->source.created = model->created != 0 ? model->created : unix_now();
  e->pinned = std::move(model);
  state_->entries.push_back(std::move(e));
}

void ModelDirectory::set_loader(ModelLoader loader, DirectoryOptions options) {
  if (options.max_memory_bytes == 0) options.max_memory_bytes = default_memory_budget();
  std::lock_guard lock(state_->mu);
  state_->loader = std::move(loader);
  state_->options = options;
  if (!state_->reaper.joinable())
    state_->reaper = std::thread([state = state_.get()] { state->reap(); });
}

void ModelDirectory::add_source(ModelSource source) {
  std::lock_guard lock(state_->mu);
  auto e = std::make_shared<State::Entry>();
  if (source.created == 0) source.created = unix_now();
  e->source = std::move(source);
  state_->entries.push_back(std::move(e));
}

Result<ModelHandle> ModelDirectory::find(std::string_view name,
                                         std::optional<KeepAlive> keep_alive) const {
  State& s = *state_;
  std::unique_lock lock(s.mu);
  const State::EntryPtr e = s.lookup(name);
  if (e == nullptr) return s.not_found(name);
  if (keep_alive) e->keep_alive = keep_alive;
  if (e->pinned) return s.handle(state_, e);
  const auto deadline = Clock::now() + s.options.load_wait;
  for (;;) {
    if (s.stopping) return Status(ErrorCode::kUnavailable, "the server is shutting down");
    if (e->removed) return s.not_found(name);
    if (e->instance) return s.handle(state_, e);
    if (!e->loading) break;
    if (s.cv.wait_until(lock, deadline) == std::cv_status::timeout) {
      return Status(ErrorCode::kUnavailable,
                    "the model '" + e->source.name + "' is still loading; retry later");
    }
  }
  if (!s.loader) return Status(ErrorCode::kInternal, "no loader for '" + e->source.name + "'");
  e->loading = true;
  std::vector<std::shared_ptr<ModelInstance>> unloaded;
  Status room = s.make_room(*e, lock, deadline, unloaded);
  const ModelSource source = e->source;
  lock.unlock();
  unloaded.clear();  // their services stop before the new model takes the memory
  Result<std::unique_ptr<ModelInstance>> loaded =
      room.ok() ? s.loader(source) : Result<std::unique_ptr<ModelInstance>>(room);
  lock.lock();
  e->loading = false;
  s.cv.notify_all();
  if (!loaded.ok()) return loaded.status();
  if (e->removed) return s.not_found(name);  // removed while it loaded: the load is dropped
  (*loaded)->served.created = source.created;
  e->source.kind = (*loaded)->kind;
  // What the model holds once loaded (its KV cache's limit beside its weights) is what it
  // needs from now on; idle models make room for the difference.
  e->loaded_bytes = (*loaded)->bytes;
  e->instance = std::shared_ptr<ModelInstance>(std::move(*loaded));
  ModelHandle handle = s.handle(state_, e);
  s.trim(unloaded);
  lock.unlock();
  unloaded.clear();
  return handle;
}

Status ModelDirectory::add_alias(std::string_view name, std::string alias) {
  std::lock_guard lock(state_->mu);
  const State::EntryPtr e = state_->lookup(name);
  if (e == nullptr || name.empty()) return state_->not_found(name);
  if (state_->lookup(alias) == nullptr) e->source.aliases.push_back(std::move(alias));
  return ok_status();
}

Status ModelDirectory::remove_source(std::string_view name) {
  std::shared_ptr<ModelInstance> unloaded;
  {
    std::lock_guard lock(state_->mu);
    const State::EntryPtr e = state_->lookup(name);
    if (e == nullptr || name.empty()) return state_->not_found(name);
    // One of several names goes alone; the model stays under the others.
    const auto alias = std::find_if(e->source.aliases.begin(), e->source.aliases.end(),
                                    [&](const std::string& a) { return same_name(a, name); });
    if (alias != e->source.aliases.end() && !same_name(e->source.name, name)) {
      e->source.aliases.erase(alias);
      return ok_status();
    }
    e->removed = true;
    unloaded = std::move(e->instance);  // requests in flight keep it until they end
    std::erase(state_->entries, e);
  }
  state_->cv.notify_all();
  return ok_status();
}

Status ModelDirectory::unload(std::string_view name) const {
  {
    std::lock_guard lock(state_->mu);
    const State::EntryPtr e = state_->lookup(name);
    if (e == nullptr) return state_->not_found(name);
    if (!e->pinned) e->keep_alive = KeepAlive(0);
  }
  state_->cv.notify_all();
  return ok_status();
}

std::vector<ModelListing> ModelDirectory::list() const {
  std::lock_guard lock(state_->mu);
  std::vector<ModelListing> out;
  const auto now = Clock::now();
  for (const State::EntryPtr& p : state_->entries) {
    const State::Entry& e = *p;
    ModelListing m;
    m.name = e.source.name;
    m.aliases = e.source.aliases;
    m.kind = e.source.kind;
    m.path = e.source.path;
    m.digest = e.source.digest;
    m.bytes = e.needs();
    m.file_bytes = e.source.bytes;
    m.created = e.source.created;
    m.loaded = e.loaded();
    m.pinned = e.pinned != nullptr;
    m.requests = e.requests;
    const ServedModel* served = e.pinned     ? e.pinned.get()
                                : e.instance ? &e.instance->served
                                             : nullptr;
    if (served != nullptr && served->service != nullptr) {
      m.n_ctx = served->service->n_ctx();
      m.chat_template = served->chat_template.has_value();
      m.worker = served->service->worker();
    }
    if (e.instance && e.requests == 0) {
      m.idle_s = std::chrono::duration<double>(now - e.last_used).count();
      const KeepAlive keep = state_->keep_alive_of(e);
      if (keep.count() >= 0) {
        m.expires_at =
            unix_now() + std::chrono::duration_cast<std::chrono::seconds>(
                             keep - std::chrono::duration_cast<KeepAlive>(now - e.last_used))
                             .count();
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<api::ModelInfo> ModelDirectory::model_infos() const {
  std::vector<api::ModelInfo> out;
  for (const ModelListing& m : list()) {
    api::ModelInfo info{m.name, m.created, "synapse"};
    info.kind = std::string(served_kind_name(m.kind));
    info.loaded = m.loaded;
    info.bytes = m.bytes;
    info.requests = m.requests;
    info.idle_s = m.idle_s;
    info.expires_at = m.expires_at;
    if (m.worker) {
      info.worker = api::WorkerInfo{.pid = m.worker->pid,
                                    .state = m.worker->state,
                                    .crashes = m.worker->crashes,
                                    .restarts = m.worker->restarts,
                                    .quarantined = m.worker->quarantined};
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string ModelDirectory::render_prometheus() const {
  std::vector<std::pair<std::string, std::string>> by_model;
  {
    std::lock_guard lock(state_->mu);
    for (const State::EntryPtr& e : state_->entries) {
      const ServedModel* m = e->pinned     ? e->pinned.get()
                             : e->instance ? &e->instance->served
                                           : nullptr;
      if (m != nullptr && m->service != nullptr) {
        by_model.emplace_back(e->source.name, m->service->render_prometheus());
      }
    }
  }
  if (by_model.size() == 1 && state_->entries.size() == 1) return by_model.front().second;
  return merge_metrics(by_model);
}

void ModelDirectory::shutdown(std::chrono::milliseconds grace) {
  std::vector<serve::ModelService*> services;
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
    for (const State::EntryPtr& e : state_->entries) {
      const ServedModel* m = e->pinned     ? e->pinned.get()
                             : e->instance ? &e->instance->served
                                           : nullptr;
      if (m != nullptr && m->service != nullptr) services.push_back(m->service);
    }
  }
  state_->cv.notify_all();
  std::vector<std::thread> stopping;
  for (serve::ModelService* service : services) {
    stopping.emplace_back([service, grace] { service->shutdown(grace); });
  }
  for (std::thread& t : stopping) t.join();
}

}  // namespace synapse::request
