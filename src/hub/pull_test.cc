// SPDX-License-Identifier: Apache-2.0
// pull_model against the fake hub: the whole protocol over real HTTP on the loopback.
#include "hub/pull.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "hub/fake_hub.h"
#include "hub/test_gguf.h"
#include "tests/support/test_support.h"

namespace synapse::hub {
namespace {

namespace fs = std::filesystem;

const std::string kRepo = "org/model-GGUF";
constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

class PullTest : public ::testing::Test {
 protected:
  void SetUp() override { start_hub({}); }

  void start_hub(const std::string& token, std::vector<FakeHubFile> files = {}) {
    hub_.reset();
    FakeHubOptions options;
    options.repo = kRepo;
    options.required_token = token;
    options.old_repo = "org/old-name";
    options.files = files.empty() ? std::vector<FakeHubFile>{{"README.md", "# model", false},
                                                             {"model-Q4_K_M.gguf", q4_},
                                                             {"model-Q8_0.gguf", q8_}}
                                  : std::move(files);
    auto hub = FakeHub::start(std::move(options));
    ASSERT_TRUE(hub.ok()) << hub.status().to_string();
    hub_ = std::move(*hub);
  }

  PullRequest request(const std::string& model) {
    PullRequest r;
    r.model = model;
    r.store_directory = dir_.file("store");
    HubConfig config;
    config.endpoint = hub_->endpoint();
    config.hub_cache = dir_.file("hf-cache");
    r.config = config;
    return r;
  }

  Result<PullResult> pull(const PullRequest& r) {
    events_.clear();
    return pull_model(
        r, [this](const PullProgress& p) { events_.push_back(p); }, nullptr);
  }

  size_t stored_models() {
    Result<ModelStore> store = ModelStore::open(dir_.file("store"));
    return store.ok() ? store->list()->size() : 0;
  }
  size_t files_in_downloads() {
    size_t n = 0;
    std::error_code error;
    for ([[maybe_unused]] const auto& e :
         fs::directory_iterator(dir_.file("store/downloads"), error)) {
      ++n;
    }
    return n;
  }
  size_t cdn_gets() const { return hub_->cdn_ranges().size(); }

  synapse::testing::TempDir dir_;
  std::string q4_ = testing::test_gguf(1), q8_ = testing::test_gguf(2);
  std::unique_ptr<FakeHub> hub_;
  std::vector<PullProgress> events_;
};

TEST_F(PullTest, PullsTheDefaultQuantizationVerifiedIntoTheStore) {
  const Result<PullResult> pulled = pull(request("hf.co/" + kRepo));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(pulled->name, "hf.co/org/model-GGUF:Q4_K_M");
  EXPECT_EQ(pulled->source, "download");
  EXPECT_EQ(pulled->files, std::vector<std::string>{"model-Q4_K_M.gguf"});
  EXPECT_EQ(pulled->commit, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(pulled->sha256, FakeHub::sha256_hex(q4_));
  EXPECT_EQ(pulled->model.source_sha256, FakeHub::sha256_hex(q4_));
  Result<ModelStore> store = ModelStore::open(dir_.file("store"));
  ASSERT_TRUE(store->find("hf.co/org/model-GGUF:Q4_K_M").ok());
  EXPECT_EQ(files_in_downloads(), 0u) << "the download is deleted once imported";
  // The protocol: model info with blobs, HEAD on resolve at the commit the info named (its
  // redirect to the CDN not followed), then the CDN GET.
  const std::vector<std::string> requests = hub_->requests();
  ASSERT_EQ(requests.size(), 3u) << ::testing::PrintToString(requests);
  EXPECT_EQ(requests[0], "GET /api/models/org/model-GGUF/revision/main?blobs=true");
  EXPECT_EQ(requests[1],
            "HEAD /org/model-GGUF/resolve/" + std::string(kCommit) + "/model-Q4_K_M.gguf");
  EXPECT_EQ(requests[2].substr(0, 9), "GET /cdn/");
  EXPECT_EQ(hub_->cdn_ranges(), std::vector<std::string>{""});
  // Ollama-style events: manifest, byte-counted pulling of the digest, success.
  ASSERT_FALSE(events_.empty());
  EXPECT_EQ(events_.front().status, "pulling manifest");
  EXPECT_EQ(events_.back().status, "success");
  bool counted = false;
  for (const PullProgress& e : events_) {
    if (e.status.starts_with("pulling ") && e.digest == "sha256:" + FakeHub::sha256_hex(q4_) &&
        e.total == q4_.size() && e.completed == q4_.size()) {
      counted = true;
    }
  }
  EXPECT_TRUE(counted);
  // Pulled again: the store has that very file, nothing is fetched.
  const Result<PullResult> again = pull(request("hf.co/" + kRepo));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->source, "store");
  EXPECT_EQ(cdn_gets(), 1u);
}

TEST_F(PullTest, FollowsTheRelativeRedirectsOfARenamedRepository) {
  const Result<PullResult> pulled = pull(request("org/old-name:Q8_0"));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(pulled->name, "hf.co/org/old-name:Q8_0");
  EXPECT_EQ(pulled->sha256, FakeHub::sha256_hex(q8_));
  const std::vector<std::string> requests = hub_->requests();
  ASSERT_EQ(requests.size(), 5u) << ::testing::PrintToString(requests);
  EXPECT_EQ(requests[1], "GET /api/models/org/model-GGUF/revision/main?blobs=true");
  EXPECT_EQ(requests[2].substr(0, 22), "HEAD /org/old-name/res");
  EXPECT_EQ(requests[3].substr(0, 24), "HEAD /org/model-GGUF/res");
}

TEST_F(PullTest, TagAndExactFileChooseTheFile) {
  const Result<PullResult> tagged = pull(request("hf.co/" + kRepo + ":q8_0"));
  ASSERT_TRUE(tagged.ok()) << tagged.status().to_string();
  EXPECT_EQ(tagged->name, "hf.co/org/model-GGUF:Q8_0");
  EXPECT_EQ(tagged->sha256, FakeHub::sha256_hex(q8_));
  PullRequest exact = request(kRepo);
  exact.file = "model-Q8_0.gguf";
  exact.name = "my-q8";
  const Result<PullResult> by_file = pull(exact);
  ASSERT_TRUE(by_file.ok()) << by_file.status().to_string();
  EXPECT_EQ(by_file->name, "my-q8");
  EXPECT_EQ(by_file->model.digest, tagged->model.digest);
  EXPECT_EQ(pull(request(kRepo + ":Q2_K")).status().code(), ErrorCode::kHubNotFound);
  EXPECT_EQ(pull(request("org/missing")).status().code(), ErrorCode::kHubNotFound);
}

TEST_F(PullTest, ACutShortDownloadResumesWithARange) {
  hub_->cut_next_body_after(1000);
  const Result<PullResult> cut = pull(request(kRepo));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), ErrorCode::kHubUnavailable);
  EXPECT_NE(cut.status().message().find("resume"), std::string::npos) << cut.status().message();
  const std::string partial = dir_.file("store/downloads/" + FakeHub::sha256_hex(q4_) + ".partial");
  ASSERT_TRUE(fs::exists(partial));
  EXPECT_EQ(fs::file_size(partial), 1000u);
  EXPECT_EQ(stored_models(), 0u);

  const Result<PullResult> resumed = pull(request(kRepo));
  ASSERT_TRUE(resumed.ok()) << resumed.status().to_string();
  EXPECT_EQ(resumed->model.source_sha256, FakeHub::sha256_hex(q4_));
  EXPECT_EQ(hub_->cdn_ranges(), (std::vector<std::string>{"", "bytes=1000-"}));
  EXPECT_FALSE(fs::exists(partial));
}

TEST_F(PullTest, AHashMismatchStoresNothingAndKeepsNoPartial) {
  hub_->corrupt_bodies(true);
  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), ErrorCode::kChecksumMismatch);
  EXPECT_NE(pulled.status().message().find("model-Q4_K_M.gguf"), std::string::npos);
  EXPECT_EQ(stored_models(), 0u);
  EXPECT_EQ(files_in_downloads(), 0u);
}

TEST_F(PullTest, UnauthorizedWithoutTheTokenAndPulledWithIt) {
  start_hub("hf_secret");
  const Result<PullResult> anonymous = pull(request(kRepo));
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.status().code(), ErrorCode::kHubUnauthorized);
  EXPECT_NE(anonymous.status().message().find("set HF_TOKEN"), std::string::npos)
      << anonymous.status().message();
  PullRequest wrong = request(kRepo);
  wrong.config->token = "hf_wrong";
  EXPECT_EQ(pull(wrong).status().code(), ErrorCode::kHubUnauthorized);
  PullRequest right = request(kRepo);
  right.config->token = "hf_secret";
  const Result<PullResult> pulled = pull(right);
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
}

TEST_F(PullTest, ANonLfsFileIsVerifiedByItsGitBlobId) {
  start_hub("", {{"model-Q4_K_M.gguf", q4_, /*lfs=*/false}});
  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(pulled->sha256, FakeHub::sha256_hex(q4_));
  EXPECT_EQ(pulled->model.source_sha256, FakeHub::sha256_hex(q4_));
  EXPECT_EQ(files_in_downloads(), 0u);
  // Resolve answers with the bytes itself (no CDN): the HEAD, then the GET of the same URL.
  const std::vector<std::string> requests = hub_->requests();
  ASSERT_EQ(requests.size(), 3u) << ::testing::PrintToString(requests);
  EXPECT_EQ(requests[2],
            "GET /org/model-GGUF/resolve/" + std::string(kCommit) + "/model-Q4_K_M.gguf");
  bool counted = false;
  for (const PullProgress& e : events_) {
    counted |= e.stage == PullStage::kDownload && e.file == "model-Q4_K_M.gguf" &&
               e.total == q4_.size() && e.completed == q4_.size();
  }
  EXPECT_TRUE(counted);
  // Pulled again: fetched (nothing names it by a blob id here) but found the same, not imported.
  const Result<PullResult> again = pull(request(kRepo));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->source, "store");
  EXPECT_EQ(files_in_downloads(), 0u);
}

TEST_F(PullTest, ANonLfsFileThatDoesNotMatchItsGitBlobIdStoresNothing) {
  start_hub("", {{"model-Q4_K_M.gguf", q4_, /*lfs=*/false}});
  hub_->corrupt_bodies(true);
  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), ErrorCode::kChecksumMismatch);
  EXPECT_NE(pulled.status().message().find(FakeHub::git_blob_id(q4_)), std::string::npos)
      << pulled.status().message();
  EXPECT_EQ(stored_models(), 0u);
  EXPECT_EQ(files_in_downloads(), 0u);
}

TEST_F(PullTest, StalePartialsOfOtherPullsGoTheOneThisPullResumesStays) {
  fs::create_directories(dir_.file("store/downloads"));
  const auto write = [&](const std::string& name, const std::string& bytes, bool old) {
    const std::string path = dir_.file("store/downloads/" + name);
    synapse::testing::write_file_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    if (old) fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::days(8));
    return path;
  };
  const std::string stale = write(std::string(64, 'a') + ".partial", "old", true);
  const std::string recent = write(std::string(64, 'b') + ".partial", "new", false);
  const std::string other = write("notes.txt", "not a download", true);
  const std::string own =
      write(FakeHub::sha256_hex(q4_) + ".partial", q4_.substr(0, 1000), /*old=*/true);

  Result<std::vector<std::string>> would = remove_stale_partials(
      dir_.file("store"), kStalePartialAge, {FakeHub::sha256_hex(q4_) + ".partial"}, true);
  ASSERT_TRUE(would.ok()) << would.status().to_string();
  EXPECT_EQ(*would, std::vector<std::string>{stale});
  EXPECT_TRUE(fs::exists(stale)) << "a dry run removes nothing";

  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(hub_->cdn_ranges(), std::vector<std::string>{"bytes=1000-"})
      << "the week-old partial of this very pull is resumed";
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(own));  // completed and imported
  EXPECT_TRUE(fs::exists(recent));
  EXPECT_TRUE(fs::exists(other));
  // Without a keep list (as `synapse models gc` calls it), any week-old partial goes.
  write("c.partial", "x", true);
  Result<std::vector<std::string>> removed =
      remove_stale_partials(dir_.file("store"), kStalePartialAge);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 1u);
  EXPECT_TRUE(fs::exists(recent));
  EXPECT_TRUE(remove_stale_partials(dir_.file("no-store"), kStalePartialAge)->empty());
}

// A Hugging Face cache holding the Q4_K_M file, as huggingface_hub lays it out.
void make_hf_cache(const std::string& cache, const std::string& bytes) {
  const std::string repo = cache + "/models--org--model-GGUF";
  const std::string sha = FakeHub::sha256_hex(bytes);
  fs::create_directories(repo + "/blobs");
  fs::create_directories(repo + "/refs");
  fs::create_directories(repo + "/snapshots/0123456789abcdef0123456789abcdef01234567");
  synapse::testing::write_file_bytes(repo + "/blobs/" + sha,
                                     std::vector<uint8_t>(bytes.begin(), bytes.end()));
  synapse::testing::write_file_bytes(
      repo + "/refs/main", {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd',
                            'e', 'f', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b',
                            'c', 'd', 'e', 'f', '0', '1', '2', '3', '4', '5', '6', '7'});
  fs::create_symlink("../../blobs/" + sha,
                     repo +
                         "/snapshots/0123456789abcdef0123456789abcdef01234567/"
                         "model-Q4_K_M.gguf");
}

TEST_F(PullTest, OfflineUsesTheCacheOrTheStoreNeverTheNetwork) {
  PullRequest offline = request(kRepo);
  offline.config->offline = true;
  const Result<PullResult> nothing = pull(offline);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), ErrorCode::kHubOffline);
  EXPECT_NE(nothing.status().message().find("HF_HUB_OFFLINE"), std::string::npos);

  make_hf_cache(dir_.file("hf-cache"), q4_);
  const Result<PullResult> cached = pull(offline);
  ASSERT_TRUE(cached.ok()) << cached.status().to_string();
  EXPECT_EQ(cached->source, "huggingface-cache");
  EXPECT_EQ(cached->name, "hf.co/org/model-GGUF:Q4_K_M");
  EXPECT_EQ(cached->model.source_sha256, FakeHub::sha256_hex(q4_));
  EXPECT_TRUE(hub_->requests().empty()) << "offline mode touched the network";

  // Without the cache, the store's copy answers.
  fs::remove_all(dir_.file("hf-cache"));
  const Result<PullResult> stored = pull(offline);
  ASSERT_TRUE(stored.ok()) << stored.status().to_string();
  EXPECT_EQ(stored->source, "store");
  EXPECT_TRUE(hub_->requests().empty());
}

TEST_F(PullTest, OnlineReusesAVerifiedCacheBlob) {
  make_hf_cache(dir_.file("hf-cache"), q4_);
  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(pulled->source, "huggingface-cache");
  EXPECT_EQ(cdn_gets(), 0u);
  EXPECT_TRUE(
      fs::exists(dir_.file("hf-cache/models--org--model-GGUF/blobs/" + FakeHub::sha256_hex(q4_))))
      << "the cache is read, never moved";
}

TEST_F(PullTest, ReusesADownloadAnEarlierRunVerifiedButDidNotImport) {
  fs::create_directories(dir_.file("store/downloads"));
  const std::string complete = dir_.file("store/downloads/" + FakeHub::sha256_hex(q4_) + ".gguf");
  synapse::testing::write_file_bytes(complete, std::vector<uint8_t>(q4_.begin(), q4_.end()));
  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(cdn_gets(), 0u);
  EXPECT_FALSE(fs::exists(complete));
}

TEST_F(PullTest, SplitSetsAreDownloadedAndJoined) {
  const std::string part1 = testing::test_gguf(3, 0, 2, 0, 2);
  const std::string part2 = testing::test_gguf(3, 2, 3, 1, 2);
  start_hub("", {{"model-Q4_K_M-00001-of-00002.gguf", part1},
                 {"model-Q4_K_M-00002-of-00002.gguf", part2}});
  const Result<PullResult> pulled = pull(request(kRepo));
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_EQ(pulled->files.size(), 2u);
  EXPECT_EQ(pulled->name, "hf.co/org/model-GGUF:Q4_K_M");
  EXPECT_EQ(pulled->model.source_sha256, FakeHub::sha256_hex(testing::test_gguf(3)))
      << "the store holds the unsplit model";
  EXPECT_EQ(pulled->bytes, part1.size() + part2.size());
  EXPECT_EQ(files_in_downloads(), 0u);
}

TEST_F(PullTest, ANameTheStoreWouldRefuseIsRefusedBeforeTheDownload) {
  PullRequest bad = request(kRepo);
  bad.name = "bad//name";
  EXPECT_EQ(pull(bad).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cdn_gets(), 0u);
}

TEST_F(PullTest, CancelledBeforeItStarts) {
  const Result<PullResult> pulled = pull_model(request(kRepo), nullptr, [] { return true; });
  EXPECT_EQ(pulled.status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(stored_models(), 0u);
}

}  // namespace
}  // namespace synapse::hub
