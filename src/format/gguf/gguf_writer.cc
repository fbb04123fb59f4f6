// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/checked_math.h"
#include "base/utf8.h"
#include "format/byte_order.h"
#include "format/gguf/gguf_keys.h"

namespace synapse {
namespace {

class ByteBuffer {
 public:
  template <typename T>
  void put(T value) {
    uint8_t bytes[sizeof(T)];
    store_le(bytes, value);
    data_.insert(data_.end(), bytes, bytes + sizeof(T));
  }
  void put_string(std::string_view text) {
    put<uint64_t>(text.size());
    data_.insert(data_.end(), text.begin(), text.end());
  }
  void put_raw(std::span<const uint8_t> raw) { data_.insert(data_.end(), raw.begin(), raw.end()); }
  void pad_to(uint64_t alignment) {
    while (data_.size() % alignment != 0) data_.push_back(0);
  }
  std::vector<uint8_t>& data() { return data_; }

 private:
  std::vector<uint8_t> data_;
};

void encode_value(ByteBuffer& out, const GgufValue& value) {
  switch (value.type()) {
    case GgufValueType::kString:
      out.put_string(*value.to_string());
      break;
    case GgufValueType::kArray: {
      out.put<uint32_t>(static_cast<uint32_t>(value.element_type()));
      out.put<uint64_t>(value.array_size());
      if (value.element_type() == GgufValueType::kString) {
        for (std::string_view s : value.strings()) out.put_string(s);
      } else if (value.element_type() == GgufValueType::kArray) {
        for (const GgufValue& inner : value.arrays()) encode_value(out, inner);
      } else {
        out.put_raw(value.raw_elements());
      }
      break;
    }
    default: {
      uint8_t bytes[8];
      store_le(bytes, value.raw_scalar_bits());
      out.put_raw({bytes, gguf_scalar_bytes(value.type())});
      break;
    }
  }
}

Status check_key(std::string_view key) {
  if (key.empty()) return Status(ErrorCode::kInvalidArgument, "empty metadata key");
  if (key.size() > 65535) {
    return Status(ErrorCode::kLimitExceeded, "metadata key longer than 65535 bytes");
  }
  if (!is_valid_utf8(key)) {
    return Status(ErrorCode::kInvalidUtf8, "metadata key is not valid UTF-8");
  }
  return ok_status();
}

}  // namespace

Status GgufWriter::set(std::string_view key, GgufValue value) {
  SYN_RETURN_IF_ERROR(check_key(key));
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
  ByteBuffer out;
  out.put<uint32_t>(kGgufMagic);
  out.put<uint32_t>(3);
  out.put<uint64_t>(tensors_.size());
  out.put<uint64_t>(entries_.size());
  for (const Entry& entry : entries_) {
    out.put_string(entry.key);
    out.put<uint32_t>(static_cast<uint32_t>(entry.value.type()));
    encode_value(out, entry.value);
  }
  for (const Tensor& t : tensors_) {
    out.put_string(t.name);
    out.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) out.put<uint64_t>(d);
    out.put<uint32_t>(static_cast<uint32_t>(t.type));
    out.put<uint64_t>(t.data_offset);
  }
  out.pad_to(alignment_);
  return std::move(out.data());
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
  std::string temp_path = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp_path.data());
  if (fd < 0) {
    return Status(ErrorCode::kIoError, std::string("cannot create file: ") + std::strerror(errno),
                  ErrorWhere{.path = path});
  }
  ::fchmod(fd, 0644);  // mkstemp creates 0600; a model file is not a secret
  std::FILE* file = ::fdopen(fd, "wb");
  if (file == nullptr) {
    ::close(fd);
    ::unlink(temp_path.c_str());
    return Status(ErrorCode::kIoError, "fdopen failed", ErrorWhere{.path = path});
  }
  std::vector<char> stdio_buffer(1 << 20);
  std::setvbuf(file, stdio_buffer.data(), _IOFBF, stdio_buffer.size());
  const uint64_t total = progress ? file_size() : 0;
  uint64_t written = 0;
  Status status = write([&](std::span<const uint8_t> bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
      return Status(ErrorCode::kIoError, std::string("write failed: ") + std::strerror(errno),
                    ErrorWhere{.path = path});
    }
    written += bytes.size();
    if (progress) progress(written, total);
    return ok_status();
  });
  if (std::fflush(file) != 0 && status.ok()) {
    status = Status(ErrorCode::kIoError, std::string("write failed: ") + std::strerror(errno),
                    ErrorWhere{.path = path});
  }
  if (status.ok() && ::fsync(::fileno(file)) != 0) {
    status = Status(ErrorCode::kIoError, std::string("fsync failed: ") + std::strerror(errno),
                    ErrorWhere{.path = path});
  }
  std::fclose(file);
  if (status.ok() && ::rename(temp_path.c_str(), path.c_str()) != 0) {
    status = Status(ErrorCode::kIoError, std::string("rename failed: ") + std::strerror(errno),
                    ErrorWhere{.path = path});
  }
  if (!status.ok()) ::unlink(temp_path.c_str());
  return status;
}

}  // namespace synapse
