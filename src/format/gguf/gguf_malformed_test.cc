// SPDX-License-Identifier: Apache-2.0
// Malformed GGUF files. Each table case hand-assembles a small file (so it knows where every field
// starts), breaks one rule and checks the stable error code and where the parser says the problem
// is. Sweeps over every prefix and every byte of small files, and random mutations of a real model,
// check that no input crashes the parser or gets an internal error out of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "base/checked_math.h"
#include "format/byte_order.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_writer.h"
#include "tests/support/hand_assembly.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Bytes = std::vector<uint8_t>;
using VT = GgufValueType;

// Hand assembly.

using testing::cat;
using testing::le;
using testing::repeat;
using testing::str;

uint32_t id(VT type) { return static_cast<uint32_t>(type); }
uint32_t id(TensorType type) { return static_cast<uint32_t>(type); }

// An array value: element type, count, then `elements` as given (which may disagree with count).
Bytes arr(VT element_type, uint64_t count, const Bytes& elements = {}) {
  return cat({le(id(element_type)), le(count), elements});
}

// `levels` arrays, each the single element of the one outside it, around an empty u8 array.
Bytes nested_arrays(uint32_t levels) {
  Bytes inner = arr(VT::kUint8, 0);
  for (uint32_t i = 1; i < levels; ++i) inner = arr(VT::kArray, 1, inner);
  return inner;
}

uint32_t fourcc(const char (&text)[5]) {
  return load_le<uint32_t>(reinterpret_cast<const uint8_t*>(text));
}

struct KvSpec {
  std::string key;
  uint32_t type = 0;
  Bytes value;                              // everything after the type tag
  std::optional<uint64_t> key_length = {};  // written instead of key.size() when set
};

KvSpec kv_u32(std::string key, uint32_t v) { return {std::move(key), id(VT::kUint32), le(v)}; }
KvSpec kv_str(std::string key, std::string_view v) {
  return {std::move(key), id(VT::kString), str(v)};
}
KvSpec kv_arr(std::string key, Bytes payload) {
  return {std::move(key), id(VT::kArray), std::move(payload)};
}

struct TensorInfoSpec {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = id(TensorType::kF32);
  uint64_t offset = 0;
  std::optional<uint32_t> n_dims = {};       // written instead of dims.size() when set
  std::optional<uint64_t> name_length = {};  // written instead of name.size() when set
};

struct FileSpec {
  uint32_t magic = kGgufMagic;
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count;  // written instead of tensors.size() when set
  std::optional<uint64_t> kv_count;      // written instead of kvs.size() when set
  std::vector<KvSpec> kvs;
  std::vector<TensorInfoSpec> tensors;
  uint64_t alignment = kGgufDefaultAlignment;  // padding only: general.alignment is a kv like any
  std::optional<uint64_t> data_bytes;          // default: room for every sane tensor, padded
  std::optional<uint64_t> cut_at;              // keep only this many bytes
};

struct Encoded {
  Bytes bytes;
  std::map<std::string, uint64_t> at;  // where each named field starts: "kv1.value", "t0.type", ...
};

// The padded end of a tensor's data, or 0 when its type, shape or offset is not sane (those cases
// fail before the data section matters) or absurdly far (no test needs a large buffer).
uint64_t padded_end(const TensorInfoSpec& t, uint64_t alignment) {
  constexpr uint64_t kMaxTestData = 1 << 20;
  const TensorTypeInfo* info = find_tensor_type(t.type);
  if (info == nullptr || t.dims.empty() || t.dims.size() > kGgufMaxDims) return 0;
  const Result<uint64_t> size = tensor_byte_size(info->type, t.dims);
  if (!size.ok() || *size > kMaxTestData || t.offset > kMaxTestData) return 0;
  return *checked_align_up(t.offset + *size, alignment);
}

Encoded encode(const FileSpec& spec) {
  Encoded e;
  Bytes& b = e.bytes;
  auto mark = [&](const std::string& name) { e.at[name] = b.size(); };
  auto put = [&](const Bytes& part) { b.insert(b.end(), part.begin(), part.end()); };
  mark("magic");
  put(le(spec.magic));
  mark("version");
  put(le(spec.version));
  mark("tensor_count");
  put(le<uint64_t>(spec.tensor_count.value_or(spec.tensors.size())));
  mark("kv_count");
  put(le<uint64_t>(spec.kv_count.value_or(spec.kvs.size())));
  for (size_t i = 0; i < spec.kvs.size(); ++i) {
    const std::string p = "kv" + std::to_string(i);
    mark(p);
    put(le(spec.kvs[i].key_length.value_or(spec.kvs[i].key.size())));
    put(Bytes(spec.kvs[i].key.begin(), spec.kvs[i].key.end()));
    mark(p + ".type");
    put(le(spec.kvs[i].type));
    mark(p + ".value");
    put(spec.kvs[i].value);
  }
  uint64_t data_bytes = 0;
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const TensorInfoSpec& t = spec.tensors[i];
    const std::string p = "t" + std::to_string(i);
    mark(p);
    put(le(t.name_length.value_or(t.name.size())));
    put(Bytes(t.name.begin(), t.name.end()));
    mark(p + ".n_dims");
    put(le(t.n_dims.value_or(static_cast<uint32_t>(t.dims.size()))));
    mark(p + ".dims");
    for (uint64_t d : t.dims) put(le(d));
    mark(p + ".type");
    put(le(t.type));
    mark(p + ".offset");
    put(le(t.offset));
    data_bytes = std::max(data_bytes, padded_end(t, spec.alignment));
  }
  mark("infos_end");
  if (!spec.tensors.empty()) {
    while (b.size() % spec.alignment != 0) b.push_back(0);
  }
  mark("data");
  for (uint64_t i = 0; i < spec.data_bytes.value_or(data_bytes); ++i) {
    b.push_back(static_cast<uint8_t>(0xA5 ^ i));
  }
  if (spec.cut_at && *spec.cut_at < b.size()) b.resize(*spec.cut_at);
  return e;
}

// Two keys and two F32 tensors: "a" [8] at 0 and "b" [4, 2] at 32, 64 bytes of data.
FileSpec base_spec() {
  FileSpec s;
  s.kvs = {kv_str("general.architecture", "llama"), kv_u32("test.u32", 7)};
  s.tensors = {{"a", {8}, id(TensorType::kF32), 0}, {"b", {4, 2}, id(TensorType::kF32), 32}};
  return s;
}

// Error codes the parser may answer for a malformed file; anything else (kInternal above all) is a
// bug.
bool is_format_error(ErrorCode code) {
  const auto n = static_cast<uint16_t>(code);
  return n >= static_cast<uint16_t>(ErrorCode::kFileTruncated) &&
         n <= static_cast<uint16_t>(ErrorCode::kBadValue);
}

// Checks what must hold for any input: a failure has a format code and an offset inside the
// file; a success accounts for every byte and its views and values stay inside the file.
void expect_sane(const Result<GgufFile>& result, std::span<const uint8_t> bytes,
                 const std::string& what) {
  if (!result.ok()) {
    const Status s = result.status();
    EXPECT_TRUE(is_format_error(s.code())) << what << ": " << s.to_string();
    ASSERT_TRUE(s.where().byte_offset.has_value()) << what << ": " << s.to_string();
    EXPECT_LE(*s.where().byte_offset, bytes.size()) << what << ": " << s.to_string();
    return;
  }
  const GgufFile& f = *result;
  const GgufLayout& l = f.layout();
  EXPECT_EQ(l.header_bytes + l.metadata_bytes + l.tensor_info_bytes + l.alignment_padding_bytes +
                l.tensor_data_bytes + l.tensor_padding_bytes + l.trailing_bytes,
            bytes.size())
      << what;
  for (const GgufTensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> data = f.tensor_data(t);
    EXPECT_EQ(data.size(), t.bytes) << what;
    EXPECT_GE(data.data(), bytes.data()) << what;
    EXPECT_LE(data.data() + data.size(), bytes.data() + bytes.size()) << what;
  }
  for (const GgufKeyValue& kv : f.metadata().entries()) {
    EXPECT_FALSE(kv.value.to_display_string().empty()) << what;
  }
}

// The table.

struct MalformedCase {
  std::string name;
  std::function<void(FileSpec&)> mutate;  // applied to base_spec()
  ErrorCode code;
  std::string at;         // the field whose offset the error must report; empty: not checked
  uint64_t at_delta = 0;  // added to that field's offset
  std::string key;        // where().key, exactly ("" = none)
  std::string tensor;     // where().tensor, exactly
  GgufLimits limits = {};
};

// Failures print the case's name rather than its bytes.
void PrintTo(const MalformedCase& mc, std::ostream* os) { *os << mc.name; }

using Mutation = std::function<void(FileSpec&)>;

Mutation cut(const std::string& field, uint64_t delta, Mutation before = nullptr) {
  return [=](FileSpec& s) {
    if (before) before(s);
    s.cut_at = encode(s).at.at(field) + delta;
  };
}

// A 200-byte first key, so later fields lie past the minimum size the counts imply and a cut
// inside them hits the field's own read.
void pad_front(FileSpec& s) { s.kvs.insert(s.kvs.begin(), kv_str("pad", std::string(200, 'p'))); }

void add_kv(FileSpec& s, KvSpec kv) { s.kvs.push_back(std::move(kv)); }

std::vector<MalformedCase> malformed_cases() {
  const uint64_t k2p63 = uint64_t{1} << 63;
  const uint64_t kMax = UINT64_MAX;
  const ErrorCode kTrunc = ErrorCode::kFileTruncated;
  const ErrorCode kLimit = ErrorCode::kLimitExceeded;
  std::vector<MalformedCase> c = {
      // Header.
      {"EmptyFile", [](FileSpec& s) { s.cut_at = 0; }, kTrunc, "magic"},
      {"ThreeBytes", [](FileSpec& s) { s.cut_at = 3; }, kTrunc, "magic"},
      {"CutInVersion", cut("version", 2), kTrunc, "version"},
      {"CutInTensorCount", cut("tensor_count", 5), kTrunc, "tensor_count"},
      {"CutInKvCount", cut("kv_count", 7), kTrunc, "kv_count"},
      {"CutAfterHeader", cut("kv0", 0), kTrunc, "kv_count"},
      {"BadMagicGgml", [](FileSpec& s) { s.magic = fourcc("GGML"); }, ErrorCode::kBadMagic,
       "magic"},
      {"BadMagicByteSwapped", [](FileSpec& s) { s.magic = fourcc("FUGG"); }, ErrorCode::kBadMagic,
       "magic"},
      {"BadMagicZero", [](FileSpec& s) { s.magic = 0; }, ErrorCode::kBadMagic, "magic"},
      {"Version0", [](FileSpec& s) { s.version = 0; }, ErrorCode::kUnsupportedVersion, "version"},
      {"Version1", [](FileSpec& s) { s.version = 1; }, ErrorCode::kUnsupportedVersion, "version"},
      {"Version4", [](FileSpec& s) { s.version = 4; }, ErrorCode::kUnsupportedVersion, "version"},
      {"VersionBigEndian3", [](FileSpec& s) { s.version = 0x03000000; },
       ErrorCode::kUnsupportedVersion, "version"},
      {"VersionMax", [](FileSpec& s) { s.version = UINT32_MAX; }, ErrorCode::kUnsupportedVersion,
       "version"},
      {"TensorCount2p63", [=](FileSpec& s) { s.tensor_count = k2p63; }, kLimit, "tensor_count"},
      {"TensorCountMax", [=](FileSpec& s) { s.tensor_count = kMax; }, kLimit, "tensor_count"},
      {"TensorCountOverDefaultLimit", [](FileSpec& s) { s.tensor_count = (1u << 20) + 1; }, kLimit,
       "tensor_count"},
      {"KvCount2p63", [=](FileSpec& s) { s.kv_count = k2p63; }, kLimit, "kv_count"},
      {"KvCountMax", [=](FileSpec& s) { s.kv_count = kMax; }, kLimit, "kv_count"},
      {"KvCountOverDefaultLimit", [](FileSpec& s) { s.kv_count = (1u << 20) + 1; }, kLimit,
       "kv_count"},
      {"TensorCountPastEnd", [](FileSpec& s) { s.tensor_count = 1000; }, kTrunc, "tensor_count"},
      {"KvCountPastEnd", [](FileSpec& s) { s.kv_count = 1000; }, kTrunc, "kv_count"},
      // Keys.
      {"KeyLengthPastEnd", [](FileSpec& s) { s.kvs[1].key_length = 1000; }, kTrunc, "kv1", 8},
      {"KeyLength2p63", [=](FileSpec& s) { s.kvs[1].key_length = k2p63; }, kLimit, "kv1"},
      {"KeyLengthMax", [=](FileSpec& s) { s.kvs[1].key_length = kMax; }, kLimit, "kv1"},
      {"KeyLongerThanLimit", [](FileSpec& s) { add_kv(s, kv_u32(std::string(65536, 'k'), 1)); },
       kLimit, "kv2"},
      {"EmptyKey", [](FileSpec& s) { add_kv(s, kv_u32("", 1)); }, ErrorCode::kBadValue, "kv2"},
      {"KeyInvalidUtf8", [](FileSpec& s) { add_kv(s, kv_u32("bad\xFFkey", 1)); },
       ErrorCode::kInvalidUtf8, "kv2", 8 + 3},
      {"KeyOverlongUtf8", [](FileSpec& s) { add_kv(s, kv_u32("x\xC0\xAF", 1)); },
       ErrorCode::kInvalidUtf8, "kv2", 8 + 1},
      {"KeySurrogateUtf8", [](FileSpec& s) { add_kv(s, kv_u32("\xED\xA0\x80", 1)); },
       ErrorCode::kInvalidUtf8, "kv2", 8},
      {"KeyTruncatedUtf8", [](FileSpec& s) { add_kv(s, kv_u32("ab\xE4\xB8", 1)); },
       ErrorCode::kInvalidUtf8, "kv2", 8 + 2},
      {"DuplicateKey", [](FileSpec& s) { add_kv(s, kv_u32("test.u32", 8)); },
       ErrorCode::kDuplicateKey, "kv2", 0, "test.u32"},
      {"CutInKeyLength", cut("kv1", 4, pad_front), kTrunc, "kv1"},
      {"CutInKeyBytes", cut("kv1", 10, pad_front), kTrunc, "kv1", 8},
      {"CutInValueType", cut("kv1.type", 1, pad_front), kTrunc, "kv1.type"},
      // Values.
      {"UnknownValueType13", [](FileSpec& s) { s.kvs[1].type = 13; }, ErrorCode::kUnknownValueType,
       "kv1.type", 0, "test.u32"},
      {"UnknownValueTypeMax", [](FileSpec& s) { s.kvs[1].type = UINT32_MAX; },
       ErrorCode::kUnknownValueType, "kv1.type", 0, "test.u32"},
      {"StringLength2p63", [=](FileSpec& s) { s.kvs[0].value = le(k2p63); }, kLimit, "kv0.value", 0,
       "general.architecture"},
      {"StringLengthPastEnd",
       [](FileSpec& s) {
         s.kvs[0].value = cat({le<uint64_t>(1000), str("x")});
       },
       kTrunc, "kv0.value", 8, "general.architecture"},
      {"CutInStringLength", cut("kv1.value", 3, pad_front), kTrunc, "kv1.value", 0,
       "general.architecture"},
      {"CutInStringBytes", cut("kv1.value", 10, pad_front), kTrunc, "kv1.value", 8,
       "general.architecture"},
      {"CutInScalar", cut("kv2.value", 2, pad_front), kTrunc, "kv2.value", 0, "test.u32"},
      {"UnknownArrayElementType",
       [](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT{13}, 1, le<uint8_t>(0)))); },
       ErrorCode::kUnknownValueType, "kv2.value", 0, "arr"},
      {"UnknownNestedElementType",
       [](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT::kArray, 1, arr(VT{99}, 0)))); },
       ErrorCode::kUnknownValueType, "kv2.value", 12, "arr"},
      {"ArrayLength2p63", [=](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT::kUint8, k2p63))); },
       kLimit, "kv2.value", 4, "arr"},
      {"ArrayLengthMax", [=](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT::kFloat64, kMax))); },
       kLimit, "kv2.value", 4, "arr"},
      {"ArrayLengthPastEnd",
       [](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT::kUint32, 1000, le(1u)))); }, kTrunc,
       "kv2.value", 4, "arr"},
      {"StringArrayLengthPastEnd",
       [](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT::kString, 1000, str("x")))); }, kTrunc,
       "kv2.value", 4, "arr"},
      {"StringArrayElementPastEnd",
       [](FileSpec& s) {
         add_kv(s, kv_arr("arr", arr(VT::kString, 2, cat({str("x"), le<uint64_t>(4000)}))));
       },
       kTrunc, "kv2.value", 12 + 9 + 8, "arr"},
      {"NestedArrayCountPastEnd",
       [](FileSpec& s) { add_kv(s, kv_arr("arr", arr(VT::kArray, (1u << 20) + 1))); }, kTrunc,
       "kv2.value", 4, "arr"},
      {"ArraysNestedTooDeep", [](FileSpec& s) { add_kv(s, kv_arr("deep", nested_arrays(5))); },
       kLimit, "kv2.value", 4 * 12, "deep"},
      {"ArraysNestedFarTooDeep", [](FileSpec& s) { add_kv(s, kv_arr("deep", nested_arrays(64))); },
       kLimit, "kv2.value", 4 * 12, "deep"},
      {"CutInArrayData",
       cut("kv3.value", 12 + 5,
           [](FileSpec& s) {
             pad_front(s);
             add_kv(s, kv_arr("arr", arr(VT::kUint32, 3, repeat(le(7u), 3))));
           }),
       kTrunc, "kv3.value", 4, "arr"},
      {"CutInStringArrayElement",
       cut("kv3.value", 12 + 9 + 10,
           [](FileSpec& s) {
             pad_front(s);
             add_kv(s,
                    kv_arr("arr", arr(VT::kString, 2, cat({str("x"), str("0123456789abcdef")}))));
           }),
       kTrunc, "kv3.value", 12 + 9 + 8, "arr"},
      // general.alignment.
      {"AlignmentU64",
       [](FileSpec& s) {
         add_kv(s, {"general.alignment", id(VT::kUint64), le<uint64_t>(32)});
       },
       ErrorCode::kTypeMismatch, "kv2", 0, "general.alignment"},
      {"AlignmentI32",
       [](FileSpec& s) {
         add_kv(s, {"general.alignment", id(VT::kInt32), le<int32_t>(32)});
       },
       ErrorCode::kTypeMismatch, "kv2", 0, "general.alignment"},
      {"AlignmentString", [](FileSpec& s) { add_kv(s, kv_str("general.alignment", "32")); },
       ErrorCode::kTypeMismatch, "kv2", 0, "general.alignment"},
      {"AlignmentArray",
       [](FileSpec& s) { add_kv(s, kv_arr("general.alignment", arr(VT::kUint32, 1, le(32u)))); },
       ErrorCode::kTypeMismatch, "kv2", 0, "general.alignment"},
      {"Alignment0", [](FileSpec& s) { add_kv(s, kv_u32("general.alignment", 0)); },
       ErrorCode::kBadAlignment, "kv2", 0, "general.alignment"},
      {"Alignment3", [](FileSpec& s) { add_kv(s, kv_u32("general.alignment", 3)); },
       ErrorCode::kBadAlignment, "kv2", 0, "general.alignment"},
      {"Alignment48", [](FileSpec& s) { add_kv(s, kv_u32("general.alignment", 48)); },
       ErrorCode::kBadAlignment, "kv2", 0, "general.alignment"},
      {"AlignmentMax", [](FileSpec& s) { add_kv(s, kv_u32("general.alignment", UINT32_MAX)); },
       ErrorCode::kBadAlignment, "kv2", 0, "general.alignment"},
      // Tensor infos.
      {"TensorNameLength2p63", [=](FileSpec& s) { s.tensors[1].name_length = k2p63; }, kLimit,
       "t1"},
      {"TensorNameLongerThanLimit", [](FileSpec& s) { s.tensors[1].name = std::string(4097, 'n'); },
       kLimit, "t1"},
      {"TensorNamePastEnd", [](FileSpec& s) { s.tensors[1].name_length = 1000; }, kTrunc, "t1", 8},
      {"EmptyTensorName", [](FileSpec& s) { s.tensors[1].name = ""; }, ErrorCode::kBadValue, "t1"},
      {"TensorNameInvalidUtf8", [](FileSpec& s) { s.tensors[1].name = "blk.\x80"; },
       ErrorCode::kInvalidUtf8, "t1", 8 + 4, "", "blk.\x80"},
      {"DuplicateTensorName", [](FileSpec& s) { s.tensors[1].name = "a"; },
       ErrorCode::kDuplicateTensor, "t1", 0, "", "a"},
      {"NDims0", [](FileSpec& s) { s.tensors[1].dims = {}; }, ErrorCode::kBadShape, "t1.n_dims", 0,
       "", "b"},
      {"NDims5",
       [](FileSpec& s) {
         s.tensors[1].dims = {2, 2, 2, 1, 1};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"NDimsMax", [](FileSpec& s) { s.tensors[1].n_dims = UINT32_MAX; }, ErrorCode::kBadShape,
       "t1.n_dims", 0, "", "b"},
      {"ZeroDim",
       [](FileSpec& s) {
         s.tensors[1].dims = {4, 0};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"DimsProductOverflows",
       [](FileSpec& s) {
         s.tensors[1].dims = {uint64_t{1} << 32, uint64_t{1} << 32};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"ElementsPastInt64",
       [](FileSpec& s) {
         s.tensors[1].dims = {uint64_t{1} << 62, 2, 2};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"BytesOverflow", [](FileSpec& s) { s.tensors[1].dims = {uint64_t{1} << 62}; },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"Q4KRowNotBlockMultiple",
       [](FileSpec& s) {
         s.tensors[1] = {"b", {100}, id(TensorType::kQ4_K), 32};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"Q4_0RowNotBlockMultiple",
       [](FileSpec& s) {
         s.tensors[1] = {"b", {16, 2}, id(TensorType::kQ4_0), 32};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"CutInTensorNameLength", cut("t1", 5), kTrunc, "t1"},
      {"CutInTensorNDims", cut("t1.n_dims", 2), kTrunc, "t1.n_dims"},
      {"CutInTensorDim", cut("t1.dims", 11), kTrunc, "t1.dims", 8},
      {"CutInTensorType", cut("t1.type", 3), kTrunc, "t1.type"},
      {"CutInTensorOffset", cut("t1.offset", 7), kTrunc, "t1.offset"},
      // Data section.
      {"MisalignedOffset", [](FileSpec& s) { s.tensors[1].offset = 36; }, ErrorCode::kBadAlignment,
       "t1.offset", 0, "", "b"},
      {"OffsetMisalignedForCustomAlignment",
       [](FileSpec& s) {
         add_kv(s, kv_u32("general.alignment", 64));
         s.alignment = 64;
       },
       ErrorCode::kBadAlignment, "t1.offset", 0, "", "b"},
      {"TensorsOverlapPartly", [](FileSpec& s) { s.tensors[0].dims = {16}; },
       ErrorCode::kTensorOverlap, "t1", 0, "", "b"},
      {"TensorsAtSameOffset", [](FileSpec& s) { s.tensors[1].offset = 0; },
       ErrorCode::kTensorOverlap, "t1", 0, "", "b"},
      {"TensorsOverlapOutOfFileOrder",
       [](FileSpec& s) {
         s.tensors[0].offset = 32;
         s.tensors[1] = {"b", {16}, id(TensorType::kF32), 0};
       },
       ErrorCode::kTensorOverlap, "t0", 0, "", "a"},
      {"TensorPastEndOfData",
       [](FileSpec& s) {
         s.tensors[1].offset = 64;
         s.data_bytes = 64;
       },
       ErrorCode::kTensorOutOfRange, "t1", 0, "", "b"},
      {"TensorFarPastEndOfData", [](FileSpec& s) { s.tensors[1].offset = uint64_t{1} << 40; },
       ErrorCode::kTensorOutOfRange, "t1", 0, "", "b"},
      {"OffsetPlusSizeOverflows", [](FileSpec& s) { s.tensors[1].offset = UINT64_MAX - 31; },
       ErrorCode::kTensorOutOfRange, "t1", 0, "", "b"},
      {"DataSectionStartsPastEof", cut("infos_end", 0), kTrunc, "infos_end"},
      {"CutInAlignmentPadding", cut("infos_end", 5), kTrunc, "infos_end"},
      {"CutAtDataStart", cut("data", 0), kTrunc, "t0", 0, "", "a"},
      {"CutInFirstTensor", cut("data", 17), kTrunc, "t0", 0, "", "a"},
      {"CutBetweenTensors", cut("data", 32), kTrunc, "t1", 0, "", "b"},
      {"CutInLastTensor", cut("data", 40), kTrunc, "t1", 0, "", "b"},
  };
  // Tensor type ids that ggml never defined or removed (Q4_2, Q4_3, the _4_4/_4_8/_8_8 repacks).
  for (uint32_t bad : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 41u, 1000u, UINT32_MAX}) {
    c.push_back({"UnknownTensorType" + std::to_string(bad),
                 [bad](FileSpec& s) { s.tensors[1].type = bad; }, ErrorCode::kUnknownTensorType,
                 "t1.type", 0, "", "b"});
  }
  // Limits set lower than the defaults: the same checks with small files.
  auto limited = [&](std::string name, Mutation m, std::string at, uint64_t delta, std::string key,
                     GgufLimits limits) {
    c.push_back(
        {std::move(name), std::move(m), kLimit, std::move(at), delta, std::move(key), "", limits});
  };
  limited("MaxTensors", [](FileSpec&) {}, "tensor_count", 0, "", {.max_tensors = 1});
  limited("MaxKv", [](FileSpec&) {}, "kv_count", 0, "", {.max_kv = 1});
  limited("MaxKeyBytes", [](FileSpec&) {}, "kv0", 0, "", {.max_key_bytes = 8});
  limited("MaxStringBytes", [](FileSpec&) {}, "kv0.value", 0, "general.architecture",
          {.max_string_bytes = 4});
  limited("MaxArrayElements",
          [](FileSpec& s) {
            add_kv(s, kv_arr("arr", arr(VT::kUint8, 3, {1, 2, 3})));
          },
          "kv2.value", 4, "arr", {.max_array_elements = 2});
  limited("MaxArrayDepth", [](FileSpec& s) { add_kv(s, kv_arr("deep", nested_arrays(2))); },
          "kv2.value", 12, "deep", {.max_array_depth = 1});
  limited("MaxNestedArrays",
          [](FileSpec& s) {
            add_kv(s, kv_arr("nest", arr(VT::kArray, 4, repeat(arr(VT::kUint8, 0), 4))));
          },
          "kv2.value", 0, "nest", {.max_nested_arrays = 3});
  limited("MaxNestedArraysAcrossKeys",
          [](FileSpec& s) {
            add_kv(s, kv_arr("nest1", arr(VT::kArray, 2, repeat(arr(VT::kUint8, 0), 2))));
            add_kv(s, kv_arr("nest2", arr(VT::kArray, 2, repeat(arr(VT::kUint8, 0), 2))));
          },
          "kv3.value", 0, "nest2", {.max_nested_arrays = 3});
  limited("MaxTensorNameBytes", [](FileSpec&) {}, "t0", 0, "", {.max_tensor_name_bytes = 0});
  return c;
}

class GgufMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(GgufMalformed, FailsWithCodeAndLocation) {
  const MalformedCase& mc = GetParam();
  FileSpec spec = base_spec();
  mc.mutate(spec);
  const Encoded file = encode(spec);
  const Result<GgufFile> result = GgufFile::parse(file.bytes, "malformed.gguf", mc.limits);
  ASSERT_FALSE(result.ok()) << mc.name << " was accepted";
  const Status s = result.status();
  EXPECT_EQ(s.code(), mc.code) << s.to_string();
  EXPECT_EQ(s.where().path, "malformed.gguf");
  if (!mc.at.empty()) {
    ASSERT_TRUE(file.at.count(mc.at)) << "no field " << mc.at;
    EXPECT_EQ(s.where().byte_offset, file.at.at(mc.at) + mc.at_delta) << s.to_string();
  }
  EXPECT_EQ(s.where().key, mc.key) << s.to_string();
  EXPECT_EQ(s.where().tensor, mc.tensor) << s.to_string();
  expect_sane(result, file.bytes, mc.name);
}

INSTANTIATE_TEST_SUITE_P(Cases, GgufMalformed, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<MalformedCase>& param) {
                           return param.param.name;
                         });

TEST(GgufMalformedTable, IsLargeAndNamesAreUnique) {
  const std::vector<MalformedCase> cases = malformed_cases();
  EXPECT_GE(cases.size(), 45u);
  std::set<std::string> names;
  for (const MalformedCase& mc : cases) EXPECT_TRUE(names.insert(mc.name).second) << mc.name;
}

// Sweeps.

// Every value type, nested and string arrays, and tensors of plain and block types, via GgufWriter.
Bytes writer_sample(uint32_t alignment) {
  GgufWriter w;
  EXPECT_TRUE(w.set_scalar("general.alignment", alignment).ok());
  EXPECT_TRUE(w.set_string("general.architecture", "llama").ok());
  EXPECT_TRUE(w.set_scalar("u8", uint8_t{1}).ok());
  EXPECT_TRUE(w.set_scalar("i8", int8_t{-1}).ok());
  EXPECT_TRUE(w.set_scalar("u16", uint16_t{2}).ok());
  EXPECT_TRUE(w.set_scalar("i16", int16_t{-2}).ok());
  EXPECT_TRUE(w.set_scalar("i32", int32_t{-3}).ok());
  EXPECT_TRUE(w.set_scalar("f32", 0.5f).ok());
  EXPECT_TRUE(w.set_scalar("bool", true).ok());
  EXPECT_TRUE(w.set_scalar("u64", uint64_t{4}).ok());
  EXPECT_TRUE(w.set_scalar("i64", int64_t{-4}).ok());
  EXPECT_TRUE(w.set_scalar("f64", 0.25).ok());
  EXPECT_TRUE(w.set("tokens", GgufValue::string_array({"<s>", "", "\xE4\xB8\xAD"})).ok());
  EXPECT_TRUE(w.set("scores", GgufValue::array(std::vector<float>{0.0f, -1.0f, -2.0f})).ok());
  EXPECT_TRUE(w.set("nested", GgufValue::array_of_arrays(
                                  {GgufValue::array(std::vector<int32_t>{1, 2}),
                                   GgufValue::array_of_arrays({GgufValue::string_array({"x"})})}))
                  .ok());
  const std::vector<uint64_t> f32_dims{3}, q4k_dims{256}, q8_dims{32, 2}, bf16_dims{2, 1, 1, 2};
  const Bytes f32(12, 1), q4k(144, 2), q8(68, 3), bf16(8, 4);
  EXPECT_TRUE(w.add_tensor("t.f32", TensorType::kF32, f32_dims, f32).ok());
  EXPECT_TRUE(w.add_tensor("t.q4_k", TensorType::kQ4_K, q4k_dims, q4k).ok());
  EXPECT_TRUE(w.add_tensor("t.q8_0", TensorType::kQ8_0, q8_dims, q8).ok());
  EXPECT_TRUE(w.add_tensor("t.bf16", TensorType::kBF16, bf16_dims, bf16).ok());
  Result<Bytes> bytes = w.write_to_buffer();
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? std::move(bytes).value() : Bytes{};
}

// The shortest prefix that parses: all tensor data present (the last tensor's padding may be
// missing, as llama.cpp also accepts), or for a vocabulary-only file the end of the metadata.
uint64_t shortest_complete_prefix(const GgufFile& file) {
  if (file.tensors().empty()) return file.layout().header_bytes + file.layout().metadata_bytes;
  uint64_t end = 0;
  for (const GgufTensorInfo& t : file.tensors()) end = std::max(end, t.data_offset + t.bytes);
  return file.data_section_offset() + end;
}

// Every prefix fails with kFileTruncated, at an offset inside the prefix, unless it is complete.
void expect_every_prefix_truncated(const Bytes& bytes, const std::string& what) {
  const Result<GgufFile> whole = GgufFile::parse(bytes, what);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const uint64_t complete = shortest_complete_prefix(*whole);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::span<const uint8_t> prefix(bytes.data(), n);
    const Result<GgufFile> r = GgufFile::parse(prefix, what);
    const std::string label = what + " cut at " + std::to_string(n);
    if (n >= complete) {
      EXPECT_TRUE(r.ok()) << label << ": " << r.status().to_string();
    } else {
      ASSERT_FALSE(r.ok()) << label << " was accepted";
      EXPECT_EQ(r.status().code(), ErrorCode::kFileTruncated)
          << label << ": " << r.status().to_string();
    }
    expect_sane(r, prefix, label);
    if (::testing::Test::HasFailure()) return;  // one bad prefix says enough
  }
}

TEST(GgufTruncation, EveryPrefixOfHandAssembledFile) {
  expect_every_prefix_truncated(encode(base_spec()).bytes, "base");
  FileSpec padded = base_spec();
  pad_front(padded);
  add_kv(padded, kv_arr("deep", nested_arrays(4)));
  add_kv(padded, kv_arr("strings", arr(VT::kString, 2, cat({str("ab"), str("")}))));
  expect_every_prefix_truncated(encode(padded).bytes, "padded");
}

TEST(GgufTruncation, EveryPrefixOfWriterFile) {
  expect_every_prefix_truncated(writer_sample(32), "writer32");
  expect_every_prefix_truncated(writer_sample(64), "writer64");
  expect_every_prefix_truncated(writer_sample(1), "writer1");
}

TEST(GgufTruncation, EveryPrefixOfVocabularyOnlyFile) {
  FileSpec s = base_spec();
  s.tensors.clear();
  add_kv(s,
         kv_arr("tokenizer.ggml.tokens", arr(VT::kString, 3, cat({str("a"), str("b"), str("c")}))));
  const Bytes bytes = encode(s).bytes;
  expect_every_prefix_truncated(bytes, "vocab");
  // Padding after the metadata is optional, trailing bytes are tolerated.
  Bytes padded = bytes;
  padded.resize(bytes.size() + 40, 0);
  EXPECT_TRUE(GgufFile::parse(padded, "vocab").ok());
}

TEST(GgufCorruption, EverySingleByteOfWriterFileHeader) {
  Bytes bytes = writer_sample(32);
  const uint64_t header_end = GgufFile::parse(bytes, "sample")->data_section_offset();
  size_t accepted = 0, rejected = 0;
  for (uint64_t pos = 0; pos < header_end; ++pos) {
    const uint8_t original = bytes[pos];
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xFF}, static_cast<uint8_t>(original ^ 0x01),
                      static_cast<uint8_t>(original ^ 0x80), static_cast<uint8_t>(original + 1)}) {
      if (v == original) continue;
      bytes[pos] = v;
      const Result<GgufFile> r = GgufFile::parse(bytes, "flipped");
      (r.ok() ? accepted : rejected) += 1;
      expect_sane(r, bytes, "byte " + std::to_string(pos) + " = " + std::to_string(v));
      bytes[pos] = original;
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(rejected, accepted);
}

// Random single-byte corruptions and truncations of a real model: each either parses (and every
// view it gives stays in the file) or fails with a format error; the seeds are fixed.
TEST(GgufCorruption, RandomMutationsOfFixture) {
  SYN_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  Bytes bytes = testing::read_file_bytes(path);
  const Result<GgufFile> whole = GgufFile::parse(bytes, path);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const uint64_t header_end = whole->data_section_offset();
  const uint64_t complete = shortest_complete_prefix(*whole);
  std::mt19937_64 rng(20240521);
  auto below = [&rng](uint64_t n) {
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
  constexpr int kCorruptions = 3000;
  constexpr int kTruncations = 1000;
  for (int i = 0; i < kCorruptions; ++i) {
    // Most corruptions go where the parser looks; the rest anywhere (tensor data must not matter).
    const uint64_t pos = i % 4 == 3 ? below(bytes.size()) : below(header_end);
    const uint8_t original = bytes[pos];
    const auto v = static_cast<uint8_t>(original ^ (1 + below(255)));
    bytes[pos] = v;
    const Result<GgufFile> r = GgufFile::parse(bytes, path);
    expect_sane(r, bytes, "byte " + std::to_string(pos) + " = " + std::to_string(v));
    bytes[pos] = original;
    if (::testing::Test::HasFailure()) return;
  }
  for (int i = 0; i < kTruncations; ++i) {
    const uint64_t n = i % 2 == 0 ? below(header_end + 64) : below(bytes.size());
    const std::span<const uint8_t> prefix(bytes.data(), n);
    const Result<GgufFile> r = GgufFile::parse(prefix, path);
    EXPECT_EQ(r.ok(), n >= complete) << n;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kFileTruncated) << r.status().to_string();
    }
    expect_sane(r, prefix, "cut at " + std::to_string(n));
    if (::testing::Test::HasFailure()) return;
  }
}

// The limits are inclusive and the rules are no stricter than the format.
TEST(GgufMalformedEdges, AcceptedNearTheLimits) {
  auto parses = [](const FileSpec& s, const GgufLimits& limits = {}) {
    const Encoded e = encode(s);
    const Result<GgufFile> r = GgufFile::parse(e.bytes, "edge", limits);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok()) expect_sane(r, e.bytes, "edge");
    return r.ok();
  };
  FileSpec s = base_spec();
  add_kv(s, kv_u32(std::string(65535, 'k'), 1));    // the longest key the spec allows
  add_kv(s, kv_arr("deep", nested_arrays(4)));      // exactly the depth limit
  add_kv(s, kv_arr("empty", arr(VT::kString, 0)));  // empty arrays of every kind
  add_kv(s, kv_arr("empty2", arr(VT::kArray, 0)));
  add_kv(s, {"bool2", id(VT::kBool), {2}});    // a non-0/1 bool reads as true
  s.tensors[1].name = std::string(4096, 'n');  // the longest tensor name
  EXPECT_TRUE(parses(s));
  s = base_spec();
  s.version = 2;
  EXPECT_TRUE(parses(s));
  s = base_spec();
  add_kv(s, kv_u32("general.alignment", 1));
  s.alignment = 1;
  s.tensors[1].offset = 33;  // any offset is aligned to 1; a gap between tensors is allowed
  EXPECT_TRUE(parses(s));
  s = base_spec();
  std::swap(s.tensors[0].offset, s.tensors[1].offset);  // infos need not follow the data order
  EXPECT_TRUE(parses(s));
  s = base_spec();
  s.data_bytes = 64 + 100;  // trailing bytes after the last tensor
  EXPECT_TRUE(parses(s));
  s = base_spec();
  s.tensors[1] = {"b", {256, 1, 1, 2}, id(TensorType::kQ4_K), 32};
  EXPECT_TRUE(parses(s));
  s = base_spec();
  add_kv(s, kv_arr("nest", arr(VT::kArray, 3, repeat(arr(VT::kUint8, 0), 3))));
  EXPECT_TRUE(parses(s, {.max_nested_arrays = 3}));
  EXPECT_TRUE(parses(base_spec(), {.max_tensors = 2, .max_kv = 2}));
}

}  // namespace
}  // namespace synapse
