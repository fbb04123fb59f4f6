// SPDX-License-Identifier: Apache-2.0
#include "hub/gguf_join.h"

#include <vector>

#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_writer.h"

namespace synapse::hub {

Status join_gguf_splits(std::span<const std::string> parts, const std::string& output,
                        const std::function<void(uint64_t done, uint64_t total)>& progress) {
  std::vector<GgufFile> files;
  for (const std::string& part : parts) {
    SYN_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(part));
    files.push_back(std::move(file));
  }
  if (files.empty()) return Status(ErrorCode::kInvalidArgument, "no split parts to join");
  const auto bad = [](const std::string& path, const std::string& why) {
    return Status(ErrorCode::kBadValue, "not a complete gguf-split set: " + why,
                  ErrorWhere{.path = path});
  };
  uint64_t total_tensors = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const GgufMetadata& meta = files[i].metadata();
    const Result<uint32_t> no = meta.get_u32(kSplitNoKey);
    const Result<uint32_t> count = meta.get_u32(kSplitCountKey);
    const Result<uint32_t> tensors = meta.get_u32(kSplitTensorsCountKey);
    if (!no.ok() || !count.ok() || !tensors.ok()) {
      return bad(parts[i], "it lacks the split.no, split.count or split.tensors.count key");
    }
    if (*no != i || *count != files.size()) {
      return bad(parts[i], "it is part " + std::to_string(*no + 1) + " of " +
                               std::to_string(*count) + ", expected part " + std::to_string(i + 1) +
                               " of " + std::to_string(files.size()));
    }
    if (i == 0) total_tensors = *tensors;
    if (*tensors != total_tensors) return bad(parts[i], "the parts disagree on the tensor count");
  }
  GgufWriter writer;
  // general.alignment first among equals: the writer lays out data by it.
  for (const GgufKeyValue& entry : files[0].metadata().entries()) {
    if (entry.key.starts_with("split.")) continue;
    SYN_RETURN_IF_ERROR(writer.set(entry.key, entry.value));
  }
  uint64_t seen = 0;
  for (const GgufFile& file : files) {
    for (const GgufTensorInfo& tensor : file.tensors()) {
      SYN_RETURN_IF_ERROR(
          writer.add_tensor(tensor.name, tensor.type, tensor.shape(), file.tensor_data(tensor)));
      ++seen;
    }
  }
  if (seen != total_tensors) {
    return bad(parts[0], "split.tensors.count is " + std::to_string(total_tensors) +
                             " but the parts hold " + std::to_string(seen) + " tensors");
  }
  return writer.write_file(output, [&](uint64_t done, uint64_t total) {
    if (progress) progress(done, total);
  });
}

}  // namespace synapse::hub
