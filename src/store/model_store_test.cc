// SPDX-License-Identifier: Apache-2.0
// The model store: content addressing (the same file is stored once), aliases, leases held by
// other processes (fork), removal and two-phase gc, crash safety of imports (a child process that
// dies mid-import), and resolution of what commands call "a model".
#include "store/model_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/hash.h"
#include "format/gguf/gguf_writer.h"
#include "format/package/package_file.h"
#include "format/package/package_writer.h"
#include "store/model_ref.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

namespace fs = std::filesystem;

// A small GGUF; `seed` changes the weights (and so the content).
void write_model(const std::string& path, uint8_t seed, uint64_t rows = 64) {
  GgufWriter w;
  ASSERT_TRUE(w.set_string("general.architecture", "llama").ok());
  ASSERT_TRUE(w.set_scalar("llama.block_count", uint32_t{1}).ok());
  ASSERT_TRUE(w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "b"})).ok());
  std::vector<uint8_t> data(rows * 64 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + seed);
  const std::vector<uint64_t> dims{64, rows};
  ASSERT_TRUE(w.add_tensor("token_embd.weight", TensorType::kF32, dims, data).ok());
  ASSERT_TRUE(w.add_tensor("output.weight", TensorType::kF32, dims, data).ok());
  ASSERT_TRUE(w.write_file(path).ok());
}

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_model(model_a_, 1);
    write_model(model_b_, 2);
  }
  ModelStore open_store() {
    Result<ModelStore> store = ModelStore::open(store_dir_);
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return std::move(store).value();
  }

  testing::TempDir dir_;
  std::string store_dir_ = dir_.file("store");
  std::string model_a_ = dir_.file("model-a.gguf");
  std::string model_b_ = dir_.file("model-b.gguf");
};

TEST_F(ModelStoreTest, ImportingTheSameFileTwiceStoresItOnce) {
  ModelStore store = open_store();
  const auto first = store.import(model_a_);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_FALSE(first->already_stored);
  EXPECT_EQ(first->name, "model-a");
  const StoredModel& m = first->model;
  EXPECT_EQ(m.digest, to_hex(*sha256_file(m.path))) << "the blob is named by its content";
  EXPECT_EQ(m.source_sha256, to_hex(*sha256_file(model_a_)));
  EXPECT_EQ(m.source_name, "model-a.gguf");
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(m.bytes, fs::file_size(m.path));

  const auto again = store.import(model_a_);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_stored);
  EXPECT_EQ(again->model.digest, m.digest);
  fs::copy_file(model_a_, dir_.file("copy.gguf"));
  const auto copy = store.import(dir_.file("copy.gguf"));
  ASSERT_TRUE(copy.ok());
  EXPECT_TRUE(copy->already_stored);
  EXPECT_EQ(copy->model.aliases, (std::vector<std::string>{"copy", "model-a"}));

  const auto all = store.list();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(files_in(store_dir_ + "/blobs"), 1u);
  EXPECT_EQ(files_in(store_dir_ + "/tmp"), 0u);
  // The blob is a package with the source's content.
  const Result<PackageFile> package = PackageFile::open(m.path);
  ASSERT_TRUE(package.ok());
  EXPECT_EQ(package->source().sha256, m.source_sha256);
  EXPECT_EQ(package->tensor_views().size(), 2u);
}

TEST_F(ModelStoreTest, ImportsPackagesAndRecognizesTheirSource) {
  ASSERT_TRUE(convert_to_package(model_a_, dir_.file("a.synapse")).ok());
  ModelStore store = open_store();
  const auto imported = store.import(dir_.file("a.synapse"), {.name = "pkg"});
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  EXPECT_EQ(imported->model.digest, to_hex(*sha256_file(dir_.file("a.synapse"))));
  // The GGUF it came from is the same content: recognized, not converted again.
  const auto gguf = store.import(model_a_);
  ASSERT_TRUE(gguf.ok());
  EXPECT_TRUE(gguf->already_stored);
  EXPECT_EQ(gguf->model.digest, imported->model.digest);

  // A damaged package is refused and leaves nothing behind.
  std::vector<uint8_t> bytes = testing::read_file_bytes(dir_.file("a.synapse"));
  bytes[PackageFile::open(dir_.file("a.synapse"))->header().data_offset] ^= 1;  // first tensor
  testing::write_file_bytes(dir_.file("bad.synapse"), bytes);
  const auto bad = store.import(dir_.file("bad.synapse"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(store.list()->size(), 1u);
  EXPECT_EQ(files_in(store_dir_ + "/tmp"), 0u);
}

TEST_F(ModelStoreTest, FindsByAliasDigestAndPrefix) {
  ModelStore store = open_store();
  const auto imported = store.import(model_a_, {.name = "tiny"});
  ASSERT_TRUE(imported.ok());
  const std::string digest = imported->model.digest;
  for (const std::string& ref :
       {std::string("tiny"), digest, digest.substr(0, 8), "sha256:" + digest.substr(0, 12)}) {
    const auto found = store.find(ref);
    ASSERT_TRUE(found.ok()) << ref << ": " << found.status().to_string();
    EXPECT_EQ(found->digest, digest);
  }
  EXPECT_EQ(store.find("nothing").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store.find(digest.substr(0, 7)).status().code(), ErrorCode::kNotFound);
  for (const char* bad : {"bad//name", "/bad", "bad/", "bad/../name", "bad/.x", "bad name"}) {
    EXPECT_EQ(store.import(model_a_, {.name = bad}).status().code(), ErrorCode::kInvalidArgument)
        << bad;
  }
  // Namespaced names, as `synapse pull` gives them.
  const auto pulled = store.import(model_a_, {.name = "hf.co/org/repo-GGUF:Q4_K_M"});
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(store.find("hf.co/org/repo-GGUF:Q4_K_M")->digest, digest);
  EXPECT_EQ(store.import(model_a_, {.name = std::string(64, 'a')}).status().code(),
            ErrorCode::kInvalidArgument);
  // A file name that is no valid name gives a default name that is.
  fs::copy_file(model_a_, dir_.file("My Model (v2).gguf"));
  const auto odd = store.import(dir_.file("My Model (v2).gguf"));
  ASSERT_TRUE(odd.ok()) << odd.status().to_string();
  EXPECT_EQ(odd->name, "My-Model--v2-");
  // A prefix that two stored models share names neither. Two real digests sharing 8 hex digits
  // would take billions of imports, so the second blob row is written directly.
  std::string twin = digest;
  twin.back() = twin.back() == '0' ? '1' : '0';
  {
    Result<SqliteDb> db = SqliteDb::open(store_dir_ + "/store.db", 1000);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("INSERT INTO blobs(digest, bytes, source_sha256, source_name, "
                         "architecture, graph_hash, format_version, imported_at) VALUES ('" +
                         twin + "', 1, '', '', '', '', 1, 0)")
                    .ok());
  }
  const auto shared = store.find(digest.substr(0, 12));
  EXPECT_EQ(shared.status().code(), ErrorCode::kInvalidArgument) << shared.status().to_string();
  EXPECT_EQ(store.find(digest)->digest, digest);
}

TEST_F(ModelStoreTest, RemoveDropsAnAliasAndTheBlobWithItsLastAlias) {
  ModelStore store = open_store();
  ASSERT_TRUE(store.import(model_a_, {.name = "one"}).ok());
  const auto two = store.import(model_a_, {.name = "two"});
  ASSERT_TRUE(two.ok());
  const std::string path = two->model.path;
  const auto removed = store.remove("one");
  ASSERT_TRUE(removed.ok()) << removed.status().to_string();
  EXPECT_FALSE(removed->blob_deleted.has_value());
  EXPECT_TRUE(fs::exists(path));
  const auto last = store.remove("two");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->blob_deleted, two->model.digest);
  EXPECT_EQ(last->bytes_freed, two->model.bytes);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(store.list()->empty());
  EXPECT_EQ(store.remove("two").status().code(), ErrorCode::kNotFound);

  // By digest: every alias goes with the blob.
  ASSERT_TRUE(store.import(model_b_, {.name = "x"}).ok());
  const auto y = store.import(model_b_, {.name = "y"});
  const auto by_digest = store.remove(y->model.digest.substr(0, 10));
  ASSERT_TRUE(by_digest.ok());
  EXPECT_EQ(by_digest->aliases_removed, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(store.list()->empty());
}

TEST_F(ModelStoreTest, GcIsTwoPhaseAndDeletesOnlyUnreferencedBlobs) {
  ModelStore store = open_store();
  const auto old = store.import(model_a_, {.name = "m"});
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(store.import(model_b_, {.name = "other"}).ok());
  // Re-pointing the alias leaves the first blob without a name.
  const auto repointed = store.import(model_b_, {.name = "m"});
  ASSERT_TRUE(repointed.ok());
  EXPECT_EQ(repointed->previous_digest, old->model.digest);

  const auto marked = store.gc({.grace = std::chrono::hours(1)});
  ASSERT_TRUE(marked.ok()) << marked.status().to_string();
  EXPECT_EQ(marked->marked, (std::vector<std::string>{old->model.digest}));
  EXPECT_TRUE(marked->deleted.empty()) << "deleted within the grace period";
  EXPECT_TRUE(fs::exists(old->model.path));
  EXPECT_TRUE(store.find(old->model.digest)->unreferenced_since.has_value());

  const auto dry = store.gc({.grace = std::chrono::seconds(0), .dry_run = true});
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->deleted, (std::vector<std::string>{old->model.digest}));
  EXPECT_TRUE(fs::exists(old->model.path)) << "dry run deleted";

  const auto swept = store.gc({.grace = std::chrono::seconds(0)});
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(swept->deleted, (std::vector<std::string>{old->model.digest}));
  EXPECT_EQ(swept->bytes_freed, old->model.bytes);
  EXPECT_FALSE(fs::exists(old->model.path));
  EXPECT_EQ(store.list()->size(), 1u);
  EXPECT_TRUE(store.find("m").ok());

  // A mark is cleared when the blob gets a name again before the sweep.
  ASSERT_TRUE(store.import(model_a_, {.name = "again"}).ok());
  ASSERT_TRUE(store.remove("again").ok());  // deleted at once: it was its only alias
  ASSERT_TRUE(store.import(model_a_, {.name = "again"}).ok());
  ASSERT_TRUE(store.import(model_b_, {.name = "again"}).ok());
  ASSERT_EQ(store.gc({.grace = std::chrono::hours(1)})->marked.size(), 1u);
  const auto revived = store.import(model_a_, {.name = "revived"});
  ASSERT_TRUE(revived.ok());
  EXPECT_FALSE(revived->model.unreferenced_since.has_value());
  const auto after = store.gc({.grace = std::chrono::seconds(0)});
  EXPECT_TRUE(after->deleted.empty());
}

// A child process holds a lease (as a running command would); the parent cannot remove the model
// until the child is gone. fork() gives a real second process with its own locks.
TEST_F(ModelStoreTest, RemoveRefusesOrWaitsWhileAnotherProcessHoldsALease) {
  {
    ModelStore store = open_store();
    ASSERT_TRUE(store.import(model_a_, {.name = "busy"}).ok());
  }
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    Result<ModelStore> store = ModelStore::open(store_dir_);
    Result<ModelLease> lease = store.ok() ? store->acquire_lease("busy") : store.status();
    const char ok = lease.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    char byte;
    (void)!::read(release[0], &byte, 1);  // returns when the parent closes its end
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char leased = 0;
  ASSERT_EQ(::read(ready[0], &leased, 1), 1);
  ASSERT_EQ(leased, 'y');

  ModelStore store = open_store();
  const auto found = store.find("busy");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->lease_holders, (std::vector<int>{child}));
  const auto refused = store.remove("busy");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("process " + std::to_string(child)), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(store.find("busy").ok()) << "a refused removal changed the store";
  // gc keeps a leased blob too, even when it is due.
  const std::string digest = found->digest;
  ASSERT_TRUE(store.import(model_b_, {.name = "busy"}).ok());
  const auto gc = store.gc({.grace = std::chrono::seconds(0)});
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->kept_leased, (std::vector<std::string>{digest}));
  EXPECT_TRUE(fs::exists(store.blob_path(digest)));
  ASSERT_TRUE(store.import(model_a_, {.name = "busy"}).ok());

  // Waiting: the child lets go after a moment and the removal goes through.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::close(release[1]);
  });
  const auto waited = store.remove("busy", {.wait = std::chrono::seconds(20)});
  releaser.join();
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ASSERT_TRUE(waited.ok()) << waited.status().to_string();
  EXPECT_EQ(waited->blob_deleted, digest);
  EXPECT_FALSE(fs::exists(store.blob_path(digest)));
}

TEST_F(ModelStoreTest, LeasesCountWithinOneProcessAndFailForRemovedModels) {
  ModelStore store = open_store();
  ASSERT_TRUE(store.import(model_a_, {.name = "m"}).ok());
  std::optional<ModelLease> first(store.acquire_lease("m").value());
  std::optional<ModelLease> second(store.acquire_lease("m").value());
  EXPECT_EQ(first->path(), second->path());
  first.reset();
  EXPECT_EQ(store.remove("m").status().code(), ErrorCode::kUnavailable) << "second lease ignored";
  second.reset();
  ASSERT_TRUE(store.remove("m").ok());
  EXPECT_EQ(store.acquire_lease("m").status().code(), ErrorCode::kNotFound);
}

// A forced crash in the middle of writing the package: the store shows nothing half done, gc
// removes the leftover, and importing again works.
TEST_F(ModelStoreTest, CrashDuringImportLeavesTheStoreConsistent) {
  write_model(model_a_, 1, 4096);            // 2 MB of tensors, so the crash lands mid-data
  GTEST_FLAG_SET(death_test_style, "fast");  // fork: the child shares this test's directory
  EXPECT_DEATH(
      {
        Result<ModelStore> store = ModelStore::open(store_dir_);
        ImportOptions options;
        options.progress = [](std::string_view stage, uint64_t done, uint64_t) {
          if (stage == "converting" && done > 1'000'000) std::abort();
        };
        (void)store->import(model_a_, options);
      },
      "");
  ModelStore store = open_store();
  EXPECT_TRUE(store.list()->empty());
  EXPECT_EQ(store.find("model-a").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(files_in(store_dir_ + "/blobs"), 0u);
  ASSERT_EQ(files_in(store_dir_ + "/tmp"), 1u) << "the crashed import's temporary file";
  // Within the grace period gc leaves it; after it, removes it.
  EXPECT_TRUE(store.gc({.grace = std::chrono::hours(1)})->stray_files_removed.empty());
  EXPECT_EQ(store.gc({.grace = std::chrono::seconds(0)})->stray_files_removed.size(), 1u);
  EXPECT_EQ(files_in(store_dir_ + "/tmp"), 0u);
  const auto again = store.import(model_a_);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_FALSE(again->already_stored);
  const Result<PackageFile> package = PackageFile::open(again->model.path);
  ASSERT_TRUE(package.ok());
}

// What a crash between the rename and the commit would leave: a blob file without a row. It is
// invisible, gc removes it, and an import adopts it.
TEST_F(ModelStoreTest, StrayAndMissingBlobsAreRepaired) {
  ModelStore store = open_store();
  const auto imported = store.import(model_a_, {.name = "m"});
  ASSERT_TRUE(imported.ok());
  const std::string path = imported->model.path;
  fs::copy_file(path, dir_.file("saved"));
  // The file disappears behind the store's back: leases fail, gc drops the row.
  fs::remove(path);
  EXPECT_EQ(store.acquire_lease("m").status().code(), ErrorCode::kNotFound);
  const auto gc = store.gc({.grace = std::chrono::seconds(0)});
  EXPECT_EQ(gc->missing_removed, (std::vector<std::string>{imported->model.digest}));
  EXPECT_TRUE(store.list()->empty());
  // A file without a row: invisible; the next import of that content adopts it.
  fs::copy_file(dir_.file("saved"), path);
  EXPECT_TRUE(store.list()->empty());
  const auto adopted = store.import(model_a_, {.name = "m"});
  ASSERT_TRUE(adopted.ok());
  EXPECT_EQ(adopted->model.digest, imported->model.digest);
  EXPECT_EQ(files_in(store_dir_ + "/blobs"), 1u);
  ASSERT_TRUE(store.remove("m").ok());
  fs::copy_file(dir_.file("saved"), path);
  EXPECT_EQ(store.gc({.grace = std::chrono::seconds(0)})->stray_files_removed,
            (std::vector<std::string>{path}));
}

TEST_F(ModelStoreTest, RefusesAStoreFromANewerBuild) {
  { ModelStore store = open_store(); }
  Result<SqliteDb> db = SqliteDb::open(store_dir_ + "/store.db", 1000);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->exec("INSERT INTO schema_version(version) VALUES (99)").ok());
  EXPECT_EQ(ModelStore::open(store_dir_).status().code(), ErrorCode::kUnsupportedVersion);
}

// Issue 22: a directory or a FIFO given as the model was reported as "no model ... in the store";
// it must be named for what it is, and a FIFO must never be opened (the open would block).
TEST_F(ModelStoreTest, ResolveSaysADirectoryOrFifoIsNotAModelFile) {
  const ResolveOptions options{.store_directory = store_dir_, .prepare_gguf = true};
  fs::create_directories(dir_.file("models.gguf"));
  for (const std::string& ref : {dir_.file("models.gguf"), dir_.file("")}) {
    const auto r = resolve_model(ref, options);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << r.status().to_string();
    EXPECT_NE(r.status().message().find("is a directory"), std::string::npos)
        << r.status().to_string();
  }
  const std::string fifo = dir_.file("pipe.gguf");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto r = resolve_model(fifo, options);  // would hang here if it opened the FIFO
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos)
      << r.status().to_string();
  // A bare name that is a directory in the working directory and not in the store.
  const fs::path previous = fs::current_path();
  fs::current_path(dir_.path());
  fs::create_directories("llama");
  const auto bare = resolve_model("llama", options);
  fs::current_path(previous);
  EXPECT_NE(bare.status().message().find("is a directory"), std::string::npos)
      << bare.status().to_string();
}

TEST_F(ModelStoreTest, ResolvesPathsNamesAndPreparesGgufOnce) {
  ASSERT_TRUE(convert_to_package(model_a_, dir_.file("a.synapse")).ok());
  std::vector<std::string> notices;
  ResolveOptions options{.store_directory = store_dir_,
                         .notice = [&](std::string_view m) { notices.emplace_back(m); }};
  // Paths are used in place, without a lease.
  const auto package = resolve_model(dir_.file("a.synapse"), options);
  ASSERT_TRUE(package.ok()) << package.status().to_string();
  EXPECT_EQ(package->path, dir_.file("a.synapse"));
  EXPECT_FALSE(package->lease.has_value());
  const auto raw = resolve_model(model_a_, options);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->path, model_a_);
  EXPECT_EQ(resolve_model(dir_.file("none.gguf"), options).status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(notices.empty());

  // Commands that run models prepare a GGUF into the store, visibly, once.
  options.prepare_gguf = true;
  const auto prepared = resolve_model(model_b_, options);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ(notices, (std::vector<std::string>{"preparing model-b.gguf (once)..."}));
  ASSERT_TRUE(prepared->lease.has_value());
  EXPECT_TRUE(PackageFile::open(prepared->path).ok());
  const auto second = resolve_model(model_b_, options);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(notices.size(), 1u) << "prepared twice";
  EXPECT_EQ(second->path, prepared->path);
  // By name, leased.
  const auto named = resolve_model("model-b", options);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->path, prepared->path);
  EXPECT_TRUE(named->lease.has_value());
  EXPECT_EQ(resolve_model("unknown", options).status().code(), ErrorCode::kNotFound);
  // A namespaced name looks like a path and is still found in the store.
  ASSERT_TRUE(ModelStore::open(store_dir_)->import(model_b_, {.name = "hf.co/o/r:Q8_0"}).ok());
  const auto namespaced = resolve_model("hf.co/o/r:Q8_0", options);
  ASSERT_TRUE(namespaced.ok()) << namespaced.status().to_string();
  EXPECT_EQ(namespaced->path, prepared->path);
  EXPECT_EQ(resolve_model("hf.co/o/none:Q8_0", options).status().message(), "no such file");
  // An automatic import never takes a name that belongs to other content.
  write_model(dir_.file("model-b.gguf.new"), 9);
  fs::create_directories(dir_.file("other"));
  fs::rename(dir_.file("model-b.gguf.new"), dir_.file("other/model-b.gguf"));
  const auto clash = resolve_model(dir_.file("other/model-b.gguf"), options);
  ASSERT_TRUE(clash.ok()) << clash.status().to_string();
  Result<ModelStore> store = ModelStore::open(store_dir_);
  EXPECT_EQ(store->find("model-b")->digest, prepared->lease->digest());
  EXPECT_EQ(store->find("model-b-" + clash->lease->digest().substr(0, 12))->digest,
            clash->lease->digest());
}

}  // namespace
}  // namespace synapse
