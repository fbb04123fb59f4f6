// SPDX-License-Identifier: Apache-2.0
// The GGUF parser. Design goal: no input can make it crash, hang, read outside the buffer or
// allocate more than a small multiple of the file size. Every read goes through
// GgufKvReader::need(), every count is checked against GgufLimits and then against the bytes left
// before any allocation, and every size is computed with overflow checks. Errors carry the byte
// offset where the offending item starts.
#include <algorithm>
#include <numeric>

#include "base/checked_math.h"
#include "base/utf8.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"
#include "format/gguf/gguf_kv_codec.h"

namespace synapse {
namespace {

// Smallest possible tensor info, used to reject counts that cannot fit in the bytes left.
constexpr uint64_t kMinTensorInfoBytes =
    8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, 1 dim, type, offset

Status error_at(ErrorCode code, uint64_t offset, std::string message) {
  return Status(code, std::move(message), ErrorWhere{.byte_offset = offset});
}

}  // namespace

class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> bytes, const GgufLimits& limits)
      : bytes_(bytes), limits_(limits), reader_(bytes, 0, bytes.size(), limits) {}

  Status parse(GgufFile& out) {
    out.bytes_ = bytes_;
    out.layout_.file_bytes = bytes_.size();
    SYN_RETURN_IF_ERROR(parse_header(out));
    out.layout_.header_bytes = reader_.pos();
    SYN_ASSIGN_OR_RETURN(std::vector<GgufKeyValue> entries, reader_.read_key_values(n_kv_));
    out.metadata_ = GgufMetadata(std::move(entries));
    out.layout_.metadata_bytes = reader_.pos() - out.layout_.header_bytes;
    SYN_RETURN_IF_ERROR(parse_alignment(out));
    const uint64_t infos_start = reader_.pos();
    SYN_RETURN_IF_ERROR(parse_tensor_infos(out));
    out.layout_.tensor_info_bytes = reader_.pos() - infos_start;
    SYN_RETURN_IF_ERROR(validate_data_section(out));
    out.parsed_bytes_ = reader_.max_pos();
    out.views_.reserve(out.tensors_.size());
    for (const GgufTensorInfo& t : out.tensors_) {
      out.views_.push_back(TensorView{t.name, t.type, t.n_dims, t.dims, out.tensor_data(t)});
    }
    return ok_status();
  }

 private:
  uint64_t remaining() const { return reader_.remaining(); }

  template <typename T>
  Result<T> read(std::string_view what) {
    return reader_.template read<T>(what);
  }

  Status parse_header(GgufFile& out) {
    if (bytes_.size() < 4) {
      return error_at(
          ErrorCode::kFileTruncated, 0,
          "file is " + std::to_string(bytes_.size()) + " bytes, too short for a header");
    }
    SYN_ASSIGN_OR_RETURN(const uint32_t magic, read<uint32_t>("magic"));
    if (magic != kGgufMagic) {
      std::string shown;
      for (int i = 0; i < 4; ++i) {
        const char c = static_cast<char>((magic >> (8 * i)) & 0xFF);
        shown += (c >= 0x20 && c < 0x7F) ? c : '?';
      }
      return error_at(ErrorCode::kBadMagic, 0, "magic is '" + shown + "', expected 'GGUF'");
    }
    SYN_ASSIGN_OR_RETURN(const uint32_t version, read<uint32_t>("version"));
    if (version != 2 && version != 3) {
      std::string why =
          "GGUF version " + std::to_string(version) + " is not supported (2 and 3 are)";
      if (version == 1) why = "GGUF version 1 is not supported (2 and 3 are); re-convert the model";
      if (version != 0 && (version & 0xFFFF) == 0) {
        why = "GGUF version " + std::to_string(version) +
              " looks byte-swapped: big-endian files are not supported";
      }
      return error_at(ErrorCode::kUnsupportedVersion, 4, why);
    }
    out.version_ = version;
    const uint64_t tensors_at = reader_.pos();
    SYN_ASSIGN_OR_RETURN(n_tensors_, read<uint64_t>("tensor count"));
    const uint64_t kv_at = reader_.pos();
    SYN_ASSIGN_OR_RETURN(n_kv_, read<uint64_t>("metadata count"));
    if (n_tensors_ > limits_.max_tensors) {
      return error_at(ErrorCode::kLimitExceeded, tensors_at,
                      "tensor count " + std::to_string(n_tensors_) + " exceeds the limit of " +
                          std::to_string(limits_.max_tensors));
    }
    if (n_kv_ > limits_.max_kv) {
      return error_at(ErrorCode::kLimitExceeded, kv_at,
                      "metadata count " + std::to_string(n_kv_) + " exceeds the limit of " +
                          std::to_string(limits_.max_kv));
    }
    // Both counts are now small enough that these products cannot overflow. The metadata count
    // is checked alone first so that the error points at the count that cannot be right.
    if (n_kv_ * kGgufMinKeyValueBytes > remaining()) {
      return error_at(ErrorCode::kFileTruncated, kv_at,
                      std::to_string(n_kv_) + " key/value pairs cannot fit in the " +
                          std::to_string(remaining()) + " bytes left");
    }
    if (n_kv_ * kGgufMinKeyValueBytes + n_tensors_ * kMinTensorInfoBytes > remaining()) {
      return error_at(ErrorCode::kFileTruncated, tensors_at,
                      std::to_string(n_kv_) + " key/value pairs and " + std::to_string(n_tensors_) +
                          " tensor infos cannot fit in the " + std::to_string(remaining()) +
                          " bytes left");
    }
    return ok_status();
  }

  Status parse_alignment(GgufFile& out) {
    const std::string key(gguf_key::kAlignment);
    const GgufValue* value = out.metadata_.find(key);
    if (value == nullptr) return ok_status();
    uint64_t at = 0;
    for (const GgufKeyValue& kv : out.metadata_.entries()) {
      if (kv.key == key) at = kv.file_offset;
    }
    if (value->type() != GgufValueType::kUint32) {
      return Status(
          ErrorCode::kTypeMismatch,
          "alignment must be u32, found " + std::string(gguf_value_type_name(value->type())),
          ErrorWhere{.byte_offset = at, .key = key});
    }
    const uint64_t alignment = *value->to_uint();
    if (!is_power_of_two(alignment)) {
      return Status(ErrorCode::kBadAlignment,
                    "alignment " + std::to_string(alignment) + " is not a power of two",
                    ErrorWhere{.byte_offset = at, .key = key});
    }
    out.alignment_ = alignment;
    return ok_status();
  }

  Status parse_tensor_infos(GgufFile& out) {
    // n_tensors_ was checked against the bytes left in parse_header.
    out.tensors_.reserve(n_tensors_);
    out.tensor_index_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      Result<GgufTensorInfo> info = read_tensor_info(out);
      if (!info.ok()) return std::move(info).take_status();
      if (!out.tensor_index_.emplace(info->name, out.tensors_.size()).second) {
        return Status(
            ErrorCode::kDuplicateTensor, "tensor name appears twice",
            ErrorWhere{.byte_offset = info->info_file_offset, .tensor = std::string(info->name)});
      }
      out.tensors_.push_back(*info);
    }
    return ok_status();
  }

  Result<GgufTensorInfo> read_tensor_info(const GgufFile& out) {
    GgufTensorInfo info;
    info.info_file_offset = reader_.pos();
    SYN_ASSIGN_OR_RETURN(info.name,
                         reader_.read_string(limits_.max_tensor_name_bytes, "tensor name"));
    auto fail = [&](ErrorCode code, uint64_t at, std::string message) {
      return Status(code, std::move(message),
                    ErrorWhere{.byte_offset = at, .tensor = std::string(info.name)});
    };
    if (info.name.empty())
      return fail(ErrorCode::kBadValue, info.info_file_offset, "empty tensor name");
    if (const auto bad = find_invalid_utf8(info.name)) {
      return fail(ErrorCode::kInvalidUtf8, info.info_file_offset + 8 + *bad,
                  "tensor name is not valid UTF-8");
    }
    const uint64_t dims_at = reader_.pos();
    SYN_ASSIGN_OR_RETURN(info.n_dims, read<uint32_t>("tensor dimension count"));
    if (info.n_dims == 0 || info.n_dims > kGgufMaxDims) {
      return fail(ErrorCode::kBadShape, dims_at,
                  "tensor has " + std::to_string(info.n_dims) + " dimensions (1 to 4 allowed)");
    }
    for (uint32_t d = 0; d < info.n_dims; ++d) {
      SYN_ASSIGN_OR_RETURN(info.dims[d], read<uint64_t>("tensor dimension"));
    }
    const uint64_t type_at = reader_.pos();
    SYN_ASSIGN_OR_RETURN(const uint32_t type_id, read<uint32_t>("tensor type"));
    const TensorTypeInfo* type = find_tensor_type(type_id);
    if (type == nullptr) {
      return fail(ErrorCode::kUnknownTensorType, type_at,
                  "unknown or removed tensor type " + std::to_string(type_id));
    }
    info.type = type->type;
    Result<uint64_t> bytes = tensor_byte_size(info.type, info.shape());
    if (!bytes.ok()) return fail(ErrorCode::kBadShape, dims_at, bytes.status().message());
    info.bytes = *bytes;
    const uint64_t offset_at = reader_.pos();
    SYN_ASSIGN_OR_RETURN(info.data_offset, read<uint64_t>("tensor data offset"));
    if (info.data_offset % out.alignment_ != 0) {
      return fail(ErrorCode::kBadAlignment, offset_at,
                  "data offset " + std::to_string(info.data_offset) + " is not a multiple of " +
                      std::to_string(out.alignment_));
    }
    return info;
  }

  Status validate_data_section(GgufFile& out) {
    GgufLayout& layout = out.layout_;
    const uint64_t infos_end = reader_.pos();
    const std::optional<uint64_t> data_offset = checked_align_up(infos_end, out.alignment_);
    if (!data_offset) {
      return error_at(ErrorCode::kBadAlignment, infos_end, "data section offset overflows");
    }
    out.data_offset_ = *data_offset;
    const uint64_t file_size = bytes_.size();
    if (out.tensors_.empty()) {
      // A vocabulary-only file may end right after the metadata, without padding.
      const uint64_t data_start = std::min(*data_offset, file_size);
      layout.alignment_padding_bytes = data_start - infos_end;
      layout.trailing_bytes = file_size - data_start;
      return ok_status();
    }
    if (*data_offset > file_size) {
      return error_at(
          ErrorCode::kFileTruncated, infos_end,
          "file ends before its data section (starts at " + std::to_string(*data_offset) + ")");
    }
    layout.alignment_padding_bytes = *data_offset - infos_end;
    const uint64_t data_size = file_size - *data_offset;

    std::vector<size_t> order(out.tensors_.size());
    std::iota(order.begin(), order.end(), 0);
    // Stable: tensors at the same offset are reported in file order, the same on every run.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return out.tensors_[a].data_offset < out.tensors_[b].data_offset;
    });
    uint64_t previous_end = 0;
    const GgufTensorInfo* previous = nullptr;
    for (size_t index : order) {
      const GgufTensorInfo& t = out.tensors_[index];
      const std::optional<uint64_t> end = checked_add(t.data_offset, t.bytes);
      // A tensor placed where the layout puts it (the previous end, aligned up) that does not fit
      // means the file was cut short (an interrupted download): say so rather than blame the
      // offset. previous_end <= data_size, so aligning it cannot overflow.
      if (end && *end > data_size &&
          t.data_offset == *checked_align_up(previous_end, out.alignment_)) {
        return Status(ErrorCode::kFileTruncated,
                      "file ends inside the tensor's data [" + std::to_string(t.data_offset) +
                          ", +" + std::to_string(t.bytes) + "): the data section has only " +
                          std::to_string(data_size) + " bytes",
                      ErrorWhere{.byte_offset = t.info_file_offset, .tensor = std::string(t.name)});
      }
      if (!end || *end > data_size) {
        return Status(ErrorCode::kTensorOutOfRange,
                      "data [" + std::to_string(t.data_offset) + ", +" + std::to_string(t.bytes) +
                          ") lies outside the " + std::to_string(data_size) + "-byte data section",
                      ErrorWhere{.byte_offset = t.info_file_offset, .tensor = std::string(t.name)});
      }
      if (previous != nullptr && t.data_offset < previous_end) {
        return Status(ErrorCode::kTensorOverlap,
                      "data overlaps tensor '" + std::string(previous->name) + "'",
                      ErrorWhere{.byte_offset = t.info_file_offset, .tensor = std::string(t.name)});
      }
      layout.tensor_data_bytes += t.bytes;
      previous_end = *end;
      previous = &t;
    }
    // Writers pad the last tensor to the alignment too; only bytes beyond that are trailing.
    const uint64_t padded_end =
        std::min(*checked_align_up(previous_end, out.alignment_), data_size);
    layout.tensor_padding_bytes = padded_end - layout.tensor_data_bytes;
    layout.trailing_bytes = data_size - padded_end;
    return ok_status();
  }

  std::span<const uint8_t> bytes_;
  const GgufLimits& limits_;
  GgufKvReader reader_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::string display_name,
                                 const GgufLimits& limits) {
  GgufFile file;
  file.path_ = std::move(display_name);
  GgufParser parser(bytes, limits);
  Status status = parser.parse(file);
  if (!status.ok()) return std::move(status).with_path(file.path_);
  return file;
}

Result<GgufFile> GgufFile::open(const std::string& path, const GgufLimits& limits) {
  SYN_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path));
  // Only metadata is read here; tensor data is paged in later by whoever uses it.
  mapping.advise(AccessHint::kRandom);
  const std::span<const uint8_t> bytes = mapping.bytes();
  SYN_ASSIGN_OR_RETURN(GgufFile file, parse(bytes, path, limits));
  file.mapping_ = std::move(mapping);  // the views stay valid: the mapping's address is unchanged
  return file;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView* GgufFile::tensor_view(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &views_[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const GgufTensorInfo& tensor) const {
  return bytes_.subspan(data_offset_ + tensor.data_offset, tensor.bytes);
}

}  // namespace synapse
