// SPDX-License-Identifier: Apache-2.0
// Packages written from GGUF files: the round trip keeps metadata and tensor bytes exactly, the
// layout is aligned and fully accounted for, verify finds any damaged byte and names the tensor,
// and damage to the header, manifest or table fails at open with a code naming the section.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "base/hash.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_writer.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "format/package/package_writer.h"
#include "tests/support/model_file_compare.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Bytes = std::vector<uint8_t>;

// Every value type and tensors of plain and block types, as a GGUF file.
void write_sample_gguf(const std::string& path, uint32_t alignment = 32, uint8_t fill = 1,
                       bool reversed_keys = false) {
  GgufWriter w;
  ASSERT_TRUE(w.set_scalar("general.alignment", alignment).ok());
  std::vector<std::pair<std::string, GgufValue>> kvs = {
      {"general.architecture", GgufValue::string("llama")},
      {"llama.block_count", GgufValue::scalar<uint32_t>(2)},
      {"llama.rope.freq_base", GgufValue::scalar(10000.0f)},
      {"i8", GgufValue::scalar<int8_t>(-1)},
      {"u64", GgufValue::scalar<uint64_t>(4)},
      {"f64", GgufValue::scalar(0.25)},
      {"bool", GgufValue::scalar(true)},
      {"tokenizer.ggml.tokens", GgufValue::string_array({"<s>", "", "\xE4\xB8\xAD"})},
      {"tokenizer.ggml.scores", GgufValue::array(std::vector<float>{0.0f, -1.0f, -2.0f})},
      {"nested",
       GgufValue::array_of_arrays({GgufValue::array(std::vector<int32_t>{1, 2}),
                                   GgufValue::array_of_arrays({GgufValue::string_array({"x"})})})}};
  if (reversed_keys) std::reverse(kvs.begin() + 1, kvs.end());
  for (const auto& [key, value] : kvs) ASSERT_TRUE(w.set(key, value).ok());
  const std::vector<uint64_t> f32_dims{3}, q4k_dims{256}, q8_dims{32, 2}, bf16_dims{2, 1, 1, 2};
  static Bytes f32, q4k, q8, bf16;  // kept alive until write_file returns
  f32.assign(12, fill);
  q4k.assign(144, static_cast<uint8_t>(fill + 1));
  q8.assign(68, static_cast<uint8_t>(fill + 2));
  bf16.assign(8, static_cast<uint8_t>(fill + 3));
  ASSERT_TRUE(w.add_tensor("t.f32", TensorType::kF32, f32_dims, f32).ok());
  ASSERT_TRUE(w.add_tensor("t.q4_k", TensorType::kQ4_K, q4k_dims, q4k).ok());
  ASSERT_TRUE(w.add_tensor("t.q8_0", TensorType::kQ8_0, q8_dims, q8).ok());
  ASSERT_TRUE(w.add_tensor("t.bf16", TensorType::kBF16, bf16_dims, bf16).ok());
  ASSERT_TRUE(w.write_file(path).ok());
}

class PackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_sample_gguf(gguf_);
    const auto written = convert_to_package(gguf_, package_, {.created_by = "test"});
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    result_ = *written;
  }
  Bytes package_bytes() const { return testing::read_file_bytes(package_); }

  testing::TempDir dir_;
  std::string gguf_ = dir_.file("sample.gguf");
  std::string package_ = dir_.file("sample.synapse");
  PackageWriteResult result_;
};

TEST_F(PackageTest, RoundTripKeepsMetadataAndTensorsExactly) {
  const Result<GgufFile> source = GgufFile::open(gguf_);
  ASSERT_TRUE(source.ok());
  const Result<PackageFile> package = PackageFile::open(package_);
  ASSERT_TRUE(package.ok()) << package.status().to_string();
  testing::expect_same_model_file(*source, *package);
  EXPECT_EQ(package->format_name(), "synapse");
  EXPECT_EQ(package->source().format, "gguf");
  EXPECT_EQ(package->source().name, "sample.gguf");
  EXPECT_EQ(package->source().created_by, "test");
  EXPECT_EQ(package->source().bytes, source->file_bytes().size());
  EXPECT_EQ(package->source().sha256, to_hex(*sha256_file(gguf_)));
  EXPECT_EQ(package->source().sha256, result_.source_sha256);
  EXPECT_EQ(package->source().graph_hash,
            compute_graph_hash(source->metadata(), source->tensor_views()));
  EXPECT_EQ(result_.package_bytes, package->file_bytes().size());
  EXPECT_EQ(result_.tensor_count, 4u);
  EXPECT_LE(package->parsed_bytes(), package->header().data_offset) << "open read tensor data";
}

TEST_F(PackageTest, LayoutIsPageAlignedAndAccountsForEveryByte) {
  const Result<PackageFile> package = PackageFile::open(package_);
  ASSERT_TRUE(package.ok());
  const PackageLayout& l = package->layout();
  EXPECT_EQ(l.header_bytes + l.manifest_bytes + l.tensor_table_bytes + l.alignment_padding_bytes +
                l.tensor_data_bytes + l.tensor_padding_bytes,
            l.file_bytes);
  EXPECT_EQ(package->header().alignment, 4096u);
  EXPECT_EQ(package->header().data_offset % 4096, 0u);
  EXPECT_EQ(l.file_bytes % 4096, 0u);
  for (const TensorView& t : package->tensor_views()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data.data()) % 4096, 0u) << t.name;
  }
}

TEST_F(PackageTest, ConversionIsDeterministic) {
  const std::string again = dir_.file("again.synapse");
  ASSERT_TRUE(convert_to_package(gguf_, again, {.created_by = "test"}).ok());
  EXPECT_EQ(package_bytes(), testing::read_file_bytes(again));
}

TEST_F(PackageTest, OpenModelFileChoosesTheReaderByMagic) {
  const auto package = open_model_file(package_);
  ASSERT_TRUE(package.ok()) << package.status().to_string();
  EXPECT_EQ((*package)->format_name(), "synapse");
  const auto gguf = open_model_file(gguf_);
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ((*gguf)->format_name(), "gguf");
  const auto missing = open_model_file(dir_.file("missing"));
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(convert_to_package(package_, dir_.file("x.synapse")).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(PackageTest, VerifyAcceptsAnIntactPackage) {
  const Result<PackageFile> package = PackageFile::open(package_);
  ASSERT_TRUE(package.ok());
  uint64_t last_progress = 0;
  const auto report = verify_package(
      *package, {.progress = [&](uint64_t done, uint64_t) { last_progress = done; }});
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->tensors_checked, 4u);
  EXPECT_EQ(report->bytes_checked, package->file_bytes().size() - package->header().table_offset -
                                       package->header().table_bytes);
  EXPECT_EQ(last_progress, report->bytes_checked);
}

TEST_F(PackageTest, VerifyNamesTheTensorOfEveryFlippedByte) {
  Bytes bytes = package_bytes();
  const Result<PackageFile> clean = PackageFile::parse(bytes, "clean");
  ASSERT_TRUE(clean.ok());
  std::vector<std::pair<std::string, uint64_t>> tensors;  // name, first byte
  for (const PackageTensorInfo& t : clean->tensors()) {
    tensors.emplace_back(std::string(t.name), clean->header().data_offset + t.data_offset);
  }
  for (const auto& [name, start] : tensors) {
    const uint64_t size = clean->find_tensor(name)->bytes;
    for (const uint64_t pos : {start, start + size / 2, start + size - 1}) {
      bytes[pos] ^= 0x01;
      const Result<PackageFile> damaged = PackageFile::parse(bytes, "damaged");
      ASSERT_TRUE(damaged.ok()) << "tensor data damage must not fail open";
      const auto report = verify_package(*damaged);
      ASSERT_FALSE(report.ok()) << name << " byte " << pos;
      EXPECT_EQ(report.status().code(), ErrorCode::kChecksumMismatch);
      EXPECT_EQ(report.status().where().tensor, name);
      EXPECT_EQ(report.status().where().byte_offset, start);
      bytes[pos] ^= 0x01;
    }
  }
}

TEST_F(PackageTest, VerifyChecksEveryPaddingByte) {
  Bytes bytes = package_bytes();
  const Result<PackageFile> clean = PackageFile::parse(bytes, "clean");
  ASSERT_TRUE(clean.ok());
  const PackageTensorInfo& first = clean->tensors()[0];
  const uint64_t after_first = clean->header().data_offset + first.data_offset + first.bytes;
  const uint64_t before_data = clean->header().data_offset - 1;
  for (const uint64_t pos : {after_first, before_data}) {
    bytes[pos] = 0x7F;
    const Result<PackageFile> damaged = PackageFile::parse(bytes, "damaged");
    ASSERT_TRUE(damaged.ok());
    const auto report = verify_package(*damaged);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.status().code(), ErrorCode::kBadValue);
    EXPECT_EQ(report.status().where().byte_offset, pos);
    EXPECT_EQ(report.status().where().field, "padding");
    bytes[pos] = 0;
  }
}

// Every single-byte change before the tensor data fails at open, with the code of the part it
// hit: magic, version, or the checksum of the header, manifest or tensor table.
TEST_F(PackageTest, EveryDamagedByteBeforeTheDataFailsOpenNamingItsSection) {
  Bytes bytes = package_bytes();
  const Result<PackageFile> clean = PackageFile::parse(bytes, "clean");
  ASSERT_TRUE(clean.ok());
  const PackageHeader h = clean->header();
  const uint64_t table_end = h.table_offset + h.table_bytes;
  for (uint64_t pos = 0; pos < table_end; ++pos) {
    bytes[pos] ^= 0x20;
    const Result<PackageFile> r = PackageFile::parse(bytes, "damaged");
    ASSERT_FALSE(r.ok()) << "byte " << pos << " accepted";
    const Status& s = r.status();
    if (pos < 8) {
      EXPECT_EQ(s.code(), ErrorCode::kBadMagic) << pos;
    } else if (pos < 12) {
      EXPECT_EQ(s.code(), ErrorCode::kUnsupportedVersion) << pos;
    } else {
      EXPECT_EQ(s.code(), ErrorCode::kChecksumMismatch) << pos << ": " << s.to_string();
      const std::string section = pos < h.manifest_offset ? "header"
                                  : pos < h.table_offset  ? "manifest"
                                                          : "tensor table";
      EXPECT_EQ(s.where().field, section) << pos;
    }
    bytes[pos] ^= 0x20;
    if (HasFailure()) return;
  }
}

TEST_F(PackageTest, TruncatedOrExtendedFilesFailAtOpen) {
  Bytes bytes = package_bytes();
  for (const size_t n :
       {size_t{0}, size_t{5}, size_t{10}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    const Result<PackageFile> r = PackageFile::parse(std::span(bytes).first(n), "cut");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), ErrorCode::kFileTruncated) << n << ": " << r.status().to_string();
    EXPECT_LE(*r.status().where().byte_offset, n);
  }
  bytes.push_back(0);
  const Result<PackageFile> longer = PackageFile::parse(bytes, "longer");
  EXPECT_EQ(longer.status().code(), ErrorCode::kSizeMismatch);
}

TEST(PackageGraphHash, DependsOnTheGraphOnly) {
  testing::TempDir dir;
  const auto hash_of = [&](const std::string& name, uint32_t alignment, uint8_t fill,
                           bool reversed) {
    write_sample_gguf(dir.file(name), alignment, fill, reversed);
    const Result<GgufFile> file = GgufFile::open(dir.file(name));
    EXPECT_TRUE(file.ok());
    return compute_graph_hash(file->metadata(), file->tensor_views());
  };
  const std::string base = hash_of("a.gguf", 32, 1, false);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(hash_of("b.gguf", 64, 9, true), base) << "weights, alignment or key order changed it";

  const Result<GgufFile> file = GgufFile::open(dir.file("a.gguf"));
  ASSERT_TRUE(file.ok());
  std::vector<GgufKeyValue> entries(file->metadata().entries().begin(),
                                    file->metadata().entries().end());
  std::vector<TensorView> views(file->tensor_views().begin(), file->tensor_views().end());
  // A hyper-parameter, a tensor's type or shape: a different graph.
  for (GgufKeyValue& kv : entries) {
    if (kv.key == "llama.block_count") kv.value = GgufValue::scalar<uint32_t>(3);
  }
  EXPECT_NE(compute_graph_hash(GgufMetadata(entries), views), base);
  std::vector<TensorView> retyped = views;
  retyped[0].type = TensorType::kI32;
  EXPECT_NE(compute_graph_hash(file->metadata(), retyped), base);
  std::vector<TensorView> reshaped = views;
  reshaped[2].dims[0] = 64;
  reshaped[2].dims[1] = 1;
  EXPECT_NE(compute_graph_hash(file->metadata(), reshaped), base);
  // The tokenizer is not part of the graph.
  std::vector<GgufKeyValue> no_tokenizer;
  for (const GgufKeyValue& kv : file->metadata().entries()) {
    if (!kv.key.starts_with("tokenizer.")) no_tokenizer.push_back(kv);
  }
  EXPECT_EQ(compute_graph_hash(GgufMetadata(no_tokenizer), views), base);
}

TEST(PackageWriter, VocabularyOnlyFileRoundTrips) {
  testing::TempDir dir;
  GgufWriter w;
  ASSERT_TRUE(w.set_string("general.architecture", "llama").ok());
  ASSERT_TRUE(w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "b"})).ok());
  ASSERT_TRUE(w.write_file(dir.file("vocab.gguf")).ok());
  const auto written = convert_to_package(dir.file("vocab.gguf"), dir.file("vocab.synapse"));
  ASSERT_TRUE(written.ok()) << written.status().to_string();
  EXPECT_EQ(written->tensor_count, 0u);
  const Result<PackageFile> package = PackageFile::open(dir.file("vocab.synapse"));
  ASSERT_TRUE(package.ok()) << package.status().to_string();
  EXPECT_TRUE(package->tensor_views().empty());
  const auto tokens = package->metadata().get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(std::vector<std::string_view>(tokens->begin(), tokens->end()),
            (std::vector<std::string_view>{"a", "b"}));
  EXPECT_TRUE(verify_package(*package).ok());
}

TEST(PackageWriter, FailedWriteLeavesNothingBehind) {
  testing::TempDir dir;
  write_sample_gguf(dir.file("m.gguf"));
  const auto failed =
      convert_to_package(dir.file("m.gguf"), dir.file("m.synapse"), {.alignment = 100});
  EXPECT_EQ(failed.status().code(), ErrorCode::kBadAlignment);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u) << "a temporary file was left behind";
}

}  // namespace
}  // namespace synapse
