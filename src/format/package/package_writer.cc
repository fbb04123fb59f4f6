// SPDX-License-Identifier: Apache-2.0
#include "format/package/package_writer.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/checked_math.h"
#include "base/hash.h"
#include "format/gguf/gguf_kv_codec.h"

namespace synapse {
namespace {

// Large enough that per-chunk costs vanish, small enough to stay in the L2/L3 caches while both
// hashes and the write touch it.
constexpr uint64_t kChunkBytes = 4 << 20;
const std::string kPlaceholderSha256(64, '0');

struct SourceFacts {
  std::string format;
  std::string name;
  std::string created_by;
};

using PackageKeys = std::vector<std::pair<std::string_view, GgufValue>>;

PackageKeys package_keys(const PackageWriteResult& r, const SourceFacts& facts) {
  return {
      {package_key::kSourceFormat, GgufValue::string(facts.format)},
      {package_key::kSourceName, GgufValue::string(facts.name)},
      {package_key::kSourceBytes, GgufValue::scalar<uint64_t>(r.source_bytes)},
      {package_key::kSourceSha256, GgufValue::string(r.source_sha256)},
      {package_key::kGraphHash, GgufValue::string(r.graph_hash)},
      {package_key::kCreatedBy, GgufValue::string(facts.created_by)},
  };
}

// The manifest's size, computed without encoding it (a vocabulary is megabytes).
uint64_t manifest_bytes(const GgufMetadata& model, const PackageKeys& package) {
  uint64_t total = 8 + 8;  // the two key counts
  for (const GgufKeyValue& kv : model.entries()) total += gguf_key_value_bytes(kv.key, kv.value);
  for (const auto& [key, value] : package) total += gguf_key_value_bytes(key, value);
  return total;
}

std::vector<uint8_t> encode_manifest(const GgufMetadata& model, const PackageKeys& package) {
  std::vector<uint8_t> out;
  out.reserve(manifest_bytes(model, package));
  append_le<uint64_t>(out, model.size());
  for (const GgufKeyValue& kv : model.entries()) append_gguf_key_value(out, kv.key, kv.value);
  append_le<uint64_t>(out, package.size());
  for (const auto& [key, value] : package) append_gguf_key_value(out, key, value);
  return out;
}

struct PlannedTensor {
  const TensorView* view;
  uint64_t source_offset;  // where its data starts in the source file
  uint64_t data_offset;    // where it goes in the package's data section
  Hash128 checksum;
};

std::vector<uint8_t> encode_table(const std::vector<PlannedTensor>& tensors) {
  std::vector<uint8_t> out;
  for (const PlannedTensor& t : tensors) {
    append_gguf_string(out, t.view->name);
    append_le<uint32_t>(out, static_cast<uint32_t>(t.view->type));
    append_le<uint32_t>(out, t.view->n_dims);
    for (uint64_t d : t.view->shape()) append_le<uint64_t>(out, d);
    append_le<uint64_t>(out, t.data_offset);
    append_le<uint64_t>(out, t.view->data.size());
    append_le<uint64_t>(out, t.checksum.high);
    append_le<uint64_t>(out, t.checksum.low);
  }
  return out;
}

}  // namespace

Result<PackageWriteResult> write_package(const ModelFile& source, AtomicFile& out,
                                         const PackageWriteOptions& options) {
  const std::span<const uint8_t> source_bytes = source.mapping().bytes();
  if (source_bytes.empty()) {
    return Status(ErrorCode::kInvalidArgument, "the source must be a mapped, non-empty file",
                  ErrorWhere{.path = source.path()});
  }
  if (!is_power_of_two(options.alignment) || options.alignment < kPackageMinAlignment ||
      options.alignment > kPackageMaxAlignment) {
    return Status(ErrorCode::kBadAlignment, "package alignment must be a power of two from " +
                                                std::to_string(kPackageMinAlignment) + " to " +
                                                std::to_string(kPackageMaxAlignment));
  }
  if (out.bytes_written() != 0) {
    return Status(ErrorCode::kInvalidArgument, "write_package needs an empty output file");
  }

  // Tensors go in the source's data order, so the source is read front to back exactly once.
  std::vector<PlannedTensor> tensors;
  tensors.reserve(source.tensor_views().size());
  for (const TensorView& view : source.tensor_views()) {
    if (view.data.data() < source_bytes.data() ||
        view.data.data() + view.data.size() > source_bytes.data() + source_bytes.size()) {
      return Status(ErrorCode::kInternal, "tensor view outside the source mapping",
                    ErrorWhere{.path = source.path(), .tensor = std::string(view.name)});
    }
    tensors.push_back(
        {&view, static_cast<uint64_t>(view.data.data() - source_bytes.data()), 0, {}});
  }
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const PlannedTensor& a, const PlannedTensor& b) {
                     return a.source_offset < b.source_offset;
                   });
  uint64_t data_bytes = 0;
  PackageWriteResult result;
  for (PlannedTensor& t : tensors) {
    t.data_offset = data_bytes;
    data_bytes = *checked_align_up(data_bytes + t.view->data.size(), options.alignment);
    result.tensor_data_bytes += t.view->data.size();
  }
  result.source_bytes = source_bytes.size();
  result.tensor_count = tensors.size();
  result.graph_hash = compute_graph_hash(source.metadata(), source.tensor_views());
  result.source_sha256 = kPlaceholderSha256;  // known once the source has been read
  const SourceFacts facts{std::string(source.format_name()),
                          options.source_name.empty()
                              ? std::filesystem::path(source.path()).filename().string()
                              : options.source_name,
                          options.created_by};

  PackageHeader h;
  h.alignment = options.alignment;
  h.manifest_bytes = manifest_bytes(source.metadata(), package_keys(result, facts));
  h.table_offset = h.manifest_offset + h.manifest_bytes;
  h.table_bytes = encode_table(tensors).size();
  h.tensor_count = tensors.size();
  h.data_offset = *checked_align_up(h.table_offset + h.table_bytes, h.alignment);
  h.data_bytes = data_bytes;
  h.file_bytes = h.data_offset + h.data_bytes;

  // Everything before the data is rewritten at the end; reserve its place with zeros.
  const auto report = [&] {
    if (options.progress) options.progress(out.bytes_written(), h.file_bytes);
  };
  SYN_RETURN_IF_ERROR(out.write_zeros(h.data_offset));
  report();
  Sha256Hasher source_hash;
  uint64_t source_pos = 0;  // everything before it has gone into source_hash
  const auto hash_source_until = [&](uint64_t end) {
    if (end > source_pos) source_hash.update(source_bytes.subspan(source_pos, end - source_pos));
    source_pos = std::max(source_pos, end);
  };
  for (PlannedTensor& t : tensors) {
    hash_source_until(t.source_offset);
    const std::span<const uint8_t> data = t.view->data;
    Xxh3Hasher128 tensor_hash;
    for (uint64_t done = 0; done < data.size(); done += kChunkBytes) {
      const std::span<const uint8_t> chunk =
          data.subspan(done, std::min(kChunkBytes, data.size() - done));
      tensor_hash.update(chunk);
      const uint64_t chunk_offset = t.source_offset + done;
      hash_source_until(chunk_offset + chunk.size());
      Status written = out.write(chunk);
      if (!written.ok()) return std::move(written).with_tensor(std::string(t.view->name));
      // Drop the source pages just used: they would otherwise count against this process.
      source.mapping().advise(AccessHint::kDontNeed, chunk_offset, chunk.size());
      report();
    }
    t.checksum = tensor_hash.digest();
    SYN_RETURN_IF_ERROR(
        out.write_zeros(*checked_align_up(out.bytes_written(), h.alignment) - out.bytes_written()));
  }
  hash_source_until(source_bytes.size());
  result.source_sha256 = to_hex(source_hash.finish());
  if (out.bytes_written() != h.file_bytes) {
    return Status(ErrorCode::kInternal, "package size differs from its plan",
                  ErrorWhere{.path = out.temp_path()});
  }

  const std::vector<uint8_t> manifest =
      encode_manifest(source.metadata(), package_keys(result, facts));
  const std::vector<uint8_t> table = encode_table(tensors);
  if (manifest.size() != h.manifest_bytes || table.size() != h.table_bytes) {
    return Status(ErrorCode::kInternal, "manifest or table size changed while writing");
  }
  h.manifest_checksum = xxh3_128(manifest);
  h.table_checksum = xxh3_128(table);
  SYN_RETURN_IF_ERROR(out.write_at(h.manifest_offset, manifest));
  SYN_RETURN_IF_ERROR(out.write_at(h.table_offset, table));
  SYN_RETURN_IF_ERROR(out.write_at(0, h.encode()));
  result.package_bytes = h.file_bytes;
  return result;
}

Result<PackageWriteResult> convert_to_package(const std::string& source_path,
                                              const std::string& out_path,
                                              const PackageWriteOptions& options) {
  SYN_ASSIGN_OR_RETURN(const std::unique_ptr<ModelFile> source, open_model_file(source_path));
  if (source->format_name() != "gguf") {
    return Status(
        ErrorCode::kInvalidArgument,
        "already a " + std::string(source->format_name()) + " package: nothing to convert",
        ErrorWhere{.path = source_path});
  }
  SYN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::create(out_path));
  SYN_ASSIGN_OR_RETURN(PackageWriteResult result, write_package(*source, out, options));
  SYN_RETURN_IF_ERROR(out.commit());
  return result;
}

}  // namespace synapse
