// SPDX-License-Identifier: Apache-2.0
// Content hashes: XXH3 (64/128) for fast integrity checks of tensor data, SHA-256 for identities
// that must resist deliberate collisions (model file digests, request digests), SHA-1 only to
// check git object ids others give us (a hub's non-LFS files).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace synapse {

struct Hash128 {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Hash128&) const = default;
  std::string to_hex() const;  // 32 lowercase hex digits, high half first (XXH3 canonical order)
};

using Sha256Digest = std::array<uint8_t, 32>;

uint64_t xxh3_64(std::span<const uint8_t> bytes, uint64_t seed = 0);
Hash128 xxh3_128(std::span<const uint8_t> bytes);
Sha256Digest sha256(std::span<const uint8_t> bytes);

inline std::span<const uint8_t> as_bytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

std::string to_hex(std::span<const uint8_t> bytes);

// Streaming XXH3-128, for data that does not fit one buffer.
class Xxh3Hasher128 {
 public:
  Xxh3Hasher128();
  ~Xxh3Hasher128();
  Xxh3Hasher128(const Xxh3Hasher128&) = delete;
  Xxh3Hasher128& operator=(const Xxh3Hasher128&) = delete;
  void update(std::span<const uint8_t> bytes);
  Hash128 digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Streaming SHA-256 (OpenSSL EVP).
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void update(std::span<const uint8_t> bytes);
  Sha256Digest finish();  // the hasher cannot be updated afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Streaming SHA-1 (OpenSSL EVP). Not for identities of our own: only to compare with git's object
// ids, which are SHA-1s.
using Sha1Digest = std::array<uint8_t, 20>;
class Sha1Hasher {
 public:
  Sha1Hasher();
  ~Sha1Hasher();
  Sha1Hasher(const Sha1Hasher&) = delete;
  Sha1Hasher& operator=(const Sha1Hasher&) = delete;
  void update(std::span<const uint8_t> bytes);
  Sha1Digest finish();  // the hasher cannot be updated afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// SHA-256 of a whole file, read in chunks.
Result<Sha256Digest> sha256_file(const std::string& path);

}  // namespace synapse
