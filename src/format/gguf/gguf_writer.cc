// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_writer.h"

#include <algorithm>

#include "base/atomic_file.h"
#include "base/checked_math.h"
#include "base/utf8.h"
#include "format/gguf/gguf_keys.h"
#include "format/gguf/gguf_kv_codec.h"

namespace synapse {

Status GgufWriter::set(std::string_view key, GgufValue value) {
  SYN_RETURN_IF_ERROR(check_gguf_key(key));
  if (key == gguf_key::kAlignment) {
    if (value.type() != GgufValueType::kUint32 || !is_power_of_two(*value.to_uint())) {
      return Status(ErrorCode::kBadAlignment, "general.alignment must be a u32 power of two",
                    ErrorWhere{.key = std::string(key)});
    }
    if (!tensors_.empty()) {
      return Status(ErrorCode::kInvalidArgument, "set general.alignment before adding tensors",
                    ErrorWhere{.key = std::string(key)});
    }
    alignment_ = static_cast<uint32_t>(*value.to_uint());
  }
  for (Entry& entry : entries_) {
    if (entry.key == key) {
      entry.value = std::move(value);
      return ok_status();
    }
  }
  entries_.push_back(Entry{std::string(key), std::move(value)});
  return ok_status();
}

bool GgufWriter::contains(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return true;
  }
  return false;
}

Status GgufWriter::check_tensor(std::string_view name, TensorType type,
                                std::span<const uint64_t> dims, uint64_t* bytes) const {
  const ErrorWhere where{.tensor = std::string(name)};
  if (name.empty()) return Status(ErrorCode::kInvalidArgument, "empty tensor name");
  if (name.size() > kGgmlMaxTensorNameBytes) {
    return Status(ErrorCode::kLimitExceeded,
                  "tensor name longer than ggml's limit of " +
                      std::to_string(kGgmlMaxTensorNameBytes) + " bytes",
                  where);
  }
  if (!is_valid_utf8(name))
    return Status(ErrorCode::kInvalidUtf8, "tensor name is not UTF-8", where);
  for (const Tensor& t : tensors_) {
    if (t.name == name) return Status(ErrorCode::kDuplicateTensor, "tensor added twice", where);
  }
  if (dims.empty() || dims.size() > kGgufMaxDims) {
    return Status(ErrorCode::kBadShape, "tensors have 1 to 4 dimensions", where);
  }
  Result<uint64_t> size = tensor_byte_size(type, dims);
  if (!size.ok()) return std::move(size).take_status().with_tensor(std::string(name));
  *bytes = *size;
  return ok_status();
}

Status GgufWriter::add_tensor(std::string_view name, TensorType type,
                              std::span<const uint64_t> dims, std::span<const uint8_t> data) {
  uint64_t bytes = 0;
  SYN_RETURN_IF_ERROR(check_tensor(name, type, dims, &bytes));
  if (data.size() != bytes) {
    return Status(ErrorCode::kSizeMismatch,
                  "data is " + std::to_string(data.size()) + " bytes, shape and type need " +
                      std::to_string(bytes),
                  ErrorWhere{.tensor = std::string(name)});
  }
  tensors_.push_back(Tensor{
      std::string(name), type, {dims.begin(), dims.end()}, bytes, data_bytes_, data, nullptr});
  data_bytes_ = *checked_align_up(data_bytes_ + bytes, alignment_);
  return ok_status();
}

Status GgufWriter::add_tensor(std::string_view name, TensorType type,
                              std::span<const uint64_t> dims, FillFn fill) {
  uint64_t bytes = 0;
  SYN_RETURN_IF_ERROR(check_tensor(name, type, dims, &bytes));
  tensors_.push_back(Tensor{std::string(name),
                            type,
                            {dims.begin(), dims.end()},
                            bytes,
                            data_bytes_,
                            {},
                            std::move(fill)});
  data_bytes_ = *checked_align_up(data_bytes_ + bytes, alignment_);
  return ok_status();
}

std::vector<uint8_t> GgufWriter::encode_header() const {
  std::vector<uint8_t> out;
  append_le<uint32_t>(out, kGgufMagic);
  append_le<uint32_t>(out, 3);
  append_le<uint64_t>(out, tensors_.size());
  append_le<uint64_t>(out, entries_.size());
  for (const Entry& entry : entries_) append_gguf_key_value(out, entry.key, entry.value);
  for (const Tensor& t : tensors_) {
    append_gguf_string(out, t.name);
    append_le<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) append_le<uint64_t>(out, d);
    append_le<uint32_t>(out, static_cast<uint32_t>(t.type));
    append_le<uint64_t>(out, t.data_offset);
  }
  out.resize(*checked_align_up(out.size(), alignment_), 0);
  return out;
}

uint64_t GgufWriter::file_size() const { return encode_header().size() + data_bytes_; }

Status GgufWriter::write(const std::function<Status(std::span<const uint8_t>)>& sink) const {
  SYN_RETURN_IF_ERROR(sink(encode_header()));
  static const std::vector<uint8_t> kZeros(4096, 0);
  std::vector<uint8_t> buffer;
  for (const Tensor& t : tensors_) {
    std::span<const uint8_t> data = t.data;
    if (t.fill) {
      buffer.assign(t.bytes, 0);
      Status filled = t.fill(buffer);
      if (!filled.ok()) return std::move(filled).with_tensor(t.name);
      data = buffer;
    }
    SYN_RETURN_IF_ERROR(sink(data));
    uint64_t padding = (alignment_ - t.bytes % alignment_) % alignment_;
    while (padding > 0) {
      const uint64_t n = std::min<uint64_t>(padding, kZeros.size());
      SYN_RETURN_IF_ERROR(sink({kZeros.data(), n}));
      padding -= n;
    }
  }
  return ok_status();
}

Result<std::vector<uint8_t>> GgufWriter::write_to_buffer() const {
  std::vector<uint8_t> out;
  out.reserve(file_size());
  SYN_RETURN_IF_ERROR(write([&out](std::span<const uint8_t> bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
    return ok_status();
  }));
  return out;
}

Status GgufWriter::write_file(const std::string& path, const ProgressFn& progress) const {
  SYN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  const uint64_t total = progress ? file_size() : 0;
  const auto sink = [&](std::span<const uint8_t> bytes) {
    Status written = file.write(bytes);
    if (written.ok() && progress) progress(file.bytes_written(), total);
    return written;
  };
  SYN_RETURN_IF_ERROR(write(sink));
  return file.commit();
}

}  // namespace synapse
