// SPDX-License-Identifier: Apache-2.0
// Writer -> reader round trips, and the layout conventions llama.cpp relies on.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "format/byte_order.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_writer.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + i * 31);
  return out;
}

struct Sample {
  GgufWriter writer;
  std::vector<std::vector<uint8_t>> data;  // backing bytes for the tensors
};

// Every value type, nested arrays, and tensors of plain and block-quantized types.
void fill_sample(Sample& s) {
  GgufWriter& w = s.writer;
  ASSERT_TRUE(w.set_string("general.architecture", "llama").ok());
  ASSERT_TRUE(w.set_scalar("u8", uint8_t{200}).ok());
  ASSERT_TRUE(w.set_scalar("i8", int8_t{-100}).ok());
  ASSERT_TRUE(w.set_scalar("u16", uint16_t{60000}).ok());
  ASSERT_TRUE(w.set_scalar("i16", int16_t{-30000}).ok());
  ASSERT_TRUE(w.set_scalar("u32", uint32_t{4000000000u}).ok());
  ASSERT_TRUE(w.set_scalar("i32", int32_t{-2000000000}).ok());
  ASSERT_TRUE(w.set_scalar("f32", 3.25f).ok());
  ASSERT_TRUE(w.set_scalar("bool", true).ok());
  ASSERT_TRUE(w.set_scalar("u64", uint64_t{1} << 60).ok());
  ASSERT_TRUE(w.set_scalar("i64", -(int64_t{1} << 60)).ok());
  ASSERT_TRUE(w.set_scalar("f64", -1e-300).ok());
  ASSERT_TRUE(w.set_string("utf8", "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80").ok());
  ASSERT_TRUE(w.set("strings", GgufValue::string_array({"", "a", "<0x0A>"})).ok());
  ASSERT_TRUE(w.set("floats", GgufValue::array(std::vector<float>{0.5f, -0.25f})).ok());
  ASSERT_TRUE(
      w.set("nested",
            GgufValue::array_of_arrays(
                {GgufValue::array(std::vector<uint8_t>{1, 2}), GgufValue::string_array({"x"}),
                 GgufValue::array_of_arrays({GgufValue::array(std::vector<int64_t>{})})}))
          .ok());
  struct T {
    const char* name;
    TensorType type;
    std::vector<uint64_t> dims;
  };
  const T tensors[] = {
      {"a.f32", TensorType::kF32, {3}},             // 12 bytes: padding follows
      {"b.f16", TensorType::kF16, {5, 3}},          // 30 bytes
      {"c.q4_k", TensorType::kQ4_K, {256, 2}},      // 288 bytes
      {"d.q8_0", TensorType::kQ8_0, {64, 1, 2}},    // 136 bytes
      {"e.bf16", TensorType::kBF16, {2, 2, 2, 2}},  // 32 bytes
  };
  uint8_t seed = 1;
  for (const T& t : tensors) {
    const uint64_t bytes = *tensor_byte_size(t.type, t.dims);
    s.data.push_back(pattern(bytes, seed++));
  }
  for (size_t i = 0; i < std::size(tensors); ++i) {
    ASSERT_TRUE(w.add_tensor(tensors[i].name, tensors[i].type, tensors[i].dims, s.data[i]).ok());
  }
  const std::vector<uint8_t> filled = pattern(40, 99);
  ASSERT_TRUE(w.add_tensor("f.filled", TensorType::kI32, std::vector<uint64_t>{10},
                           [filled](std::span<uint8_t> out) {
                             std::copy(filled.begin(), filled.end(), out.begin());
                             return ok_status();
                           })
                  .ok());
  s.data.push_back(filled);
}

TEST(GgufRoundTrip, MetadataAndTensorsSurvive) {
  Sample s;
  fill_sample(s);
  const Result<std::vector<uint8_t>> bytes = s.writer.write_to_buffer();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(bytes->size(), s.writer.file_size());
  const Result<GgufFile> file = GgufFile::parse(*bytes, "roundtrip");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const GgufMetadata& md = file->metadata();

  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(md.size(), 16u);
  EXPECT_EQ(md.entries()[0].key, "general.architecture");  // insertion order kept
  EXPECT_EQ(md.find("u8")->to_uint(), 200u);
  EXPECT_EQ(md.find("i8")->to_int(), -100);
  EXPECT_EQ(md.find("u16")->to_uint(), 60000u);
  EXPECT_EQ(md.find("i16")->to_int(), -30000);
  EXPECT_EQ(md.find("u32")->to_uint(), 4000000000u);
  EXPECT_EQ(md.find("i32")->to_int(), -2000000000);
  EXPECT_EQ(md.find("f32")->to_double(), 3.25);
  EXPECT_EQ(md.find("bool")->to_bool(), true);
  EXPECT_EQ(md.find("u64")->to_uint(), uint64_t{1} << 60);
  EXPECT_EQ(md.find("i64")->to_int(), -(int64_t{1} << 60));
  EXPECT_EQ(md.find("f64")->to_double(), -1e-300);
  EXPECT_EQ(*md.get_string("utf8"), "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80");
  const auto strings = *md.get_string_array("strings");
  ASSERT_EQ(strings.size(), 3u);
  EXPECT_EQ(strings[0], "");
  EXPECT_EQ(strings[2], "<0x0A>");
  EXPECT_EQ(*md.get_f32_array("floats"), (std::vector<float>{0.5f, -0.25f}));
  const GgufValue* nested = md.find("nested");
  ASSERT_TRUE(nested != nullptr && nested->is_array());
  ASSERT_EQ(nested->arrays().size(), 3u);
  EXPECT_EQ(nested->arrays()[0].element(1).to_uint(), 2u);
  EXPECT_EQ(nested->arrays()[1].element(0).to_string(), "x");
  EXPECT_EQ(nested->arrays()[2].arrays()[0].array_size(), 0u);

  // serialized_bytes() accounts for every metadata byte: key length + key + type tag + value.
  uint64_t metadata_bytes = 0;
  for (const GgufKeyValue& kv : md.entries())
    metadata_bytes += 8 + kv.key.size() + 4 + kv.value.serialized_bytes();
  EXPECT_EQ(metadata_bytes, file->layout().metadata_bytes);

  ASSERT_EQ(file->tensors().size(), 6u);
  for (size_t i = 0; i < file->tensors().size(); ++i) {
    const GgufTensorInfo& t = file->tensors()[i];
    const std::span<const uint8_t> data = file->tensor_data(t);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), s.data[i].begin(), s.data[i].end())) << t.name;
  }
  const GgufTensorInfo* q = file->find_tensor("c.q4_k");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, TensorType::kQ4_K);
  EXPECT_EQ(q->n_dims, 2u);
  EXPECT_EQ(q->bytes, 288u);
  EXPECT_EQ(q->element_count(), 512u);
  EXPECT_EQ(file->find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, FollowsLlamaCppLayoutConventions) {
  Sample s;
  fill_sample(s);
  const std::vector<uint8_t> bytes = *s.writer.write_to_buffer();
  const GgufFile file = *GgufFile::parse(bytes, "layout");
  // Data section aligned; each tensor at the running offset rounded up to the alignment (what
  // llama.cpp's reader requires); zero padding after every tensor, the last included.
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_EQ(file.data_section_offset() % 32, 0u);
  uint64_t expected_offset = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    EXPECT_EQ(t.data_offset, expected_offset) << t.name;
    const uint64_t end = file.data_section_offset() + t.data_offset + t.bytes;
    expected_offset = (t.data_offset + t.bytes + 31) / 32 * 32;
    for (uint64_t p = end; p < file.data_section_offset() + expected_offset; ++p) {
      EXPECT_EQ(bytes[p], 0) << "padding after " << t.name;
    }
  }
  EXPECT_EQ(bytes.size(), file.data_section_offset() + expected_offset);
  // Header fields where llama.cpp expects them.
  EXPECT_EQ(load_le<uint32_t>(bytes.data()), 0x46554747u);
  EXPECT_EQ(load_le<uint32_t>(bytes.data() + 4), 3u);
  EXPECT_EQ(load_le<uint64_t>(bytes.data() + 8), 6u);
  EXPECT_EQ(load_le<uint64_t>(bytes.data() + 16), 16u);
  // Layout accounting sums to the file size.
  const GgufLayout& l = file.layout();
  EXPECT_EQ(l.header_bytes, 24u);
  EXPECT_EQ(l.header_bytes + l.metadata_bytes + l.tensor_info_bytes + l.alignment_padding_bytes +
                l.tensor_data_bytes + l.tensor_padding_bytes + l.trailing_bytes,
            l.file_bytes);
  EXPECT_EQ(l.trailing_bytes, 0u);
  // Validation reads nothing of the tensor data.
  EXPECT_LE(file.parsed_bytes(), file.data_section_offset());
}

TEST(GgufRoundTrip, CustomAlignment) {
  GgufWriter w;
  ASSERT_TRUE(w.set_scalar("general.alignment", uint32_t{64}).ok());
  const std::vector<uint8_t> a = pattern(4, 1), b = pattern(8, 2);
  ASSERT_TRUE(w.add_tensor("a", TensorType::kF32, std::vector<uint64_t>{1}, a).ok());
  ASSERT_TRUE(w.add_tensor("b", TensorType::kF32, std::vector<uint64_t>{2}, b).ok());
  const std::vector<uint8_t> bytes = *w.write_to_buffer();
  const GgufFile file = *GgufFile::parse(bytes, "aligned");
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.data_section_offset() % 64, 0u);
  EXPECT_EQ(file.tensors()[1].data_offset, 64u);
}

TEST(GgufRoundTrip, VocabularyOnlyFileEndsAfterMetadata) {
  GgufWriter w;
  ASSERT_TRUE(w.set_string("general.architecture", "llama").ok());
  const std::vector<uint8_t> bytes = *w.write_to_buffer();
  const GgufFile file = *GgufFile::parse(bytes, "vocab");
  EXPECT_TRUE(file.tensors().empty());
  // llama.cpp's vocabulary files stop right after the metadata, without padding.
  std::vector<uint8_t> unpadded(
      bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(file.layout().header_bytes +
                                                                 file.layout().metadata_bytes));
  EXPECT_TRUE(GgufFile::parse(unpadded, "unpadded").ok());
}

TEST(GgufRoundTrip, WriteFileIsAtomicAndIdentical) {
  Sample s;
  fill_sample(s);
  testing::TempDir dir;
  const std::string path = dir.file("model.gguf");
  ASSERT_TRUE(s.writer.write_file(path).ok());
  EXPECT_EQ(testing::read_file_bytes(path), *s.writer.write_to_buffer());
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u) << "temporary file left behind";
  // The format-neutral view of the same file.
  const Result<std::unique_ptr<ModelFile>> model = open_model_file(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->format_name(), "gguf");
  ASSERT_EQ((*model)->tensor_views().size(), 6u);
  const TensorView* view = (*model)->tensor_view("c.q4_k");
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->type, TensorType::kQ4_K);
  EXPECT_EQ(view->rows(), 2u);
  EXPECT_EQ(view->row_bytes(), 144u);
  EXPECT_TRUE(std::equal(view->data.begin(), view->data.end(), s.data[2].begin(), s.data[2].end()));
  EXPECT_EQ((*model)->tensor_view("missing"), nullptr);
  const Result<GgufFile> opened = GgufFile::open(path);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->path(), path);
  EXPECT_EQ(opened->tensors().size(), 6u);
  // A failing fill leaves neither the target nor a temporary file.
  GgufWriter failing;
  ASSERT_TRUE(
      failing
          .add_tensor("x", TensorType::kF32, std::vector<uint64_t>{4},
                      [](std::span<uint8_t>) { return Status(ErrorCode::kInternal, "boom"); })
          .ok());
  const Status status = failing.write_file(dir.file("failed.gguf"));
  EXPECT_EQ(status.code(), ErrorCode::kInternal);
  EXPECT_EQ(status.where().tensor, "x");
  EXPECT_FALSE(std::filesystem::exists(dir.file("failed.gguf")));
  entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(GgufWriter, RejectsWhatLlamaCppCouldNotRead) {
  GgufWriter w;
  const std::vector<uint8_t> four(4);
  const std::vector<uint64_t> one{1};
  EXPECT_EQ(w.set_string("", "x").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.set_string("bad\xFF", "x").code(), ErrorCode::kInvalidUtf8);
  EXPECT_EQ(w.set_scalar("general.alignment", uint64_t{32}).code(), ErrorCode::kBadAlignment);
  EXPECT_EQ(w.set_scalar("general.alignment", uint32_t{48}).code(), ErrorCode::kBadAlignment);
  ASSERT_TRUE(w.add_tensor("t", TensorType::kF32, one, four).ok());
  EXPECT_EQ(w.add_tensor("t", TensorType::kF32, one, four).code(), ErrorCode::kDuplicateTensor);
  EXPECT_EQ(w.add_tensor(std::string(64, 'n'), TensorType::kF32, one, four).code(),
            ErrorCode::kLimitExceeded);
  EXPECT_TRUE(w.add_tensor(std::string(63, 'n'), TensorType::kF32, one, four).ok());
  EXPECT_EQ(w.add_tensor("u", TensorType::kF32, std::vector<uint64_t>{2}, four).code(),
            ErrorCode::kSizeMismatch);
  EXPECT_EQ(w.add_tensor("v", TensorType::kQ4_0, std::vector<uint64_t>{16}, four).code(),
            ErrorCode::kBadShape);
  EXPECT_EQ(w.add_tensor("w", TensorType::kF32, std::vector<uint64_t>{1, 1, 1, 1, 1}, four).code(),
            ErrorCode::kBadShape);
  EXPECT_EQ(w.set_scalar("general.alignment", uint32_t{64}).code(), ErrorCode::kInvalidArgument);
  // Replacing a key keeps its position.
  ASSERT_TRUE(w.set_scalar("k1", uint8_t{1}).ok());
  ASSERT_TRUE(w.set_scalar("k2", uint8_t{2}).ok());
  ASSERT_TRUE(w.set_scalar("k1", uint8_t{3}).ok());
  const std::vector<uint8_t> bytes = *w.write_to_buffer();  // parse() borrows the bytes
  const GgufFile file = *GgufFile::parse(bytes, "replace");
  EXPECT_EQ(file.metadata().entries()[0].key, "k1");
  EXPECT_EQ(file.metadata().entries()[0].value.to_uint(), 3u);
}

}  // namespace
}  // namespace synapse
