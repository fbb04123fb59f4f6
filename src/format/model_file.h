// SPDX-License-Identifier: Apache-2.0
// A model file of any supported format, seen the same way: typed metadata (GGUF's key/value model)
// and zero-copy views of the tensors. Everything above `format` (models, the tokenizer loader, the
// CLI) works on ModelFile, so a GGUF and a prepared package are interchangeable.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/mapped_file.h"
#include "base/status.h"
#include "format/gguf/gguf_metadata.h"
#include "format/tensor_type.h"

namespace synapse {

// A tensor inside a mapped model file. `data` points into the file's mapping.
struct TensorView {
  std::string_view name;
  TensorType type = TensorType::kF32;
  uint32_t n_dims = 0;
  std::array<uint64_t, 4> dims = {1, 1, 1, 1};  // ne[0] innermost; unused dims are 1
  std::span<const uint8_t> data;

  std::span<const uint64_t> shape() const { return {dims.data(), n_dims}; }
  uint64_t element_count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
  uint64_t rows() const { return dims[1] * dims[2] * dims[3]; }
  uint64_t row_bytes() const { return data.size() / rows(); }
};

class ModelFile {
 public:
  virtual ~ModelFile() = default;

  virtual std::string_view format_name() const = 0;  // "gguf", ...
  virtual const std::string& path() const = 0;
  virtual const GgufMetadata& metadata() const = 0;
  virtual std::span<const TensorView> tensor_views() const = 0;
  // nullptr when the file has no tensor of that name.
  virtual const TensorView* tensor_view(std::string_view name) const = 0;
  virtual const MappedFile& mapping() const = 0;
};

// "synapse" when the file starts with the package magic, else "gguf" (also for files that cannot
// be read: the GGUF reader then reports why).
std::string_view sniff_model_format(const std::string& path);
// Opens a model file, choosing the reader from its first bytes.
Result<std::unique_ptr<ModelFile>> open_model_file(const std::string& path);

}  // namespace synapse
