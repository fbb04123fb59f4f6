// SPDX-License-Identifier: Apache-2.0
// Malformed packages. Each table case hand-assembles a small package (so it knows where every
// field starts), breaks one rule, reseals the checksums unless the case is about them, and checks
// the stable error code and where the reader says the problem is. Sweeps over every prefix and
// random mutations (resealed, so they reach the structural checks) check that no input crashes
// the reader or gets anything but a format error out of it.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>

#include "base/checked_math.h"
#include "format/byte_order.h"
#include "format/gguf/gguf_kv_codec.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "tests/support/hand_assembly.h"

namespace synapse {
namespace {

using Bytes = std::vector<uint8_t>;
using VT = GgufValueType;
namespace field = package_header_field;

using testing::le;
using testing::str;

uint32_t id(VT type) { return static_cast<uint32_t>(type); }
uint32_t id(TensorType type) { return static_cast<uint32_t>(type); }

struct KvSpec {
  std::string key;
  uint32_t type = 0;
  Bytes value;  // everything after the type tag
};

KvSpec kv_str(std::string key, std::string_view v) {
  return {std::move(key), id(VT::kString), str(v)};
}
KvSpec kv_u32(std::string key, uint32_t v) { return {std::move(key), id(VT::kUint32), le(v)}; }
KvSpec kv_u64(std::string key, uint64_t v) { return {std::move(key), id(VT::kUint64), le(v)}; }

const std::string kHex(64, 'a');

std::vector<KvSpec> package_kvs() {
  return {kv_str(std::string(package_key::kSourceFormat), "gguf"),
          kv_str(std::string(package_key::kSourceName), "m.gguf"),
          kv_u64(std::string(package_key::kSourceBytes), 1234),
          kv_str(std::string(package_key::kSourceSha256), kHex),
          kv_str(std::string(package_key::kGraphHash), kHex),
          kv_str(std::string(package_key::kCreatedBy), "test")};
}

struct RecordSpec {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = id(TensorType::kF32);
  std::optional<uint32_t> n_dims = {};
  std::optional<uint64_t> name_length = {};
  std::optional<uint64_t> offset = {};  // default: packed
  std::optional<uint64_t> bytes = {};   // default: from type and shape
};

struct PackageSpec {
  uint32_t version = kPackageVersion;
  std::vector<KvSpec> model = {kv_str("general.architecture", "llama"), kv_u32("test.u32", 7)};
  std::vector<KvSpec> package = package_kvs();
  std::optional<uint64_t> model_count, package_count;
  Bytes manifest_tail;  // appended after the package section
  std::vector<RecordSpec> tensors = {{"a", {8}}, {"b", {4, 2}}};
  Bytes table_tail;
  uint64_t alignment = kPackageDefaultAlignment;
  std::function<void(PackageHeader&)> edit_header;  // applied before the checksums are sealed
  bool seal = true;                                 // compute section and header checksums
  std::function<void(Bytes&, const std::map<std::string, uint64_t>&)> edit_bytes;  // after seal
  std::optional<uint64_t> cut_at;
};

struct Encoded {
  Bytes bytes;
  std::map<std::string, uint64_t> at;  // "manifest", "kv1", "p3.value", "t0.type", "data", ...
};

uint64_t tensor_size(const RecordSpec& r) {
  const TensorTypeInfo* info = find_tensor_type(r.type);
  if (info == nullptr || r.dims.empty() || r.dims.size() > 4) return 0;
  const Result<uint64_t> size = tensor_byte_size(info->type, r.dims);
  return size.ok() && *size < (1 << 20) ? *size : 0;
}

void put_kvs(Bytes& b, std::map<std::string, uint64_t>& at, const std::string& prefix,
             const std::vector<KvSpec>& kvs, std::optional<uint64_t> count) {
  at[prefix + "count"] = b.size();
  append_le<uint64_t>(b, count.value_or(kvs.size()));
  for (size_t i = 0; i < kvs.size(); ++i) {
    const std::string p = prefix + std::to_string(i);
    at[p] = b.size();
    append_gguf_string(b, kvs[i].key);
    at[p + ".type"] = b.size();
    append_le(b, kvs[i].type);
    at[p + ".value"] = b.size();
    b.insert(b.end(), kvs[i].value.begin(), kvs[i].value.end());
  }
}

Encoded encode(const PackageSpec& spec) {
  Encoded e;
  PackageHeader h;
  h.version = spec.version;
  h.alignment = spec.alignment;
  Bytes manifest;
  std::map<std::string, uint64_t> rel;
  put_kvs(manifest, rel, "kv", spec.model, spec.model_count);
  put_kvs(manifest, rel, "p", spec.package, spec.package_count);
  manifest.insert(manifest.end(), spec.manifest_tail.begin(), spec.manifest_tail.end());
  for (const auto& [name, offset] : rel) e.at[name] = kPackageHeaderBytes + offset;
  h.manifest_bytes = manifest.size();
  h.table_offset = kPackageHeaderBytes + h.manifest_bytes;

  Bytes table, data;
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const RecordSpec& r = spec.tensors[i];
    const std::string p = "t" + std::to_string(i);
    const uint64_t size = tensor_size(r);
    const uint64_t packed = data.size();
    Bytes tensor(size);
    for (uint64_t j = 0; j < size; ++j) tensor[j] = static_cast<uint8_t>(0xA5 ^ (i + j));
    const Hash128 checksum = xxh3_128(tensor);
    data.insert(data.end(), tensor.begin(), tensor.end());
    data.resize(*checked_align_up(data.size(), h.alignment), 0);
    e.at[p] = h.table_offset + table.size();
    append_le<uint64_t>(table, r.name_length.value_or(r.name.size()));
    table.insert(table.end(), r.name.begin(), r.name.end());
    e.at[p + ".type"] = h.table_offset + table.size();
    append_le(table, r.type);
    e.at[p + ".n_dims"] = h.table_offset + table.size();
    append_le<uint32_t>(table, r.n_dims.value_or(static_cast<uint32_t>(r.dims.size())));
    for (uint64_t d : r.dims) append_le(table, d);
    e.at[p + ".offset"] = h.table_offset + table.size();
    append_le<uint64_t>(table, r.offset.value_or(packed));
    e.at[p + ".bytes"] = h.table_offset + table.size();
    append_le<uint64_t>(table, r.bytes.value_or(size));
    append_le(table, checksum.high);
    append_le(table, checksum.low);
  }
  table.insert(table.end(), spec.table_tail.begin(), spec.table_tail.end());
  h.table_bytes = table.size();
  h.tensor_count = spec.tensors.size();
  h.data_offset = *checked_align_up(h.table_offset + h.table_bytes, h.alignment);
  h.data_bytes = data.size();
  h.file_bytes = h.data_offset + h.data_bytes;
  h.manifest_checksum = xxh3_128(manifest);
  h.table_checksum = xxh3_128(table);
  const uint64_t data_offset = h.data_offset;  // the bytes follow the unedited layout
  if (spec.edit_header) spec.edit_header(h);

  Bytes& b = e.bytes;
  const auto header = h.encode();
  b.assign(header.begin(), header.end());
  e.at["manifest"] = b.size();
  b.insert(b.end(), manifest.begin(), manifest.end());
  e.at["table"] = b.size();
  b.insert(b.end(), table.begin(), table.end());
  b.resize(data_offset, 0);
  e.at["header"] = 0;
  e.at["data"] = b.size();
  b.insert(b.end(), data.begin(), data.end());
  if (spec.seal && spec.edit_header) {
    // Checksums follow the edited header's section sizes, so only the edited field is wrong.
    reseal_package_checksums(b);
  }
  if (spec.edit_bytes) spec.edit_bytes(b, e.at);
  if (spec.cut_at && *spec.cut_at < b.size()) b.resize(*spec.cut_at);
  return e;
}

bool is_format_error(ErrorCode code) {
  const auto n = static_cast<uint16_t>(code);
  return n >= static_cast<uint16_t>(ErrorCode::kFileTruncated) &&
         n <= static_cast<uint16_t>(ErrorCode::kChecksumMismatch);
}

// A failure has a format code and an offset inside the input; a success accounts for every
// byte, keeps its views inside the input and survives verify.
void expect_sane(const Result<PackageFile>& r, std::span<const uint8_t> bytes,
                 const std::string& what) {
  if (!r.ok()) {
    const Status s = r.status();
    EXPECT_TRUE(is_format_error(s.code())) << what << ": " << s.to_string();
    ASSERT_TRUE(s.where().byte_offset.has_value()) << what << ": " << s.to_string();
    EXPECT_LE(*s.where().byte_offset, bytes.size()) << what << ": " << s.to_string();
    return;
  }
  const PackageLayout& l = r->layout();
  EXPECT_EQ(l.header_bytes + l.manifest_bytes + l.tensor_table_bytes + l.alignment_padding_bytes +
                l.tensor_data_bytes + l.tensor_padding_bytes,
            bytes.size())
      << what;
  for (const TensorView& t : r->tensor_views()) {
    EXPECT_GE(t.data.data(), bytes.data() + r->header().data_offset) << what;
    EXPECT_LE(t.data.data() + t.data.size(), bytes.data() + bytes.size()) << what;
  }
  for (const GgufKeyValue& kv : r->metadata().entries()) {
    EXPECT_FALSE(kv.value.to_display_string().empty()) << what;
  }
  const auto verified = verify_package(*r);
  if (!verified.ok()) {
    EXPECT_TRUE(is_format_error(verified.status().code())) << what;
  }
}

struct MalformedCase {
  std::string name;
  std::function<void(PackageSpec&)> mutate;
  ErrorCode code;
  std::string at;  // the field whose offset the error must report; empty: not checked
  uint64_t at_delta = 0;
  std::string key;     // where().key, exactly
  std::string tensor;  // where().tensor, exactly
  std::string field;   // where().field, exactly
};

void PrintTo(const MalformedCase& mc, std::ostream* os) { *os << mc.name; }

using Mutation = std::function<void(PackageSpec&)>;

Mutation header(std::function<void(PackageHeader&)> edit) {
  return [edit](PackageSpec& s) { s.edit_header = edit; };
}

// Overwrites bytes at a named position after sealing (checksums stay as they were).
Mutation poke(const std::string& at, uint64_t delta, Bytes value) {
  return [=](PackageSpec& s) {
    s.edit_bytes = [=](Bytes& b, const std::map<std::string, uint64_t>& where) {
      std::copy(value.begin(), value.end(), b.begin() + static_cast<long>(where.at(at) + delta));
    };
  };
}

// Overwrites bytes at a named position, then reseals every checksum.
Mutation poke_sealed(const std::string& at, uint64_t delta, Bytes value) {
  return [=](PackageSpec& s) {
    s.edit_bytes = [=](Bytes& b, const std::map<std::string, uint64_t>& where) {
      std::copy(value.begin(), value.end(), b.begin() + static_cast<long>(where.at(at) + delta));
      reseal_package_checksums(b);
    };
  };
}

// A zero page more at the end of the data section, recorded in the header.
void grow_data_by_a_page(PackageSpec& s) {
  s.edit_header = [](PackageHeader& h) {
    h.data_bytes += 4096;
    h.file_bytes += 4096;
  };
  s.edit_bytes = [](Bytes& b, const auto&) {
    b.resize(b.size() + 4096, 0);
    reseal_package_checksums(b);
  };
}

Mutation drop_package_key(std::string_view key) {
  return [key](PackageSpec& s) {
    std::erase_if(s.package, [key](const KvSpec& kv) { return kv.key == key; });
  };
}

Mutation set_package_key(std::string_view key, KvSpec value) {
  return [key, value](PackageSpec& s) {
    for (KvSpec& kv : s.package) {
      if (kv.key == key) kv = value;
    }
  };
}

std::vector<MalformedCase> malformed_cases() {
  const ErrorCode kTrunc = ErrorCode::kFileTruncated;
  const ErrorCode kBad = ErrorCode::kBadValue;
  const ErrorCode kSize = ErrorCode::kSizeMismatch;
  const ErrorCode kSum = ErrorCode::kChecksumMismatch;
  const uint64_t kMax = UINT64_MAX;
  const std::string src_sha(package_key::kSourceSha256);
  const std::string graph(package_key::kGraphHash);
  std::vector<MalformedCase> c = {
      // Header.
      {"EmptyFile", [](PackageSpec& s) { s.cut_at = 0; }, kTrunc},
      {"CutInMagic", [](PackageSpec& s) { s.cut_at = 5; }, kTrunc},
      {"CutInVersion", [](PackageSpec& s) { s.cut_at = 10; }, kTrunc},
      {"CutInHeader", [](PackageSpec& s) { s.cut_at = 100; }, kTrunc},
      {"CutAfterHeader", [](PackageSpec& s) { s.cut_at = 200; }, kTrunc},
      {"CutInData", [](PackageSpec& s) { s.cut_at = 4096 + 10; }, kTrunc},
      {"GgufMagic", poke("header", 0, {'G', 'G', 'U', 'F'}),
       ErrorCode::kBadMagic},
      {"MagicLastByte", poke("header", 7, {'!'}), ErrorCode::kBadMagic},
      {"Version0", [](PackageSpec& s) { s.version = 0; }, ErrorCode::kUnsupportedVersion},
      {"Version2", [](PackageSpec& s) { s.version = 2; }, ErrorCode::kUnsupportedVersion},
      {"VersionMax", [](PackageSpec& s) { s.version = UINT32_MAX; },
       ErrorCode::kUnsupportedVersion},
      {"HeaderChecksum", poke("header", field::kHeaderChecksum, {0x01}), kSum, "", 0, "", "", "header"},
      {"HeaderFieldDamaged", poke("header", field::kDataBytes, {0x01}),
       kSum, "", 0, "", "", "header"},
      {"HeaderBytes64", header([](PackageHeader& h) { h.header_bytes = 64; }), kBad},
      {"FileBytesLarger", header([](PackageHeader& h) { h.file_bytes += 4096; }), kTrunc},
      {"FileBytesSmaller", header([](PackageHeader& h) { h.file_bytes -= 1; }), kSize},
      {"TrailingByte",
       [](PackageSpec& s) {
         s.edit_bytes = [](Bytes& b, const auto&) { b.push_back(0); };
       },
       kSize},
      {"Alignment0", header([](PackageHeader& h) { h.alignment = 0; }), ErrorCode::kBadAlignment},
      {"Alignment3", header([](PackageHeader& h) { h.alignment = 3; }), ErrorCode::kBadAlignment},
      {"Alignment2048", header([](PackageHeader& h) { h.alignment = 2048; }),
       ErrorCode::kBadAlignment},
      {"Alignment2p31", header([](PackageHeader& h) { h.alignment = uint64_t{1} << 31; }),
       ErrorCode::kBadAlignment},
      {"ManifestOffset", header([](PackageHeader& h) { h.manifest_offset += 8; }), kBad},
      {"ManifestBytesMax", header([=](PackageHeader& h) { h.manifest_bytes = kMax; }), kBad},
      {"ManifestBytesPastEnd", header([](PackageHeader& h) { h.manifest_bytes = 1 << 20; }),
       kBad},
      {"TableOffsetOff", header([](PackageHeader& h) { h.table_offset -= 1; }), kBad},
      {"TableBytesMax", header([=](PackageHeader& h) { h.table_bytes = kMax; }), kBad},
      {"TensorCountOverLimit", header([](PackageHeader& h) { h.tensor_count = (1u << 20) + 1; }),
       ErrorCode::kLimitExceeded},
      {"TensorCountMax", header([=](PackageHeader& h) { h.tensor_count = kMax; }),
       ErrorCode::kLimitExceeded},
      {"TensorCountPastTable", header([](PackageHeader& h) { h.tensor_count = 1000; }), kSize},
      {"DataOffsetUnaligned", header([](PackageHeader& h) { h.data_offset += 8; }), kBad},
      {"DataOffsetNextPage", header([](PackageHeader& h) { h.data_offset += 4096; }), kBad},
      {"DataBytesShort", header([](PackageHeader& h) { h.data_bytes -= 4096; }), kBad},
      // Manifest.
      {"ManifestChecksum", poke("kv0.value", 9, {'X'}), kSum, "manifest", 0, "", "", "manifest"},
      {"ManifestChecksumField", poke("header", field::kManifestXxh3, {1}),
       kSum, "", 0, "", "", "header"},
      {"ModelKvCountOverLimit", poke_sealed("kvcount", 0, le<uint64_t>((1u << 20) + 1)),
       ErrorCode::kLimitExceeded, "kvcount"},
      {"ModelKvCountPastEnd", poke_sealed("kvcount", 0, le<uint64_t>(1000)), kTrunc, "kvcount"},
      {"PackageKvCountPastEnd", poke_sealed("pcount", 0, le<uint64_t>(1000)), kTrunc, "pcount"},
      {"ModelKvCountShort", [](PackageSpec& s) { s.model_count = 1; },
       ErrorCode::kLimitExceeded, "kv1", 8},
      {"EmptyKey", [](PackageSpec& s) { s.model.push_back(kv_u32("", 1)); }, kBad, "kv2"},
      {"KeyInvalidUtf8", [](PackageSpec& s) { s.model.push_back(kv_u32("a\xFF", 1)); },
       ErrorCode::kInvalidUtf8, "kv2", 9},
      {"DuplicateKey", [](PackageSpec& s) { s.model.push_back(kv_u32("test.u32", 1)); },
       ErrorCode::kDuplicateKey, "kv2", 0, "test.u32"},
      {"DuplicatePackageKey",
       [=](PackageSpec& s) { s.package.push_back(kv_str(src_sha, kHex)); },
       ErrorCode::kDuplicateKey, "p6", 0, src_sha},
      {"UnknownValueType", [](PackageSpec& s) { s.model[1].type = 13; },
       ErrorCode::kUnknownValueType, "kv1.type", 0, "test.u32"},
      {"StringPastManifestEnd", poke_sealed("p5.value", 0, le<uint64_t>(100)), kTrunc,
       "p5.value", 8, std::string(package_key::kCreatedBy)},
      {"ArrayTooDeep",
       [](PackageSpec& s) {
         Bytes v = {};
         for (int i = 0; i < 5; ++i) {
           append_le(v, id(VT::kArray));
           append_le<uint64_t>(v, 1);
         }
         append_le(v, id(VT::kUint8));
         append_le<uint64_t>(v, 0);
         s.model.push_back({"deep", id(VT::kArray), v});
       },
       ErrorCode::kLimitExceeded, "kv2.value", 4 * 12, "deep"},
      {"ManifestTail", [](PackageSpec& s) { s.manifest_tail = {0, 0, 0}; }, kSize},
      {"MissingSourceSha", drop_package_key(package_key::kSourceSha256), ErrorCode::kMissingKey,
       "manifest", 0, src_sha},
      {"MissingGraphHash", drop_package_key(package_key::kGraphHash), ErrorCode::kMissingKey,
       "manifest", 0, graph},
      {"MissingSourceFormat", drop_package_key(package_key::kSourceFormat),
       ErrorCode::kMissingKey, "manifest", 0, std::string(package_key::kSourceFormat)},
      {"MissingSourceName", drop_package_key(package_key::kSourceName), ErrorCode::kMissingKey,
       "manifest", 0, std::string(package_key::kSourceName)},
      {"MissingSourceBytes", drop_package_key(package_key::kSourceBytes), ErrorCode::kMissingKey,
       "manifest", 0, std::string(package_key::kSourceBytes)},
      {"MissingCreatedBy", drop_package_key(package_key::kCreatedBy), ErrorCode::kMissingKey,
       "manifest", 0, std::string(package_key::kCreatedBy)},
      {"SourceShaNotString", set_package_key(package_key::kSourceSha256, kv_u32(src_sha, 1)),
       ErrorCode::kTypeMismatch, "p3", 0, src_sha},
      {"SourceShaUppercase",
       set_package_key(package_key::kSourceSha256, kv_str(src_sha, std::string(64, 'A'))), kBad,
       "p3", 0, src_sha},
      {"GraphHashShort", set_package_key(package_key::kGraphHash, kv_str(graph, "abc")), kBad,
       "p4", 0, graph},
      {"SourceBytesNegative",
       set_package_key(package_key::kSourceBytes,
                       {std::string(package_key::kSourceBytes), id(VT::kInt32), le<int32_t>(-1)}),
       kBad, "p2", 0, std::string(package_key::kSourceBytes)},
      // Tensor table.
      {"TableChecksum", poke("t0.type", 0, {9}), kSum, "table", 0, "", "", "tensor table"},
      {"EmptyName", [](PackageSpec& s) { s.tensors[1].name = ""; }, kBad, "t1", 0, "", ""},
      {"NameInvalidUtf8", [](PackageSpec& s) { s.tensors[1].name = "b\xC0"; },
       ErrorCode::kInvalidUtf8, "t1", 9, "", "b\xC0"},
      {"NameOverLimit", [](PackageSpec& s) { s.tensors[1].name = std::string(4097, 'n'); },
       ErrorCode::kLimitExceeded, "t1"},
      {"NameLengthPastTable", [](PackageSpec& s) { s.tensors[1].name_length = 1000; }, kTrunc,
       "t1", 8},
      {"DuplicateName", [](PackageSpec& s) { s.tensors[1].name = "a"; },
       ErrorCode::kDuplicateTensor, "t1", 0, "", "a"},
      {"UnknownTypeRemoved", [](PackageSpec& s) { s.tensors[1].type = 4; },
       ErrorCode::kUnknownTensorType, "t1.type", 0, "", "b"},
      {"UnknownTypeMax", [](PackageSpec& s) { s.tensors[1].type = UINT32_MAX; },
       ErrorCode::kUnknownTensorType, "t1.type", 0, "", "b"},
      {"ZeroDims", [](PackageSpec& s) { s.tensors[1].n_dims = 0; }, ErrorCode::kBadShape,
       "t1.n_dims", 0, "", "b"},
      {"FiveDims", [](PackageSpec& s) { s.tensors[1].n_dims = 5; }, ErrorCode::kBadShape,
       "t1.n_dims", 0, "", "b"},
      {"ZeroDimension", [](PackageSpec& s) { s.tensors[1].dims = {4, 0}; }, ErrorCode::kBadShape,
       "t1.n_dims", 0, "", "b"},
      {"RowNotBlockMultiple",
       [](PackageSpec& s) {
         s.tensors[1].type = id(TensorType::kQ4_K);
         s.tensors[1].dims = {100};
       },
       ErrorCode::kBadShape, "t1.n_dims", 0, "", "b"},
      {"BytesWrong", [](PackageSpec& s) { s.tensors[1].bytes = 31; }, kSize, "t1.bytes", 0, "",
       "b"},
      {"OffsetUnaligned", [](PackageSpec& s) { s.tensors[1].offset = 4096 + 32; },
       ErrorCode::kBadAlignment, "t1.offset", 0, "", "b"},
      {"OffsetOverlaps", [](PackageSpec& s) { s.tensors[1].offset = 0; },
       ErrorCode::kTensorOverlap, "t1.offset", 0, "", "b"},
      {"OffsetOutOfRange", [](PackageSpec& s) { s.tensors[1].offset = 8192; },
       ErrorCode::kTensorOutOfRange, "t1.offset", 0, "", "b"},
      {"OffsetMax", [](PackageSpec& s) { s.tensors[1].offset = uint64_t{1} << 63; },
       ErrorCode::kTensorOutOfRange, "t1.offset", 0, "", "b"},
      {"OffsetLeavesGap",
       [](PackageSpec& s) {
         s.tensors.push_back({"c", {4}});
         s.tensors[2].offset = 3 * 4096;
         grow_data_by_a_page(s);
       },
       kBad, "t2.offset", 0, "", "c"},
      {"TableTail", [](PackageSpec& s) { s.table_tail = {1, 2, 3}; }, kSize},
      {"DataBytesLongerThanTensors", grow_data_by_a_page, kSize},
      {"CutInLastRecord",
       [](PackageSpec& s) {
         s.edit_header = [](PackageHeader& h) {
           h.table_bytes -= 20;
           h.tensor_count = 1;
         };
       },
       kSize},
  };
  return c;
}

class PackageMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(PackageMalformed, FailsWithCodeAndLocation) {
  const MalformedCase& mc = GetParam();
  PackageSpec spec;
  mc.mutate(spec);
  const Encoded e = encode(spec);
  const Result<PackageFile> r = PackageFile::parse(e.bytes, "case");
  ASSERT_FALSE(r.ok()) << "accepted";
  const Status& s = r.status();
  EXPECT_EQ(s.code(), mc.code) << s.to_string();
  if (!mc.at.empty()) {
    EXPECT_EQ(s.where().byte_offset, e.at.at(mc.at) + mc.at_delta) << s.to_string();
  }
  EXPECT_EQ(s.where().key, mc.key) << s.to_string();
  if (!mc.tensor.empty()) {
    EXPECT_EQ(s.where().tensor, mc.tensor) << s.to_string();
  }
  EXPECT_EQ(s.where().field, mc.field) << s.to_string();
  EXPECT_EQ(s.where().path, "case");
  expect_sane(r, e.bytes, mc.name);
}

INSTANTIATE_TEST_SUITE_P(Cases, PackageMalformed, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<MalformedCase>& param) {
                           return param.param.name;
                         });

TEST(PackageMalformedTable, IsLargeAndNamesAreUnique) {
  const auto cases = malformed_cases();
  EXPECT_GE(cases.size(), 70u);
  std::set<std::string> names;
  for (const MalformedCase& mc : cases) EXPECT_TRUE(names.insert(mc.name).second) << mc.name;
}

TEST(PackageMalformedBase, TheUnmodifiedSpecIsValid) {
  const Encoded e = encode(PackageSpec{});
  const Result<PackageFile> r = PackageFile::parse(e.bytes, "base");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->tensors().size(), 2u);
  EXPECT_TRUE(verify_package(*r).ok());
  expect_sane(r, e.bytes, "base");
}

TEST(PackageTruncation, EveryPrefixIsTruncated) {
  const Bytes bytes = encode(PackageSpec{}).bytes;
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::span<const uint8_t> prefix(bytes.data(), n);
    const Result<PackageFile> r = PackageFile::parse(prefix, "cut");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), ErrorCode::kFileTruncated) << n;
    expect_sane(r, prefix, "cut at " + std::to_string(n));
    if (::testing::Test::HasFailure()) return;
  }
}

// Random single-byte corruptions before the data, resealed so they reach the checks behind the
// checksums: each either parses (and every view stays inside the input) or fails with a format
// error. The seed is fixed.
TEST(PackageCorruption, ResealedRandomMutations) {
  PackageSpec spec;
  spec.model.push_back({"tokens", id(VT::kArray), [] {
                          Bytes v;
                          append_le(v, id(VT::kString));
                          append_le<uint64_t>(v, 3);
                          for (const char* t : {"a", "bb", ""}) append_gguf_string(v, t);
                          return v;
                        }()});
  const Bytes original = encode(spec).bytes;
  const Result<PackageFile> clean = PackageFile::parse(original, "clean");
  ASSERT_TRUE(clean.ok());
  const uint64_t table_end = clean->header().table_offset + clean->header().table_bytes;
  std::mt19937_64 rng(20260822);
  auto below = [&rng](uint64_t n) {
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
  size_t accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    Bytes bytes = original;
    for (int k = 0; k < 1 + i % 3; ++k) {
      bytes[8 + below(table_end - 8)] ^= static_cast<uint8_t>(1 + below(255));
    }
    reseal_package_checksums(bytes);
    const Result<PackageFile> r = PackageFile::parse(bytes, "mutated");
    accepted += r.ok() ? 1u : 0u;
    expect_sane(r, bytes, "mutation " + std::to_string(i));
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_LT(accepted, 3000u);
}

}  // namespace
}  // namespace synapse
