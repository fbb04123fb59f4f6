// SPDX-License-Identifier: Apache-2.0
// The model directory's loading rules with a fake loader (instances without a service): load on
// first use, one load for concurrent requests, least-recently-used eviction under the memory
// budget and the count limit, never evicting a model a request holds, keep-alive expiry, names.
#include "request/model_directory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

namespace synapse::request {
namespace {

using namespace std::chrono_literals;

// Counts loads and unloads per model; an instance announces its end when destroyed.
struct Ledger {
  std::mutex mu;
  uint64_t kv_bytes = 0;  // what each loaded instance holds beyond its file (a KV cache)
  std::map<std::string, int> loads;
  std::map<std::string, int> unloads;
  std::chrono::milliseconds load_time{0};
  int loads_of(const std::string& name) {
    std::lock_guard lock(mu);
    return loads[name];
  }
  int unloads_of(const std::string& name) {
    std::lock_guard lock(mu);
    return unloads[name];
  }
};

struct FakeInstance : ModelInstance {
  std::shared_ptr<Ledger> ledger;
  ~FakeInstance() override {
    std::lock_guard lock(ledger->mu);
    ++ledger->unloads[served.id];
  }
};

ModelLoader fake_loader(const std::shared_ptr<Ledger>& ledger) {
  return [ledger](const ModelSource& source) -> Result<std::unique_ptr<ModelInstance>> {
    std::this_thread::sleep_for(ledger->load_time);
    auto instance = std::make_unique<FakeInstance>();
    instance->ledger = ledger;
    instance->served.id = source.name;
    instance->bytes = source.bytes + ledger->kv_bytes;
    instance->kind = source.kind;
    std::lock_guard lock(ledger->mu);
    ++ledger->loads[source.name];
    return std::unique_ptr<ModelInstance>(std::move(instance));
  };
}

ModelSource source(std::string name, uint64_t bytes) {
  ModelSource s;
  s.name = std::move(name);
  s.ref = s.name;
  s.bytes = bytes;
  return s;
}

DirectoryOptions options(uint64_t budget, size_t max_loaded = 0) {
  DirectoryOptions o;
  o.max_memory_bytes = budget;
  o.max_loaded = max_loaded;
  o.load_wait = 300ms;
  return o;
}

bool loaded(const ModelDirectory& d, const std::string& name) {
  for (const ModelListing& m : d.list()) {
    if (m.name == name) return m.loaded;
  }
  return false;
}

TEST(ModelDirectory, LoadsOnFirstUseAndFindsByAliasAndTag) {
  auto ledger = std::make_shared<Ledger>();
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(1000));
  ModelSource a = source("llama:latest", 100);
  a.aliases = {"my-llama"};
  d.add_source(a);
  d.add_source(source("hf.co/org/repo:Q4_K_M", 100));
  EXPECT_FALSE(loaded(d, "llama:latest"));
  for (const char* name : {"llama", "llama:latest", "my-llama", "my-llama:latest", ""}) {
    Result<ModelHandle> h = d.find(name);
    ASSERT_TRUE(h.ok()) << name << ": " << h.status().to_string();
    EXPECT_EQ((*h)->id, "llama:latest");
  }
  EXPECT_EQ(ledger->loads_of("llama:latest"), 1);
  ASSERT_TRUE(d.find("hf.co/org/repo:Q4_K_M").ok());
  const Result<ModelHandle> missing = d.find("hf.co/org/repo");  // a tag other than latest
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kModelNotFound);
  EXPECT_EQ(missing.status().where().field, "model");
}

TEST(ModelDirectory, ConcurrentRequestsForAModelBeingLoadedShareOneLoad) {
  auto ledger = std::make_shared<Ledger>();
  ledger->load_time = 100ms;
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(1000));
  d.add_source(source("a", 100));
  std::vector<std::future<bool>> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(std::async(std::launch::async, [&d] { return d.find("a").ok(); }));
  }
  for (auto& f : waiting) EXPECT_TRUE(f.get());
  EXPECT_EQ(ledger->loads_of("a"), 1);
}

TEST(ModelDirectory, TheLeastRecentlyUsedIdleModelMakesRoom) {
  auto ledger = std::make_shared<Ledger>();
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(250));  // room for two of 100
  for (const char* name : {"a", "b", "c"}) d.add_source(source(name, 100));
  ASSERT_TRUE(d.find("a").ok());
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(d.find("b").ok());
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(d.find("a").ok());  // a is now more recent than b
  ASSERT_TRUE(d.find("c").ok());
  EXPECT_TRUE(loaded(d, "a"));
  EXPECT_FALSE(loaded(d, "b"));
  EXPECT_TRUE(loaded(d, "c"));
  EXPECT_EQ(ledger->unloads_of("b"), 1);
  EXPECT_EQ(ledger->unloads_of("a"), 0);
}

TEST(ModelDirectory, AModelWithARequestInFlightIsNeverUnloaded) {
  auto ledger = std::make_shared<Ledger>();
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(1000, /*max_loaded=*/1));
  d.add_source(source("a", 100));
  d.add_source(source("b", 100));
  Result<ModelHandle> held = d.find("a");  // a stream on a, say
  ASSERT_TRUE(held.ok());
  const Result<ModelHandle> refused = d.find("b");  // waits load_wait, then gives up
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(loaded(d, "a"));
  EXPECT_EQ(ledger->unloads_of("a"), 0);
  // Released while b waits: b loads in a's place.
  std::future<bool> b = std::async(std::launch::async, [&d] { return d.find("b").ok(); });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ((*held)->id, "a");  // still usable while held
  held = Status(ErrorCode::kCancelled, "released");
  EXPECT_TRUE(b.get());
  EXPECT_FALSE(loaded(d, "a"));
  EXPECT_EQ(ledger->unloads_of("a"), 1);
}

TEST(ModelDirectory, KeepAliveUnloadsIdleModels) {
  auto ledger = std::make_shared<Ledger>();
  ModelDirectory d;
  DirectoryOptions o = options(1000);
  o.keep_alive = 100ms;
  d.set_loader(fake_loader(ledger), o);
  d.add_source(source("short", 100));
  ModelSource kept = source("kept", 100);
  kept.keep_alive = KeepAlive(-1);
  d.add_source(kept);
  ASSERT_TRUE(d.find("short").ok());
  ASSERT_TRUE(d.find("kept").ok());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (loaded(d, "short") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(loaded(d, "short"));
  EXPECT_TRUE(loaded(d, "kept"));
  // A request's keep_alive replaces the model's: 0 unloads once it is idle.
  ASSERT_TRUE(d.find("kept", KeepAlive(0)).ok());
  while (loaded(d, "kept") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(loaded(d, "kept"));
}

// Two files of 400 fit a budget of 1000; each holding 200 more once loaded (its KV cache),
// they do not: loading the second unloads the idle first, and the sizes listed are the loaded
// ones.
TEST(ModelDirectory, WhatALoadedModelHoldsBeyondItsFileCounts) {
  auto ledger = std::make_shared<Ledger>();
  ledger->kv_bytes = 200;
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(1000));
  d.add_source(source("a", 400));
  d.add_source(source("b", 400));
  ASSERT_TRUE(d.find("a").ok());
  for (const ModelListing& m : d.list()) {
    if (m.name == "a") {
      EXPECT_EQ(m.bytes, 600u);
    }
  }
  ASSERT_TRUE(d.find("b").ok());
  EXPECT_FALSE(loaded(d, "a"));
  EXPECT_TRUE(loaded(d, "b"));
  EXPECT_EQ(ledger->unloads_of("a"), 1);
  // Known now to need 600, a comes back by unloading b first.
  ASSERT_TRUE(d.find("a").ok());
  EXPECT_EQ(ledger->unloads_of("b"), 1);

  // A third model first loaded while a is busy: its file (400) fits beside a, its loaded size
  // does not, and a busy model stays; a is unloaded as soon as its request ends.
  d.add_source(source("c", 400));
  Result<ModelHandle> busy = d.find("a");
  ASSERT_TRUE(busy.ok());
  Result<ModelHandle> using_c = d.find("c");
  ASSERT_TRUE(using_c.ok());
  EXPECT_TRUE(loaded(d, "a"));
  EXPECT_TRUE(loaded(d, "c"));
  busy = Status(ErrorCode::kCancelled, "released");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (loaded(d, "a") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(loaded(d, "a"));
  EXPECT_TRUE(loaded(d, "c"));
}

TEST(ModelDirectory, AModelLargerThanTheBudgetIsAClearError) {
  auto ledger = std::make_shared<Ledger>();
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(100));
  d.add_source(source("big", 1000));
  const Result<ModelHandle> r = d.find("big");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(r.status().message().find("--max-memory"), std::string::npos);
  EXPECT_EQ(ledger->loads_of("big"), 0);
}

TEST(ModelDirectory, ARemovedModelIsNoLongerServedButItsRequestsFinish) {
  auto ledger = std::make_shared<Ledger>();
  ModelDirectory d;
  d.set_loader(fake_loader(ledger), options(1000));
  ModelSource a = source("a", 100);
  a.aliases = {"also-a"};
  d.add_source(a);
  d.add_source(source("b", 100));
  ASSERT_TRUE(d.add_alias("a", "a-copy").ok());  // one model under both names
  ASSERT_TRUE(d.find("a-copy").ok());
  ASSERT_TRUE(d.find("a").ok());
  EXPECT_EQ(ledger->loads_of("a"), 1);
  EXPECT_EQ(d.add_alias("nope", "x").code(), ErrorCode::kModelNotFound);
  ASSERT_TRUE(d.remove_source("also-a").ok());  // an alias goes alone
  EXPECT_FALSE(d.find("also-a").ok());
  Result<ModelHandle> held = d.find("a");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(d.remove_source("a").ok());
  EXPECT_EQ(d.find("a").status().code(), ErrorCode::kModelNotFound);
  ASSERT_EQ(d.list().size(), 1u);
  EXPECT_EQ(d.list()[0].name, "b");
  EXPECT_EQ((*held)->id, "a");  // the request in flight still has its model
  EXPECT_EQ(ledger->unloads_of("a"), 0);
  held = Status(ErrorCode::kCancelled, "released");
  EXPECT_EQ(ledger->unloads_of("a"), 1);
  EXPECT_EQ(d.remove_source("a").code(), ErrorCode::kModelNotFound);
}

TEST(ModelDirectory, KeepAliveDurations) {
  EXPECT_EQ(*parse_keep_alive("5m"), KeepAlive(300'000));
  EXPECT_EQ(*parse_keep_alive("1h30m"), KeepAlive(5'400'000));
  EXPECT_EQ(*parse_keep_alive("250ms"), KeepAlive(250));
  EXPECT_EQ(*parse_keep_alive("30"), KeepAlive(30'000));
  EXPECT_EQ(*parse_keep_alive("0"), KeepAlive(0));
  EXPECT_LT(parse_keep_alive("-1")->count(), 0);
  EXPECT_LT(parse_keep_alive("-5m")->count(), 0);
  for (const char* bad : {"", "5x", "m", "5m30", "-", "1e400"}) {
    EXPECT_FALSE(parse_keep_alive(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace synapse::request
