// SPDX-License-Identifier: Apache-2.0
// Every fixture GGUF (trained and random models in every encoding, vocabularies, quantization
// references) round-trips through a package: convert, verify, open, and the package holds the
// same metadata (key order, types, encoded values), the same tensors byte for byte, the same
// hyper-parameters and tensor check. Then one byte of each tensor of every model is flipped and
// verify must name that tensor.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "format/gguf/gguf_file.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "format/package/package_writer.h"
#include "model/arch/architecture.h"
#include "model/tensor_check.h"
#include "tests/support/model_file_compare.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;

std::vector<std::string> fixture_files() {
  std::ifstream in(std::string(SYNAPSE_SOURCE_DIR) + "/tests/golden/gguf_fixtures.jsonl");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json entry = Json::parse(line);
    if (entry.contains("file")) out.push_back(entry["file"]);
  }
  return out;
}

void expect_same_model(const GgufFile& source, const PackageFile& package) {
  testing::expect_same_model_file(source, package);
  if (::testing::Test::HasFatalFailure()) return;
  // What the model layer reads from it is the same too.
  const Result<HParams> hs = read_model_hparams(source.metadata());
  const Result<HParams> hp = read_model_hparams(package.metadata());
  ASSERT_EQ(hs.ok(), hp.ok());
  if (!hs.ok() || source.tensor_views().empty()) return;
  EXPECT_EQ(hs->n_layer, hp->n_layer);
  EXPECT_EQ(hs->n_vocab, hp->n_vocab);
  const Architecture* arch = find_architecture(hs->arch);
  const TensorCheckReport a = check_model_tensors(*arch, *hs, source);
  const TensorCheckReport b = check_model_tensors(*arch, *hp, package);
  EXPECT_EQ(a.ok(), b.ok());
  EXPECT_EQ(a.present_required, b.present_required);
  EXPECT_EQ(a.tied_output, b.tied_output);
}

TEST(PackageFixtures, EveryFixtureRoundTripsExactly) {
  SYN_REQUIRE_FIXTURE(anchor, "models/stories260K.gguf");
  const std::vector<std::string> files = fixture_files();
  ASSERT_GE(files.size(), 57u);
  testing::TempDir dir;
  for (const std::string& rel : files) {
    SCOPED_TRACE(rel);
    const auto source_path = testing::find_fixture(rel);
    ASSERT_TRUE(source_path.has_value());
    const std::string package_path = dir.file("p.synapse");
    const auto written = convert_to_package(*source_path, package_path);
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    const Result<GgufFile> source = GgufFile::open(*source_path);
    ASSERT_TRUE(source.ok());
    const Result<PackageFile> package = PackageFile::open(package_path);
    ASSERT_TRUE(package.ok()) << package.status().to_string();
    const auto verified = verify_package(*package);
    ASSERT_TRUE(verified.ok()) << verified.status().to_string();
    EXPECT_EQ(verified->tensors_checked, source->tensors().size());
    EXPECT_EQ(package->source().sha256, to_hex(*sha256_file(*source_path)));
    EXPECT_EQ(package->source().graph_hash,
              compute_graph_hash(source->metadata(), source->tensor_views()));
    EXPECT_LE(package->parsed_bytes(), package->header().data_offset);
    expect_same_model(*source, *package);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The "done when" of the package format: one flipped byte in any tensor is found by verify, which
// names that tensor. One byte per tensor, in every fixture model.
TEST(PackageFixtures, VerifyNamesEveryTensorWithAFlippedByte) {
  SYN_REQUIRE_FIXTURE(anchor, "models/stories260K.gguf");
  testing::TempDir dir;
  size_t flipped = 0;
  for (const std::string& rel : fixture_files()) {
    if (!rel.starts_with("models/") && !rel.starts_with("reference/logits/")) continue;
    SCOPED_TRACE(rel);
    const std::string package_path = dir.file("p.synapse");
    ASSERT_TRUE(convert_to_package(*testing::find_fixture(rel), package_path).ok());
    std::vector<uint8_t> bytes = testing::read_file_bytes(package_path);
    // Opening reads no tensor data, so one parse serves every flip below (its views see them).
    const Result<PackageFile> package = PackageFile::parse(bytes, rel);
    ASSERT_TRUE(package.ok());
    const PackageFile* clean = &*package;
    std::vector<std::tuple<std::string, uint64_t, uint64_t>> tensors;  // name, start, size
    for (const PackageTensorInfo& t : clean->tensors()) {
      tensors.emplace_back(std::string(t.name), clean->header().data_offset + t.data_offset,
                           t.bytes);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& [name, start, size] = tensors[i];
      const uint64_t pos = start + (i * 7919) % size;  // a different place in each tensor
      bytes[pos] ^= static_cast<uint8_t>(1u << (i % 8));
      const auto report = verify_package(*clean);
      ASSERT_FALSE(report.ok()) << name << " damaged at " << pos << " and not found";
      EXPECT_EQ(report.status().code(), ErrorCode::kChecksumMismatch);
      EXPECT_EQ(report.status().where().tensor, name);
      bytes[pos] ^= static_cast<uint8_t>(1u << (i % 8));
      ++flipped;
    }
  }
  EXPECT_GE(flipped, 500u);
}

}  // namespace
}  // namespace synapse
