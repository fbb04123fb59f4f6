// SPDX-License-Identifier: Apache-2.0
// Masks of lexer states that many grammars share — inside a JSON string, a number, a date —
// kept once per vocabulary instead of once per grammar. A state is keyed by the structural
// hashes of its regexes (equal in every RegexBuilder for equal terms), so a schema compiled
// today reuses what yesterday's schema computed for the same kind of string. Only walks in
// which every transition was decided exactly are shared (always, for regexes without
// intersection or complement; for those, when the lexer's bounded emptiness check finished):
// such a mask is the language's, so it is at least as strict as what this grammar's own lexer
// would compute, and never refuses a token that can still lead to a match. Thread-safe; bounded.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace synapse::constrain {

struct SharedMaskGroup {
  uint32_t id = 0;          // unique in the process (the after-lexeme cache's key)
  std::string before_path;  // the trie path to the group's lexer state, from the masked state
  std::vector<uint32_t> nodes;
};

// The tokens that stay inside the current lexeme: a bitmask over the vocabulary while being
// built; then, when they are few (a key's literal allows a handful), a list of them instead, so
// a cached state costs a few bytes rather than 16 KiB and masks merged from several states set
// bits instead of reading whole bitmasks.
struct SharedStateMasks {
  std::vector<uint64_t> within;  // dense form; empty once compact() made the list
  std::vector<uint32_t> few;     // sparse form
  bool sparse = false;
  std::vector<SharedMaskGroup> groups;
  static constexpr size_t kFew = 256;

  void compact();  // the list instead of the bitmask, when there are at most kFew tokens
  // The tokens into `mask` (mask_words long): replacing it, or added to it.
  void copy_to(std::span<uint64_t> mask) const;
  void or_into(std::span<uint64_t> mask) const;
  size_t bytes() const;  // memory held, roughly
};

class StateMaskCache {
 public:
  using Key = std::vector<uint64_t>;  // sorted structural hashes of the state's regexes

  std::shared_ptr<const SharedStateMasks> find(const Key& key) const;
  void insert(const Key& key, std::shared_ptr<const SharedStateMasks> masks);
  size_t size() const;

  // Past this much memory the cache starts over. A dense entry holds a whole-vocabulary bitmask
  // (16 KiB for 128k tokens), a sparse one a few bytes. On MaskBench, when every entry was
  // dense, 1,024 entries gave TBM avg 38.6 µs, 4,096 gave 35-36 and 8,192 gave 34.9: real
  // schemas keep reaching new kinds of state.
  static constexpr size_t kMaxBytes = size_t{64} << 20;

 private:
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  mutable std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const SharedStateMasks>, KeyHash> entries_;
  size_t bytes_ = 0;
};

}  // namespace synapse::constrain
