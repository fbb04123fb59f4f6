// SPDX-License-Identifier: Apache-2.0
#include "base/hash.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <cstdio>
#include <vector>

namespace synapse {

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xF]);
  }
  return out;
}

std::string Hash128::to_hex() const {
  std::array<uint8_t, 16> canonical{};
  for (int i = 0; i < 8; ++i) {
    canonical[static_cast<size_t>(i)] = static_cast<uint8_t>(high >> (56 - 8 * i));
    canonical[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(low >> (56 - 8 * i));
  }
  return synapse::to_hex(canonical);
}

uint64_t xxh3_64(std::span<const uint8_t> bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

Hash128 xxh3_128(std::span<const uint8_t> bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return Hash128{h.high64, h.low64};
}

Sha256Digest sha256(std::span<const uint8_t> bytes) {
  Sha256Hasher hasher;
  hasher.update(bytes);
  return hasher.finish();
}

struct Xxh3Hasher128::State {
  XXH3_state_t* xxh = nullptr;
};

Xxh3Hasher128::Xxh3Hasher128() : state_(std::make_unique<State>()) {
  state_->xxh = XXH3_createState();
  SYN_CHECK(state_->xxh != nullptr, "XXH3_createState failed");
  XXH3_128bits_reset(state_->xxh);
}

Xxh3Hasher128::~Xxh3Hasher128() { XXH3_freeState(state_->xxh); }

void Xxh3Hasher128::update(std::span<const uint8_t> bytes) {
  XXH3_128bits_update(state_->xxh, bytes.data(), bytes.size());
}

Hash128 Xxh3Hasher128::digest() const {
  const XXH128_hash_t h = XXH3_128bits_digest(state_->xxh);
  return Hash128{h.high64, h.low64};
}

struct Sha256Hasher::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256Hasher::Sha256Hasher() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  SYN_CHECK(state_->ctx != nullptr && EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) == 1,
            "OpenSSL SHA-256 initialisation failed");
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(state_->ctx); }

void Sha256Hasher::update(std::span<const uint8_t> bytes) {
  SYN_CHECK(EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) == 1,
            "SHA-256 update failed");
}

Sha256Digest Sha256Hasher::finish() {
  Sha256Digest out{};
  unsigned int length = 0;
  SYN_CHECK(EVP_DigestFinal_ex(state_->ctx, out.data(), &length) == 1 && length == out.size(),
            "SHA-256 final failed");
  return out;
}

struct Sha1Hasher::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha1Hasher::Sha1Hasher() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  SYN_CHECK(state_->ctx != nullptr && EVP_DigestInit_ex(state_->ctx, EVP_sha1(), nullptr) == 1,
            "OpenSSL SHA-1 initialisation failed");
}

Sha1Hasher::~Sha1Hasher() { EVP_MD_CTX_free(state_->ctx); }

void Sha1Hasher::update(std::span<const uint8_t> bytes) {
  SYN_CHECK(EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) == 1, "SHA-1 update failed");
}

Sha1Digest Sha1Hasher::finish() {
  Sha1Digest out{};
  unsigned int length = 0;
  SYN_CHECK(EVP_DigestFinal_ex(state_->ctx, out.data(), &length) == 1 && length == out.size(),
            "SHA-1 final failed");
  return out;
}

Result<Sha256Digest> sha256_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status(ErrorCode::kNotFound, "cannot open for hashing", ErrorWhere{.path = path});
  }
  Sha256Hasher hasher;
  std::vector<uint8_t> buffer(1 << 20);
  while (true) {
    const size_t n = std::fread(buffer.data(), 1, buffer.size(), file);
    if (n > 0) hasher.update({buffer.data(), n});
    if (n < buffer.size()) break;
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed)
    return Status(ErrorCode::kIoError, "read error while hashing", ErrorWhere{.path = path});
  return hasher.finish();
}

}  // namespace synapse
