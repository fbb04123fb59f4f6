// SPDX-License-Identifier: Apache-2.0
// The package reader. Design goal, as for GGUF: no input can make it crash, hang, read outside
// the buffer or allocate more than a small multiple of the file size. On top of that, a package
// is a format we write ourselves, so the reader is strict: the header, manifest and tensor table
// each carry a checksum, the sections follow each other exactly, tensors are packed in table
// order at aligned offsets, and no byte is unaccounted for. Checksums are checked before the
// bytes they cover are parsed, so a damaged section is reported as damaged (checksum_mismatch,
// naming the section) rather than as whatever its garbage happens to look like.
#include <algorithm>
#include <cstring>

#include "base/checked_math.h"
#include "base/utf8.h"
#include "format/byte_order.h"
#include "format/gguf/gguf_kv_codec.h"
#include "format/package/package_file.h"

namespace synapse {
namespace {

namespace field = package_header_field;

// name (empty), type, n_dims, one dim, offset, bytes, checksum.
constexpr uint64_t kMinTensorRecordBytes = 8 + 1 + 4 + 4 + 8 + 8 + 8 + 16;

Status error_at(ErrorCode code, uint64_t offset, std::string message, std::string field = {}) {
  return Status(code, std::move(message),
                ErrorWhere{.byte_offset = offset, .field = std::move(field)});
}

Status with_offset(const Status& status, uint64_t offset) {
  ErrorWhere where = status.where();
  if (!where.byte_offset) where.byte_offset = offset;
  return Status(status.code(), status.message(), std::move(where));
}

bool is_lower_hex(std::string_view text, size_t length) {
  return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string section_range(uint64_t offset, uint64_t bytes) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(bytes) + ")";
}

}  // namespace

class PackageParser {
 public:
  PackageParser(std::span<const uint8_t> bytes, const PackageLimits& limits)
      : bytes_(bytes), limits_(limits) {}

  Status parse(PackageFile& out) {
    out.bytes_ = bytes_;
    SYN_RETURN_IF_ERROR(parse_header(out));
    SYN_RETURN_IF_ERROR(parse_manifest(out));
    SYN_RETURN_IF_ERROR(parse_table(out));
    const PackageHeader& h = out.header_;
    PackageLayout& l = out.layout_;
    l.file_bytes = bytes_.size();
    l.header_bytes = kPackageHeaderBytes;
    l.manifest_bytes = h.manifest_bytes;
    l.tensor_table_bytes = h.table_bytes;
    l.alignment_padding_bytes = h.data_offset - (h.table_offset + h.table_bytes);
    l.tensor_padding_bytes = h.data_bytes - l.tensor_data_bytes;
    out.parsed_bytes_ = h.table_offset + h.table_bytes;
    out.views_.reserve(out.tensors_.size());
    for (const PackageTensorInfo& t : out.tensors_) {
      out.views_.push_back(TensorView{t.name, t.type, t.n_dims, t.dims, out.tensor_data(t)});
    }
    return ok_status();
  }

 private:
  Status parse_header(PackageFile& out) {
    const uint64_t size = bytes_.size();
    if (size < kPackageMagic.size()) {
      return error_at(ErrorCode::kFileTruncated, 0,
                      "file is " + std::to_string(size) + " bytes, too short for a header");
    }
    if (!std::equal(kPackageMagic.begin(), kPackageMagic.end(), bytes_.begin())) {
      return error_at(ErrorCode::kBadMagic, 0, "not a Synapse package (magic is not 'SYNAPSE\\0')");
    }
    if (size < field::kVersion + 4) {
      return error_at(ErrorCode::kFileTruncated, size, "file ends inside the header's version");
    }
    const auto version = load_le<uint32_t>(bytes_.data() + field::kVersion);
    if (version != kPackageVersion) {
      return error_at(ErrorCode::kUnsupportedVersion, field::kVersion,
                      "package format version " + std::to_string(version) +
                          " is not supported (this build reads version " +
                          std::to_string(kPackageVersion) + "); convert the model again");
    }
    if (size < kPackageHeaderBytes) {
      return error_at(ErrorCode::kFileTruncated, size,
                      "file is " + std::to_string(size) + " bytes, the header alone is " +
                          std::to_string(kPackageHeaderBytes));
    }
    const std::span<const uint8_t, kPackageHeaderBytes> header_bytes =
        bytes_.first<kPackageHeaderBytes>();
    if (load_le<uint64_t>(bytes_.data() + field::kHeaderChecksum) !=
        package_header_checksum(header_bytes)) {
      return error_at(ErrorCode::kChecksumMismatch, field::kHeaderChecksum,
                      "header checksum does not match: the header is damaged", "header");
    }
    const PackageHeader h = PackageHeader::decode(header_bytes);
    out.header_ = h;
    if (h.header_bytes != kPackageHeaderBytes) {
      return error_at(ErrorCode::kBadValue, field::kHeaderBytes,
                      "header size " + std::to_string(h.header_bytes) + " is not " +
                          std::to_string(kPackageHeaderBytes));
    }
    if (size < h.file_bytes) {
      return error_at(ErrorCode::kFileTruncated, size,
                      "file is " + std::to_string(size) + " bytes, its header says " +
                          std::to_string(h.file_bytes) + ": it was cut short");
    }
    if (size > h.file_bytes) {
      return error_at(ErrorCode::kSizeMismatch, h.file_bytes,
                      std::to_string(size - h.file_bytes) + " bytes follow the package's end");
    }
    if (!is_power_of_two(h.alignment) || h.alignment < kPackageMinAlignment ||
        h.alignment > kPackageMaxAlignment) {
      return error_at(ErrorCode::kBadAlignment, field::kAlignment,
                      "alignment " + std::to_string(h.alignment) + " is not a power of two from " +
                          std::to_string(kPackageMinAlignment) + " to " +
                          std::to_string(kPackageMaxAlignment));
    }
    if (h.manifest_offset != kPackageHeaderBytes) {
      return error_at(
          ErrorCode::kBadValue, field::kManifestOffset,
          "the manifest must follow the header at byte " + std::to_string(kPackageHeaderBytes));
    }
    const auto manifest_end = checked_add(h.manifest_offset, h.manifest_bytes);
    if (!manifest_end || *manifest_end > size) {
      return error_at(ErrorCode::kBadValue, field::kManifestBytes,
                      "manifest " + section_range(h.manifest_offset, h.manifest_bytes) +
                          " lies outside the " + std::to_string(size) + "-byte file");
    }
    if (h.table_offset != *manifest_end) {
      return error_at(
          ErrorCode::kBadValue, field::kTableOffset,
          "the tensor table must follow the manifest at byte " + std::to_string(*manifest_end));
    }
    const auto table_end = checked_add(h.table_offset, h.table_bytes);
    if (!table_end || *table_end > size) {
      return error_at(ErrorCode::kBadValue, field::kTableBytes,
                      "tensor table " + section_range(h.table_offset, h.table_bytes) +
                          " lies outside the " + std::to_string(size) + "-byte file");
    }
    if (h.tensor_count > limits_.max_tensors) {
      return error_at(ErrorCode::kLimitExceeded, field::kTensorCount,
                      "tensor count " + std::to_string(h.tensor_count) + " exceeds the limit of " +
                          std::to_string(limits_.max_tensors));
    }
    // tensor_count <= max_tensors (at most 2^32 in any sane limit): no overflow.
    if (h.tensor_count * kMinTensorRecordBytes > h.table_bytes) {
      return error_at(ErrorCode::kSizeMismatch, field::kTensorCount,
                      std::to_string(h.tensor_count) + " tensor records cannot fit in the " +
                          std::to_string(h.table_bytes) + "-byte tensor table");
    }
    // table_end <= size, so aligning it cannot overflow.
    const uint64_t data_offset = *checked_align_up(*table_end, h.alignment);
    if (h.data_offset != data_offset) {
      return error_at(ErrorCode::kBadValue, field::kDataOffset,
                      "tensor data must start at byte " + std::to_string(data_offset) +
                          " (the table's end, aligned), not " + std::to_string(h.data_offset));
    }
    if (h.data_offset > size || h.data_bytes != size - h.data_offset) {
      return error_at(ErrorCode::kBadValue, field::kDataBytes,
                      "tensor data " + section_range(h.data_offset, h.data_bytes) +
                          " does not end at the file's end (" + std::to_string(size) + ")");
    }
    return ok_status();
  }

  // The header's checksum of a section (whose range parse_header checked) against its bytes.
  Status check_section(uint64_t offset, uint64_t size, const Hash128& expected,
                       const std::string& name) {
    if (xxh3_128(bytes_.subspan(offset, size)) != expected) {
      return error_at(ErrorCode::kChecksumMismatch, offset,
                      name + " checksum does not match: the " + name + " is damaged", name);
    }
    return ok_status();
  }

  Status parse_manifest(PackageFile& out) {
    const PackageHeader& h = out.header_;
    SYN_RETURN_IF_ERROR(
        check_section(h.manifest_offset, h.manifest_bytes, h.manifest_checksum, "manifest"));
    GgufKvReader reader(bytes_, h.manifest_offset, h.manifest_offset + h.manifest_bytes,
                        limits_.manifest, "manifest");
    SYN_ASSIGN_OR_RETURN(std::vector<GgufKeyValue> model, read_section(reader, "model"));
    SYN_ASSIGN_OR_RETURN(std::vector<GgufKeyValue> package, read_section(reader, "package"));
    if (reader.remaining() != 0) {
      return error_at(
          ErrorCode::kSizeMismatch, reader.pos(),
          "manifest has " + std::to_string(reader.remaining()) + " bytes after its last key");
    }
    out.metadata_ = GgufMetadata(std::move(model));
    out.package_metadata_ = GgufMetadata(std::move(package));
    return decode_source(out);
  }

  Result<std::vector<GgufKeyValue>> read_section(GgufKvReader& reader, std::string_view name) {
    const uint64_t count_at = reader.pos();
    SYN_ASSIGN_OR_RETURN(const uint64_t count,
                         reader.read<uint64_t>(std::string(name) + " key count"));
    if (count > limits_.manifest.max_kv) {
      return error_at(ErrorCode::kLimitExceeded, count_at,
                      std::string(name) + " key count " + std::to_string(count) +
                          " exceeds the limit of " + std::to_string(limits_.manifest.max_kv));
    }
    if (count * kGgufMinKeyValueBytes > reader.remaining()) {
      return error_at(ErrorCode::kFileTruncated, count_at,
                      std::to_string(count) + " " + std::string(name) +
                          " key/value pairs cannot fit in the manifest's " +
                          std::to_string(reader.remaining()) + " bytes left");
    }
    return reader.read_key_values(count);
  }

  // The package keys every package carries; unknown extra keys are allowed (later writers may
  // add some without a version bump).
  Status decode_source(PackageFile& out) {
    const GgufMetadata& md = out.package_metadata_;
    const auto offset_of = [&md, &out](std::string_view key) {
      for (const GgufKeyValue& kv : md.entries()) {
        if (kv.key == key) return kv.file_offset;
      }
      return out.header_.manifest_offset;
    };
    const auto string_key = [&](std::string_view key, std::string_view& into) -> Status {
      Result<std::string_view> value = md.get_string(key);
      if (!value.ok()) return with_offset(value.status(), offset_of(key));
      into = *value;
      return ok_status();
    };
    const auto hex_key = [&](std::string_view key, std::string_view& into) -> Status {
      SYN_RETURN_IF_ERROR(string_key(key, into));
      if (!is_lower_hex(into, 64)) {
        return Status(ErrorCode::kBadValue, "expected 64 lowercase hex digits",
                      ErrorWhere{.byte_offset = offset_of(key), .key = std::string(key)});
      }
      return ok_status();
    };
    PackageSource& s = out.source_;
    SYN_RETURN_IF_ERROR(string_key(package_key::kSourceFormat, s.format));
    SYN_RETURN_IF_ERROR(string_key(package_key::kSourceName, s.name));
    SYN_RETURN_IF_ERROR(hex_key(package_key::kSourceSha256, s.sha256));
    SYN_RETURN_IF_ERROR(hex_key(package_key::kGraphHash, s.graph_hash));
    SYN_RETURN_IF_ERROR(string_key(package_key::kCreatedBy, s.created_by));
    Result<uint64_t> bytes = md.get_u64(package_key::kSourceBytes);
    if (!bytes.ok()) return with_offset(bytes.status(), offset_of(package_key::kSourceBytes));
    s.bytes = *bytes;
    return ok_status();
  }

  Status parse_table(PackageFile& out) {
    const PackageHeader& h = out.header_;
    SYN_RETURN_IF_ERROR(
        check_section(h.table_offset, h.table_bytes, h.table_checksum, "tensor table"));
    GgufKvReader reader(bytes_, h.table_offset, h.table_offset + h.table_bytes, limits_.manifest,
                        "tensor table");
    out.tensors_.reserve(h.tensor_count);
    out.tensor_index_.reserve(h.tensor_count);
    uint64_t next_offset = 0;  // where the next tensor's data must start (packed, aligned)
    for (uint64_t i = 0; i < h.tensor_count; ++i) {
      SYN_ASSIGN_OR_RETURN(PackageTensorInfo t, read_record(reader, out, next_offset));
      if (!out.tensor_index_.emplace(t.name, out.tensors_.size()).second) {
        return Status(
            ErrorCode::kDuplicateTensor, "tensor name appears twice",
            ErrorWhere{.byte_offset = t.record_file_offset, .tensor = std::string(t.name)});
      }
      out.layout_.tensor_data_bytes += t.bytes;
      // t.data_offset + t.bytes <= data_bytes, so aligning cannot overflow.
      next_offset = *checked_align_up(t.data_offset + t.bytes, h.alignment);
      out.tensors_.push_back(t);
    }
    if (reader.remaining() != 0) {
      return error_at(ErrorCode::kSizeMismatch, reader.pos(),
                      "tensor table has " + std::to_string(reader.remaining()) +
                          " bytes after its last record");
    }
    if (h.data_bytes != next_offset) {
      return error_at(ErrorCode::kSizeMismatch, field::kDataBytes,
                      "tensor data is " + std::to_string(h.data_bytes) +
                          " bytes, the tensors fill " + std::to_string(next_offset));
    }
    return ok_status();
  }

  Result<PackageTensorInfo> read_record(GgufKvReader& reader, const PackageFile& out,
                                        uint64_t expected_offset) {
    const PackageHeader& h = out.header_;
    PackageTensorInfo t;
    t.record_file_offset = reader.pos();
    SYN_ASSIGN_OR_RETURN(t.name, reader.read_string(limits_.max_tensor_name_bytes, "tensor name"));
    const auto fail = [&t](ErrorCode code, uint64_t at, std::string message) {
      return Status(code, std::move(message),
                    ErrorWhere{.byte_offset = at, .tensor = std::string(t.name)});
    };
    if (t.name.empty())
      return fail(ErrorCode::kBadValue, t.record_file_offset, "empty tensor name");
    if (const auto bad = find_invalid_utf8(t.name)) {
      return fail(ErrorCode::kInvalidUtf8, t.record_file_offset + 8 + *bad,
                  "tensor name is not valid UTF-8");
    }
    const uint64_t type_at = reader.pos();
    SYN_ASSIGN_OR_RETURN(const uint32_t type_id, reader.read<uint32_t>("tensor type"));
    const TensorTypeInfo* type = find_tensor_type(type_id);
    if (type == nullptr) {
      return fail(ErrorCode::kUnknownTensorType, type_at,
                  "unknown or removed tensor type " + std::to_string(type_id));
    }
    t.type = type->type;
    const uint64_t dims_at = reader.pos();
    SYN_ASSIGN_OR_RETURN(t.n_dims, reader.read<uint32_t>("tensor dimension count"));
    if (t.n_dims == 0 || t.n_dims > kPackageMaxDims) {
      return fail(ErrorCode::kBadShape, dims_at,
                  "tensor has " + std::to_string(t.n_dims) + " dimensions (1 to 4 allowed)");
    }
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      SYN_ASSIGN_OR_RETURN(t.dims[d], reader.read<uint64_t>("tensor dimension"));
    }
    Result<uint64_t> size = tensor_byte_size(t.type, t.shape());
    if (!size.ok()) return fail(ErrorCode::kBadShape, dims_at, size.status().message());
    const uint64_t offset_at = reader.pos();
    SYN_ASSIGN_OR_RETURN(t.data_offset, reader.read<uint64_t>("tensor data offset"));
    const uint64_t bytes_at = reader.pos();
    SYN_ASSIGN_OR_RETURN(t.bytes, reader.read<uint64_t>("tensor byte count"));
    SYN_ASSIGN_OR_RETURN(t.checksum.high, reader.read<uint64_t>("tensor checksum"));
    SYN_ASSIGN_OR_RETURN(t.checksum.low, reader.read<uint64_t>("tensor checksum"));
    if (t.bytes != *size) {
      return fail(ErrorCode::kSizeMismatch, bytes_at,
                  "tensor is recorded as " + std::to_string(t.bytes) +
                      " bytes, its type and shape need " + std::to_string(*size));
    }
    if (t.data_offset % h.alignment != 0) {
      return fail(ErrorCode::kBadAlignment, offset_at,
                  "data offset " + std::to_string(t.data_offset) + " is not a multiple of " +
                      std::to_string(h.alignment));
    }
    const auto end = checked_add(t.data_offset, t.bytes);
    if (!end || *end > h.data_bytes) {
      return fail(ErrorCode::kTensorOutOfRange, offset_at,
                  "data " + section_range(t.data_offset, t.bytes) + " lies outside the " +
                      std::to_string(h.data_bytes) + "-byte data section");
    }
    if (t.data_offset < expected_offset) {
      return fail(ErrorCode::kTensorOverlap, offset_at,
                  "data at " + std::to_string(t.data_offset) +
                      " overlaps the previous tensor, which ends at " +
                      std::to_string(expected_offset));
    }
    if (t.data_offset > expected_offset) {
      return fail(ErrorCode::kBadValue, offset_at,
                  "data at " + std::to_string(t.data_offset) + " leaves a gap: tensors are " +
                      "packed in table order, this one belongs at " +
                      std::to_string(expected_offset));
    }
    return t;
  }

  std::span<const uint8_t> bytes_;
  const PackageLimits& limits_;
};

Result<PackageFile> PackageFile::parse(std::span<const uint8_t> bytes, std::string display_name,
                                       const PackageLimits& limits) {
  PackageFile file;
  file.path_ = std::move(display_name);
  PackageParser parser(bytes, limits);
  Status status = parser.parse(file);
  if (!status.ok()) return std::move(status).with_path(file.path_);
  return file;
}

Result<PackageFile> PackageFile::open(const std::string& path, const PackageLimits& limits) {
  SYN_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path));
  // Only the header, manifest and table are read here; tensor data is paged in by its users.
  mapping.advise(AccessHint::kRandom);
  const std::span<const uint8_t> bytes = mapping.bytes();
  SYN_ASSIGN_OR_RETURN(PackageFile file, parse(bytes, path, limits));
  file.mapping_ = std::move(mapping);  // the views stay valid: the mapping's address is unchanged
  return file;
}

const PackageTensorInfo* PackageFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView* PackageFile::tensor_view(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &views_[it->second];
}

std::span<const uint8_t> PackageFile::tensor_data(const PackageTensorInfo& tensor) const {
  return bytes_.subspan(header_.data_offset + tensor.data_offset, tensor.bytes);
}

}  // namespace synapse
