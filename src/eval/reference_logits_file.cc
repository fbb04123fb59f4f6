// SPDX-License-Identifier: Apache-2.0
#include "eval/reference_logits_file.h"

#include <array>
#include <bit>
#include <cstring>

#include "base/checked_math.h"
#include "base/hash.h"
#include "base/unaligned.h"

namespace synapse {
namespace {

static_assert(std::endian::native == std::endian::little, "the file is little-endian");

constexpr std::array<char, 8> kMagic = {'S', 'Y', 'N', 'L', 'O', 'G', 'I', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kFlagAddBos = 1;
// Limits: a vocabulary of 16M ids, a context of 4M tokens, 4G tokens of text.
constexpr uint32_t kMaxVocab = 1u << 24;
constexpr uint32_t kMaxContext = 1u << 22;
constexpr uint64_t kMaxTokens = 1ull << 32;

Status header_error(ErrorCode code, std::string message, const std::string& path, uint64_t offset) {
  ErrorWhere where;
  where.path = path;
  where.byte_offset = offset;
  return Status(code, std::move(message), std::move(where));
}

std::optional<uint64_t> tokens_bytes(uint64_t n_tokens) {
  const auto raw = checked_mul(n_tokens, sizeof(int32_t));
  if (!raw) return std::nullopt;
  return checked_align_up(*raw, 64);
}

std::optional<uint64_t> logits_floats(const ReferenceLogitsHeader& h) {
  const auto rows = checked_mul(h.n_chunks, h.n_rows);
  if (!rows) return std::nullopt;
  return checked_mul(*rows, h.n_vocab);
}

// Internal consistency of a header, shared by writer and reader.
Status check_header(const ReferenceLogitsHeader& h, const std::string& path) {
  auto bad = [&](std::string message, uint64_t offset) {
    return header_error(ErrorCode::kBadValue, std::move(message), path, offset);
  };
  if (h.n_vocab == 0 || h.n_vocab > kMaxVocab) {
    return bad("n_vocab " + std::to_string(h.n_vocab) + " outside [1, 2^24]", 12);
  }
  if (h.n_ctx < 4 || h.n_ctx > kMaxContext) {
    return bad("n_ctx " + std::to_string(h.n_ctx) + " outside [4, 2^22]", 16);
  }
  if (h.n_chunks == 0) return bad("no chunks", 20);
  if (h.first_row != h.n_ctx / 2 || h.n_rows != h.n_ctx - 1 - h.first_row) {
    return bad(
        "scored rows do not follow the perplexity protocol for n_ctx " + std::to_string(h.n_ctx),
        24);
  }
  if (h.add_bos && (h.bos_id < 0 || static_cast<uint32_t>(h.bos_id) >= h.n_vocab)) {
    return bad("BOS id " + std::to_string(h.bos_id) + " outside the vocabulary", 36);
  }
  if (h.n_tokens > kMaxTokens) return bad("more than 2^32 tokens", 40);
  const auto needed = checked_mul(h.n_chunks, h.n_ctx);
  if (!needed || *needed > h.n_tokens) {
    return bad(std::to_string(h.n_chunks) + " chunks of " + std::to_string(h.n_ctx) +
                   " tokens need more than the " + std::to_string(h.n_tokens) + " tokens stored",
               20);
  }
  return ok_status();
}

}  // namespace

Result<ReferenceLogitsWriter> ReferenceLogitsWriter::create(const std::string& path,
                                                            const ReferenceLogitsHeader& header,
                                                            std::span<const int32_t> tokens) {
  SYN_RETURN_IF_ERROR(check_header(header, path));
  if (tokens.size() != header.n_tokens) {
    return Status(ErrorCode::kInvalidArgument, "token count differs from the header");
  }
  SYN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  std::array<uint8_t, kReferenceLogitsHeaderBytes> head{};
  std::memcpy(head.data(), kMagic.data(), kMagic.size());
  store_unaligned<uint32_t>(head.data() + 8, kVersion);
  store_unaligned<uint32_t>(head.data() + 12, header.n_vocab);
  store_unaligned<uint32_t>(head.data() + 16, header.n_ctx);
  store_unaligned<uint32_t>(head.data() + 20, header.n_chunks);
  store_unaligned<uint32_t>(head.data() + 24, header.first_row);
  store_unaligned<uint32_t>(head.data() + 28, header.n_rows);
  store_unaligned<uint32_t>(head.data() + 32, header.add_bos ? kFlagAddBos : 0);
  store_unaligned<int32_t>(head.data() + 36, header.bos_id);
  store_unaligned<uint64_t>(head.data() + 40, header.n_tokens);
  const std::span<const uint8_t> token_bytes(reinterpret_cast<const uint8_t*>(tokens.data()),
                                             tokens.size_bytes());
  const Hash128 digest = xxh3_128(token_bytes);
  store_unaligned<uint64_t>(head.data() + 48, digest.high);
  store_unaligned<uint64_t>(head.data() + 56, digest.low);
  SYN_RETURN_IF_ERROR(file.write(head));
  SYN_RETURN_IF_ERROR(file.write(token_bytes));
  SYN_RETURN_IF_ERROR(file.write_zeros(*tokens_bytes(tokens.size()) - token_bytes.size()));
  return ReferenceLogitsWriter(std::move(file), header);
}

Status ReferenceLogitsWriter::append_chunk(std::span<const float> logits) {
  if (chunks_written_ >= header_.n_chunks) {
    return Status(ErrorCode::kInvalidArgument, "more chunks than the header declares");
  }
  if (logits.size() != static_cast<size_t>(header_.n_rows) * header_.n_vocab) {
    return Status(ErrorCode::kInvalidArgument, "chunk logits have the wrong size");
  }
  SYN_RETURN_IF_ERROR(
      file_.write({reinterpret_cast<const uint8_t*>(logits.data()), logits.size_bytes()}));
  ++chunks_written_;
  return ok_status();
}

Status ReferenceLogitsWriter::commit() {
  if (chunks_written_ != header_.n_chunks) {
    return Status(ErrorCode::kInvalidArgument, std::to_string(chunks_written_) + " of " +
                                                   std::to_string(header_.n_chunks) +
                                                   " chunks written");
  }
  return file_.commit();
}

Result<ReferenceLogitsFile> ReferenceLogitsFile::open(const std::string& path) {
  SYN_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  SYN_ASSIGN_OR_RETURN(ReferenceLogitsFile file, parse(mapped.bytes(), path));
  mapped.advise(AccessHint::kSequential);
  file.file_ = std::move(mapped);
  return file;
}

Result<ReferenceLogitsFile> ReferenceLogitsFile::parse(std::span<const uint8_t> bytes,
                                                       const std::string& path) {
  if (bytes.size() < kReferenceLogitsHeaderBytes) {
    return header_error(ErrorCode::kFileTruncated,
                        "a reference-logits file has a 64-byte header; this one has " +
                            std::to_string(bytes.size()) + " bytes",
                        path, 0);
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kMagic.data(), kMagic.size()) != 0) {
    return header_error(ErrorCode::kBadMagic, "not a Synapse reference-logits file", path, 0);
  }
  if (const uint32_t version = load_unaligned<uint32_t>(p + 8); version != kVersion) {
    return header_error(
        ErrorCode::kUnsupportedVersion,
        "reference-logits version " + std::to_string(version) + " (this build reads 1)", path, 8);
  }
  ReferenceLogitsHeader h;
  h.n_vocab = load_unaligned<uint32_t>(p + 12);
  h.n_ctx = load_unaligned<uint32_t>(p + 16);
  h.n_chunks = load_unaligned<uint32_t>(p + 20);
  h.first_row = load_unaligned<uint32_t>(p + 24);
  h.n_rows = load_unaligned<uint32_t>(p + 28);
  const uint32_t flags = load_unaligned<uint32_t>(p + 32);
  if ((flags & ~kFlagAddBos) != 0) {
    return header_error(ErrorCode::kBadValue, "unknown flags", path, 32);
  }
  h.add_bos = (flags & kFlagAddBos) != 0;
  h.bos_id = load_unaligned<int32_t>(p + 36);
  h.n_tokens = load_unaligned<uint64_t>(p + 40);
  SYN_RETURN_IF_ERROR(check_header(h, path));

  const uint64_t token_area = *tokens_bytes(h.n_tokens);  // n_tokens <= 2^32: no overflow
  const auto floats = logits_floats(h);
  const auto logit_bytes = floats ? checked_mul(*floats, sizeof(float)) : std::nullopt;
  const auto total = logit_bytes
                         ? checked_add(kReferenceLogitsHeaderBytes + token_area, *logit_bytes)
                         : std::nullopt;
  if (!total || *total != bytes.size()) {
    return header_error(ErrorCode::kSizeMismatch,
                        "the header implies " +
                            (total ? std::to_string(*total) + " bytes" : std::string("overflow")) +
                            "; the file has " + std::to_string(bytes.size()),
                        path, 0);
  }
  const auto* tokens = reinterpret_cast<const int32_t*>(p + kReferenceLogitsHeaderBytes);
  const std::span<const int32_t> token_span(tokens, h.n_tokens);
  const Hash128 digest = xxh3_128({p + kReferenceLogitsHeaderBytes, h.n_tokens * 4});
  if (digest.high != load_unaligned<uint64_t>(p + 48) ||
      digest.low != load_unaligned<uint64_t>(p + 56)) {
    return header_error(ErrorCode::kChecksumMismatch, "token digest does not match the tokens",
                        path, 48);
  }
  for (uint64_t i = 0; i < h.n_tokens; ++i) {
    if (token_span[i] < 0 || static_cast<uint32_t>(token_span[i]) >= h.n_vocab) {
      return header_error(ErrorCode::kBadValue,
                          "token " + std::to_string(i) + " has id " +
                              std::to_string(token_span[i]) + " outside the vocabulary",
                          path, kReferenceLogitsHeaderBytes + i * 4);
    }
  }
  ReferenceLogitsFile file;
  file.header_ = h;
  file.tokens_ = token_span;
  file.logits_ = reinterpret_cast<const float*>(p + kReferenceLogitsHeaderBytes + token_area);
  return file;
}

std::span<const float> ReferenceLogitsFile::chunk_logits(size_t chunk) const {
  SYN_CHECK(chunk < header_.n_chunks, "chunk index out of range");
  const size_t floats = static_cast<size_t>(header_.n_rows) * header_.n_vocab;
  return {logits_ + chunk * floats, floats};
}

}  // namespace synapse
