// SPDX-License-Identifier: Apache-2.0
// Remembers the ids of words already encoded. Natural text repeats its words, so most pieces
// are a hash lookup instead of a merge loop; this is what makes encoding a corpus fast. Bounded:
// when full it starts over, so adversarial input costs memory proportional to the cap only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/vocab.h"

namespace synapse::tokenizer {

class WordCache {
 public:
  static constexpr size_t kMaxEntries = 1 << 16;
  static constexpr size_t kMaxWordBytes = 128;  // longer words are rare; not worth keeping

  std::optional<std::span<const TokenId>> find(std::string_view word) const {
    const auto it = index_.find(word);
    if (it == index_.end()) return std::nullopt;
    return std::span<const TokenId>(ids_.data() + it->second.first, it->second.second);
  }

  void insert(std::string_view word, std::span<const TokenId> ids) {
    if (word.size() > kMaxWordBytes) return;
    if (index_.size() >= kMaxEntries) clear();
    index_.try_emplace(std::string(word), static_cast<uint32_t>(ids_.size()),
                       static_cast<uint32_t>(ids.size()));
    ids_.insert(ids_.end(), ids.begin(), ids.end());
  }

  // Appends the ids of `word` to `out`: the cached ones, or those `compute(word, out)` appends
  // (which are then cached).
  template <typename Compute>
  void append(std::string_view word, std::vector<TokenId>& out, Compute&& compute) {
    if (const auto cached = find(word)) {
      out.insert(out.end(), cached->begin(), cached->end());
      return;
    }
    const size_t first = out.size();
    compute(word, out);
    insert(word, std::span<const TokenId>(out).subspan(first));
  }

  void clear() {
    index_.clear();
    ids_.clear();
  }

 private:
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>>
      index_;  // word -> (offset, count) in ids_
  std::vector<TokenId> ids_;
};

}  // namespace synapse::tokenizer
