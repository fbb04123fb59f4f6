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
#include <string>
#include <unordered_map>
#include <vector>

namespace synapse::constrain {

struct SharedMaskGroup {
  uint32_t id = 0;          // unique in the process (the after-lexeme cache's key)
  std::string before_path;  // the trie path to the group's lexer state, from the masked state
  std::vector<uint32_t> nodes;
};

struct SharedStateMasks {
  std::vector<uint64_t> within;  // tokens that stay inside the current lexeme
  std::vector<SharedMaskGroup> groups;
  // The tokens of `within` when they are few (a key's literal allows a handful): masks merged
  // from several states set these bits instead of reading a whole bitmask.
  bool sparse = false;
  std::vector<uint32_t> few;
  static constexpr size_t kFew = 256;
  void find_few();  // fills `few` from `within` when there are at most kFew
};

class StateMaskCache {
 public:
  using Key = std::vector<uint64_t>;  // sorted structural hashes of the state's regexes

  std::shared_ptr<const SharedStateMasks> find(const Key& key) const;
  void insert(const Key& key, std::shared_ptr<const SharedStateMasks> masks);
  size_t size() const;

  // Entries hold a whole-vocabulary bitmask each (16 KiB for 128k tokens, so at most 64 MiB):
  // past this many the cache starts over. On MaskBench 1,024 entries gave TBM avg 38.6 µs,
  // 4,096 gave 35-36 and 8,192 gave 34.9: real schemas keep reaching new kinds of state.
  static constexpr size_t kMaxEntries = 4096;

 private:
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  mutable std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const SharedStateMasks>, KeyHash> entries_;
};

}  // namespace synapse::constrain
