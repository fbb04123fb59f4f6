// SPDX-License-Identifier: Apache-2.0
#include "format/package/package_format.h"

#include <algorithm>
#include <vector>

#include "format/byte_order.h"
#include "format/gguf/gguf_keys.h"
#include "format/gguf/gguf_kv_codec.h"

namespace synapse {
namespace {

namespace field = package_header_field;

void store_hash(uint8_t* at, const Hash128& hash) {
  store_le(at, hash.high);
  store_le(at + 8, hash.low);
}

Hash128 load_hash(const uint8_t* at) { return {load_le<uint64_t>(at), load_le<uint64_t>(at + 8)}; }

}  // namespace

std::array<uint8_t, kPackageHeaderBytes> PackageHeader::encode() const {
  std::array<uint8_t, kPackageHeaderBytes> out{};
  std::copy(kPackageMagic.begin(), kPackageMagic.end(), out.begin());
  uint8_t* p = out.data();
  store_le(p + field::kVersion, version);
  store_le(p + field::kHeaderBytes, header_bytes);
  store_le(p + field::kFileBytes, file_bytes);
  store_le(p + field::kAlignment, alignment);
  store_le(p + field::kManifestOffset, manifest_offset);
  store_le(p + field::kManifestBytes, manifest_bytes);
  store_le(p + field::kTableOffset, table_offset);
  store_le(p + field::kTableBytes, table_bytes);
  store_le(p + field::kTensorCount, tensor_count);
  store_le(p + field::kDataOffset, data_offset);
  store_le(p + field::kDataBytes, data_bytes);
  store_hash(p + field::kManifestXxh3, manifest_checksum);
  store_hash(p + field::kTableXxh3, table_checksum);
  store_le(p + field::kHeaderChecksum, package_header_checksum(out));
  return out;
}

PackageHeader PackageHeader::decode(std::span<const uint8_t, kPackageHeaderBytes> bytes) {
  const uint8_t* p = bytes.data();
  PackageHeader h;
  h.version = load_le<uint32_t>(p + field::kVersion);
  h.header_bytes = load_le<uint32_t>(p + field::kHeaderBytes);
  h.file_bytes = load_le<uint64_t>(p + field::kFileBytes);
  h.alignment = load_le<uint64_t>(p + field::kAlignment);
  h.manifest_offset = load_le<uint64_t>(p + field::kManifestOffset);
  h.manifest_bytes = load_le<uint64_t>(p + field::kManifestBytes);
  h.table_offset = load_le<uint64_t>(p + field::kTableOffset);
  h.table_bytes = load_le<uint64_t>(p + field::kTableBytes);
  h.tensor_count = load_le<uint64_t>(p + field::kTensorCount);
  h.data_offset = load_le<uint64_t>(p + field::kDataOffset);
  h.data_bytes = load_le<uint64_t>(p + field::kDataBytes);
  h.manifest_checksum = load_hash(p + field::kManifestXxh3);
  h.table_checksum = load_hash(p + field::kTableXxh3);
  return h;
}

uint64_t package_header_checksum(std::span<const uint8_t, kPackageHeaderBytes> bytes) {
  return xxh3_64(bytes.first(field::kHeaderChecksum));
}

void reseal_package_checksums(std::span<uint8_t> bytes) {
  if (bytes.size() < kPackageHeaderBytes) return;
  const PackageHeader h = PackageHeader::decode(bytes.first<kPackageHeaderBytes>());
  const auto section_hash = [&bytes](uint64_t offset, uint64_t size, uint64_t field_at) {
    if (offset > bytes.size() || size > bytes.size() - offset) return;
    store_hash(bytes.data() + field_at, xxh3_128(bytes.subspan(offset, size)));
  };
  section_hash(h.manifest_offset, h.manifest_bytes, field::kManifestXxh3);
  section_hash(h.table_offset, h.table_bytes, field::kTableXxh3);
  store_le(bytes.data() + field::kHeaderChecksum,
           package_header_checksum(bytes.first<kPackageHeaderBytes>()));
}

std::string compute_graph_hash(const GgufMetadata& metadata, std::span<const TensorView> tensors) {
  std::vector<uint8_t> canonical;
  append_gguf_string(canonical, "synapse graph v1");
  const std::string_view arch = metadata.architecture().ok() ? *metadata.architecture() : "";
  append_gguf_string(canonical, arch);
  const std::string prefix = std::string(arch) + ".";
  std::vector<const GgufKeyValue*> hparams;
  for (const GgufKeyValue& kv : metadata.entries()) {
    if (!arch.empty() && kv.key.starts_with(prefix)) hparams.push_back(&kv);
  }
  std::sort(hparams.begin(), hparams.end(),
            [](const GgufKeyValue* a, const GgufKeyValue* b) { return a->key < b->key; });
  append_le<uint64_t>(canonical, hparams.size());
  for (const GgufKeyValue* kv : hparams) append_gguf_key_value(canonical, kv->key, kv->value);
  std::vector<const TensorView*> sorted;
  sorted.reserve(tensors.size());
  for (const TensorView& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
  append_le<uint64_t>(canonical, sorted.size());
  for (const TensorView* t : sorted) {
    append_gguf_string(canonical, t->name);
    append_le<uint32_t>(canonical, static_cast<uint32_t>(t->type));
    append_le<uint32_t>(canonical, t->n_dims);
    for (uint64_t d : t->shape()) append_le<uint64_t>(canonical, d);
  }
  return to_hex(sha256(canonical));
}

}  // namespace synapse
