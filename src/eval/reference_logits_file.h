// SPDX-License-Identifier: Apache-2.0
// The reference-logits file of KL-divergence runs (`synapse perplexity --save-logits`): the
// tokens of the text and, for every chunk of the llama-perplexity protocol, the raw float32
// logits of its scored rows. Logits are kept exactly (no compression), so a model compared
// against its own reference gives a KL divergence of exactly 0. Layout (little-endian):
//
//   0  "SYNLOGIT"  magic                 40  u64 n_tokens
//   8  u32 version (1)                    48  XXH3-128 of the tokens: u64 high, low
//  12  u32 n_vocab                        64  i32 tokens[n_tokens], zero-padded to 64 bytes
//  16  u32 n_ctx                          ..  f32 logits[n_chunks][n_rows][n_vocab]
//  20  u32 n_chunks
//  24  u32 first_row (n_ctx / 2)
//  28  u32 n_rows (n_ctx - 1 - first_row)
//  32  u32 flags (bit 0: BOS substituted)
//  36  i32 bos_id
//
// The reader is bounded and fail-closed: every count is checked against limits and the file
// size must equal the size the header implies; token ids must lie in the vocabulary.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/atomic_file.h"
#include "base/mapped_file.h"
#include "base/status.h"

namespace synapse {

struct ReferenceLogitsHeader {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t n_chunks = 0;
  uint32_t first_row = 0;
  uint32_t n_rows = 0;
  bool add_bos = false;
  int32_t bos_id = -1;
  uint64_t n_tokens = 0;
};

inline constexpr uint64_t kReferenceLogitsHeaderBytes = 64;

// Writes a reference file chunk by chunk through an AtomicFile: a crash or an error leaves no
// partial file under the final name.
class ReferenceLogitsWriter {
 public:
  static Result<ReferenceLogitsWriter> create(const std::string& path,
                                              const ReferenceLogitsHeader& header,
                                              std::span<const int32_t> tokens);
  // The logits of one chunk's scored rows (n_rows * n_vocab floats), chunks in order.
  Status append_chunk(std::span<const float> logits);
  // Fails unless every chunk was appended.
  Status commit();

 private:
  ReferenceLogitsWriter(AtomicFile file, ReferenceLogitsHeader header)
      : file_(std::move(file)), header_(header) {}
  AtomicFile file_;
  ReferenceLogitsHeader header_;
  uint32_t chunks_written_ = 0;
};

class ReferenceLogitsFile {
 public:
  static Result<ReferenceLogitsFile> open(const std::string& path);
  // Validates `bytes` as a reference file (the fuzz target's entry point). The span must
  // outlive the returned view.
  static Result<ReferenceLogitsFile> parse(std::span<const uint8_t> bytes, const std::string& path);

  const ReferenceLogitsHeader& header() const { return header_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  // The logits of chunk `chunk`'s scored rows.
  std::span<const float> chunk_logits(size_t chunk) const;

 private:
  ReferenceLogitsFile() = default;
  MappedFile file_;
  ReferenceLogitsHeader header_;
  std::span<const int32_t> tokens_;
  const float* logits_ = nullptr;
};

}  // namespace synapse
