// SPDX-License-Identifier: Apache-2.0
#include "constrain/token_masker.h"

#include <algorithm>
#include <atomic>
#include <limits>

namespace synapse::constrain {
namespace {

// Group ids key the after-lexeme caches; groups may come from the shared cache, so ids are
// unique in the process.
std::atomic<uint32_t> next_group_id{0};

}  // namespace
TokenMasker::TokenMasker(std::shared_ptr<const Grammar> grammar,
                         std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)),
      trie_(std::move(trie)),
      lexer_(std::make_shared<Lexer>(*grammar_)) {}

LexerStateId TokenMasker::start_after_scan(EarleyParser& parser) {
  uint32_t& slot = parser.user_slot();
  if (slot == UINT32_MAX) slot = lexer_->start_state(parser.expected());
  return slot;
}

template <typename OnToken>
std::vector<TokenMasker::Group> TokenMasker::walk_lexer(std::span<const uint32_t> roots,
                                                        LexerStateId parent, OnToken on_token,
                                                        const WalkDepths& depths) {
  const std::span<const TokenTrie::Node> nodes = trie_->nodes();
  walk_states_.resize(trie_->max_depth() + 2);
  std::vector<std::pair<LexerStateId, uint32_t>> boundaries;  // (before, node)
  for (const uint32_t root : roots) {
    const uint16_t base = nodes[root].depth;  // the root is level 1; level 0 is `parent`
    walk_states_[0] = parent;
    const uint32_t end = nodes[root].subtree_end;
    for (uint32_t i = root; i < end;) {
      const TokenTrie::Node& node = nodes[i];
      // Outside the depths asked for: deeper than `deepest`, or a branch that never gets
      // below `record_below`.
      if (node.depth > depths.deepest || trie_->height(i) <= depths.record_below) {
        i = node.subtree_end;
        continue;
      }
      const bool record = node.depth > depths.record_below;
      const size_t level = node.depth - base + 1u;
      const LexerStateId before = walk_states_[level - 1];
      const LexerStateId next = lexer_->next(before, node.byte);
      walk_inexact_ = walk_inexact_ || lexer_->inexact(before);
      if (next == kDeadLexerState) {
        if (record && lexer_->accepting(before)) boundaries.emplace_back(before, i);
        i = node.subtree_end;
        continue;
      }
      walk_states_[level] = next;
      // A large subtree whose bytes all loop back to `next` is allowed whole: no lexeme ends
      // in it and no state changes, so its tokens are taken as one run. So is one made only
      // of plain text when `next` keeps every plain text alive.
      if (record && node.subtree_end - i >= kWholeSubtreeMin &&
          trie_->height(i) <= depths.deepest) {
        const std::array<uint64_t, 4>& below = trie_->bytes_below(i);
        const std::array<uint64_t, 4>& loops = self_loops(next);
        bool whole = (below[0] & ~loops[0]) == 0 && (below[1] & ~loops[1]) == 0 &&
                     (below[2] & ~loops[2]) == 0 && (below[3] & ~loops[3]) == 0;
        if (!whole && (trie_->plain_text_below(i) & (1u << PlainText::kBoundary)) != 0 &&
            keeps_plain_text_alive(next)) {
          whole = true;
          ++stats_.plain_text_subtrees;
        }
        if (whole) {
          const uint32_t end_token = trie_->subtree_tokens_end(i);
          for (uint32_t k = node.tokens_begin; k < end_token; ++k) on_token(trie_->token_ids()[k]);
          i = node.subtree_end;
          continue;
        }
      }
      if (record) {
        for (uint32_t k = 0; k < node.tokens_count; ++k) {
          on_token(trie_->token_ids()[node.tokens_begin + k]);
        }
      }
      ++i;
    }
  }
  std::stable_sort(boundaries.begin(), boundaries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Group> groups;
  for (const auto& [before, node] : boundaries) {
    if (groups.empty() || groups.back().before != before) {
      groups.push_back(Group{next_group_id.fetch_add(1), before, {}});
    }
    groups.back().nodes.push_back(node);
  }
  return groups;
}

const std::array<uint64_t, 4>& TokenMasker::self_loops(LexerStateId state) {
  if (state >= self_loops_known_.size()) {
    self_loops_known_.resize(state + 1, 0);
    self_loops_.resize(state + 1);
  }
  if (self_loops_known_[state] == 0) {
    std::array<uint64_t, 4> loops{};
    for (unsigned b = 0; b < 256; ++b) {
      if (lexer_->next(state, static_cast<uint8_t>(b)) == state)
        loops[b >> 6] |= uint64_t{1} << (b & 63);
    }
    self_loops_[state] = loops;
    self_loops_known_[state] = 1;
  }
  return self_loops_[state];
}

bool TokenMasker::keeps_plain_text_alive(LexerStateId state) {
  if (state >= plain_text_alive_.size()) plain_text_alive_.resize(state + 1, -1);
  if (plain_text_alive_[state] >= 0) return plain_text_alive_[state] != 0;
  std::vector<std::pair<int, LexerStateId>> pairs = {{PlainText::kBoundary, state}};
  bool alive = true;
  for (size_t i = 0; i < pairs.size() && alive; ++i) {
    const auto [text, here] = pairs[i];
    for (unsigned b = 0; b < 256 && alive; ++b) {
      const int text_next = PlainText::next(text, static_cast<uint8_t>(b));
      if (text_next < 0) continue;
      const LexerStateId next = lexer_->next(here, static_cast<uint8_t>(b));
      // Dead, or alive only because the lexer could not decide: the shortcut would allow what
      // a walk might not.
      if (next == kDeadLexerState || lexer_->inexact(here)) {
        alive = false;
        break;
      }
      const std::pair<int, LexerStateId> pair{text_next, next};
      if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) {
        if (pairs.size() == kMaxPlainTextPairs) {
          alive = false;
          break;
        }
        pairs.push_back(pair);
      }
    }
  }
  plain_text_alive_[state] = alive ? 1 : 0;
  return alive;
}

StateMaskCache::Key TokenMasker::shared_key(LexerStateId state) const {
  StateMaskCache::Key key;
  std::vector<std::array<uint64_t, 2>> hashes;
  const RegexBuilder& rx = grammar_->regexes();
  for (const auto& [lexeme, regex] : lexer_->alive(state)) {
    hashes.push_back(rx.structural_hash(regex));
  }
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  for (const auto& h : hashes) key.insert(key.end(), h.begin(), h.end());
  return key;
}

// What `state` allows on its own, walked up to depth `deepest` of the trie (all of it when
// kAllDepths), through the vocabulary's shared cache when the state may be shared.
const TokenMasker::StateMasks& TokenMasker::walked_masks(
    LexerStateId state, uint32_t deepest, std::unordered_map<LexerStateId, StateMasks>& cache) {
  const auto found = cache.find(state);
  if (found != cache.end()) return found->second;
  StateMasks masks;
  StateMaskCache::Key key = shared_key(state);
  if (!key.empty()) {
    key.push_back(deepest);  // a walk to a given depth is a different entry
    if (auto shared = trie_->shared_masks().find(key)) {
      // Computed by another grammar: only the lexer states of its groups are this grammar's.
      for (const SharedMaskGroup& g : shared->groups) {
        LexerStateId before = state;
        for (const char c : g.before_path) before = lexer_->next(before, static_cast<uint8_t>(c));
        SYN_CHECK(lexer_->accepting(before), "shared mask does not fit this grammar's lexer");
        masks.groups.push_back(Group{g.id, before, g.nodes});
      }
      masks.shared = std::move(shared);
      ++stats_.shared_hits;
      return cache.emplace(state, std::move(masks)).first->second;
    }
  }
  ++stats_.walked;
  auto computed = std::make_shared<SharedStateMasks>();
  walk_inexact_ = false;
  computed->within.assign(mask_words(), 0);
  masks.groups = walk_lexer(
      root_children(), state,
      [&](TokenId t) {
        const auto bit = static_cast<size_t>(t);
        computed->within[bit >> 6] |= uint64_t{1} << (bit & 63);
      },
      WalkDepths{.deepest = deepest});
  // A walk that met an inexact transition is this grammar's approximation, not the language:
  // another grammar's lexer may decide those transitions differently.
  if (walk_inexact_) ++stats_.unshareable;
  computed->compact();
  if (!key.empty() && !walk_inexact_) {
    for (const Group& g : masks.groups) {
      computed->groups.push_back(
          SharedMaskGroup{g.id, trie_->path(trie_->parent(g.nodes.front())), g.nodes});
    }
    trie_->shared_masks().insert(key, computed);
  }
  masks.shared = std::move(computed);
  return cache.emplace(state, std::move(masks)).first->second;
}

const std::vector<uint32_t>& TokenMasker::root_children() {
  if (root_children_.empty()) {
    const std::span<const TokenTrie::Node> nodes = trie_->nodes();
    for (uint32_t i = 1; i < nodes.size(); i = nodes[i].subtree_end) root_children_.push_back(i);
  }
  return root_children_;
}

const TokenMasker::StateMasks& TokenMasker::state_masks(LexerStateId state) {
  const auto found = cache_.find(state);
  if (found != cache_.end()) return found->second;
  if (lexer_->alive(state).size() > 1) {
    if (std::optional<StateMasks> merged = merged_masks(state)) {
      ++stats_.merged;
      return cache_.emplace(state, std::move(*merged)).first->second;
    }
  }
  if (lexer_->alive(state).size() == 1) {
    if (std::optional<StateMasks> peeled = peeled_masks(state)) {
      ++stats_.peeled;
      return cache_.emplace(state, std::move(*peeled)).first->second;
    }
  }
  // A state inside a long counted repeat (a string with maxLength 500, 3 characters in) differs
  // from its neighbours only beyond kShallowDepth bytes: the walk to that depth is shared by all
  // of them (a widened state, Lexer::horizon_state), and only the few deeper tokens are walked
  // from the state itself.
  const LexerStateId widened = lexer_->horizon_state(state, kShallowDepth);
  if (widened == state) return walked_masks(state, kAllDepths, cache_);
  const StateMasks& shallow = walked_masks(widened, kShallowDepth, shallow_cache_);
  auto combined = std::make_shared<SharedStateMasks>();
  combined->within.assign(mask_words(), 0);
  shallow.shared->or_into(combined->within);
  StateMasks masks;
  masks.groups = shallow.groups;
  std::vector<Group> deep = walk_lexer(
      root_children(), state,
      [&](TokenId t) {
        const auto bit = static_cast<size_t>(t);
        combined->within[bit >> 6] |= uint64_t{1} << (bit & 63);
      },
      WalkDepths{.record_below = kShallowDepth});
  masks.groups.insert(masks.groups.end(), deep.begin(), deep.end());
  combined->compact();
  masks.shared = std::move(combined);
  ++stats_.widened;
  return cache_.emplace(state, std::move(masks)).first->second;
}

std::optional<TokenMasker::StateMasks> TokenMasker::merged_masks(LexerStateId state) {
  // A copy: the lexer's states move as parts are interned.
  const std::span<const std::pair<LexemeId, RegexId>> alive = lexer_->alive(state);
  const std::vector<std::pair<LexemeId, RegexId>> parts(alive.begin(), alive.end());
  auto merged = std::make_shared<SharedStateMasks>();
  merged->within.assign(mask_words(), 0);
  StateMasks out;
  for (const auto& [lexeme, regex] : parts) {
    const StateMasks& alone = state_masks(lexer_->part_state(lexeme, regex));
    for (const Group& group : alone.groups) {
      if (!ends_alone(state, lexeme, group)) return std::nullopt;
    }
    const SharedStateMasks& part = *alone.shared;
    part.or_into(merged->within);
    out.groups.insert(out.groups.end(), alone.groups.begin(), alone.groups.end());
  }
  merged->compact();
  out.shared = std::move(merged);
  return out;
}

std::optional<TokenMasker::StateMasks> TokenMasker::peeled_masks(LexerStateId state) {
  const auto [lexeme, regex] = lexer_->alive(state)[0];
  RegexBuilder& rx = grammar_->regexes();
  const auto split = rx.split_complement(regex);
  if (!split) return std::nullopt;
  const auto excluded = rx.finite_strings(split->second, kMaxPeeledStrings, kMaxPeeledLength);
  if (!excluded) return std::nullopt;
  const LexerStateId base_state = lexer_->part_state(lexeme, split->first);
  const StateMasks& base = state_masks(base_state);

  // The trie nodes on F's paths, in preorder. Everywhere else the state behaves as P does: a
  // text that is no prefix of F's strings has the same continuations in P & ~F as in P.
  const std::span<const TokenTrie::Node> nodes = trie_->nodes();
  const auto child = [&](uint32_t node, uint8_t byte) -> uint32_t {
    for (uint32_t c = node + 1; c < nodes[node].subtree_end; c = nodes[c].subtree_end) {
      if (nodes[c].byte == byte) return c;
    }
    return 0;
  };
  std::vector<uint32_t> on_paths;
  for (const std::string& f : *excluded) {
    uint32_t node = 0;
    for (const char c : f) {
      node = child(node, static_cast<uint8_t>(c));
      if (node == 0) break;
      on_paths.push_back(node);
    }
  }
  std::sort(on_paths.begin(), on_paths.end());
  on_paths.erase(std::unique(on_paths.begin(), on_paths.end()), on_paths.end());

  auto corrected = std::make_shared<SharedStateMasks>();
  corrected->within.assign(mask_words(), 0);
  base.shared->or_into(corrected->within);
  const auto set_token = [&](TokenId t, bool allowed) {
    const auto bit = static_cast<size_t>(t);
    if (allowed) {
      corrected->within[bit >> 6] |= uint64_t{1} << (bit & 63);
    } else {
      corrected->within[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
    }
  };
  // Lexeme ends to drop from P's groups (nodes), and ones P & ~F adds (before, node).
  std::vector<uint32_t> dropped;
  std::vector<std::pair<LexerStateId, uint32_t>> added;
  uint32_t dead_below = 0;  // subtree end of the last node found dead
  for (size_t k = 0; k < on_paths.size(); ++k) {
    const uint32_t n = on_paths[k];
    if (n < dead_below) continue;  // inside a dead subtree, already cleared
    const LexerStateId before = after_path(state, trie_->parent(n));
    const LexerStateId here = lexer_->next(before, nodes[n].byte);
    dropped.push_back(n);  // decided again below
    if (here == kDeadLexerState) {
      // Nothing below n is allowed; the lexeme may end before n's byte.
      for (uint32_t t = nodes[n].tokens_begin; t < trie_->subtree_tokens_end(n); ++t) {
        set_token(trie_->token_ids()[t], false);
      }
      for (uint32_t d = n + 1; d < nodes[n].subtree_end; ++d) dropped.push_back(d);
      if (lexer_->accepting(before)) added.emplace_back(before, n);
      dead_below = nodes[n].subtree_end;
      continue;
    }
    for (uint32_t t = 0; t < nodes[n].tokens_count; ++t) {
      set_token(trie_->token_ids()[nodes[n].tokens_begin + t], true);
    }
    // A string of F ends here: P may end its lexeme before each child's byte, P & ~F not.
    if (!lexer_->accepting(here)) {
      for (uint32_t c = n + 1; c < nodes[n].subtree_end; c = nodes[c].subtree_end) {
        if (!std::binary_search(on_paths.begin(), on_paths.end(), c)) dropped.push_back(c);
      }
    }
  }
  std::sort(dropped.begin(), dropped.end());
  StateMasks out;
  for (const Group& g : base.groups) {
    std::vector<uint32_t> kept;
    for (const uint32_t node : g.nodes) {
      if (!std::binary_search(dropped.begin(), dropped.end(), node)) kept.push_back(node);
    }
    if (kept.size() == g.nodes.size()) {
      out.groups.push_back(g);
    } else if (!kept.empty()) {
      // Other nodes than P's group: a new id, since the after-lexeme cache walks them by id.
      out.groups.push_back(Group{next_group_id.fetch_add(1), g.before, std::move(kept)});
    }
  }
  std::stable_sort(added.begin(), added.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t first_added = out.groups.size();
  for (const auto& [before, node] : added) {
    if (out.groups.size() == first_added || out.groups.back().before != before) {
      out.groups.push_back(Group{next_group_id.fetch_add(1), before, {}});
    }
    out.groups.back().nodes.push_back(node);
  }
  corrected->compact();
  out.shared = std::move(corrected);
  return out;
}

LexerStateId TokenMasker::after_path(LexerStateId state, uint32_t node) {
  for (const char c : trie_->path(node)) state = lexer_->next(state, static_cast<uint8_t>(c));
  return state;
}

bool TokenMasker::ends_alone(LexerStateId state, LexemeId lexeme, const Group& group) {
  const std::span<const TokenTrie::Node> nodes = trie_->nodes();
  uint32_t last_parent = UINT32_MAX;
  LexerStateId here = kDeadLexerState;
  for (const uint32_t node : group.nodes) {
    const uint32_t parent = trie_->parent(node);
    if (parent != last_parent) {
      last_parent = parent;
      here = after_path(state, parent);
      const std::span<const LexemeId> accepted = lexer_->accepted(here);
      if (accepted.size() != 1 || accepted[0] != lexeme) return false;
    }
    if (lexer_->next(here, nodes[node].byte) != kDeadLexerState) return false;
  }
  return true;
}

const TokenMasker::AfterMasks& TokenMasker::after_masks(const Group& group, LexerStateId start) {
  const uint64_t key = (uint64_t{group.id} << 32) | start;
  const auto found = after_cache_.find(key);
  if (found != after_cache_.end()) return found->second;
  AfterMasks after;
  after.groups = walk_lexer(
      group.nodes, start, [&](TokenId t) { after.tokens.push_back(t); }, WalkDepths{});
  return after_cache_.emplace(key, std::move(after)).first->second;
}

void TokenMasker::apply_group(const Group& group, EarleyParser& parser, std::span<uint64_t> mask) {
  // One scan serves every token that ends this lexeme at the same place.
  if (!parser.scan(lexer_->accepted(group.before))) return;
  const AfterMasks& after = after_masks(group, start_after_scan(parser));
  for (const TokenId t : after.tokens) {
    const auto bit = static_cast<size_t>(t);
    mask[bit >> 6] |= uint64_t{1} << (bit & 63);
  }
  for (const Group& nested : after.groups) apply_group(nested, parser, mask);
  parser.pop();
}

void TokenMasker::compute_mask(Matcher& matcher, std::span<uint64_t> mask) {
  SYN_CHECK(mask.size() >= mask_words(), "token mask shorter than the vocabulary");
  SYN_CHECK(&matcher.lexer() == lexer_.get(), "matcher not made by this masker");
  // Each state entry holds a whole-vocabulary bitmask (16 KiB for 128k tokens); a grammar
  // with very many lexer states starts over rather than growing without bound. Only here, so
  // no entry is dropped while a mask still reads it.
  if (cache_.size() + shallow_cache_.size() >= kMaxCachedStates ||
      after_cache_.size() >= kMaxCachedAfters) {
    cache_.clear();
    shallow_cache_.clear();
    after_cache_.clear();
  }
  const StateMasks& masks = state_masks(matcher.lexer_state());
  masks.shared->copy_to(mask.first(mask_words()));
  EarleyParser& parser = matcher.parser();
  for (const Group& group : masks.groups) apply_group(group, parser, mask);
  const bool may_end = matcher.accepts_end();
  for (const TokenId t : trie_->end_tokens()) {
    const auto bit = static_cast<size_t>(t);
    if (may_end) {
      mask[bit >> 6] |= uint64_t{1} << (bit & 63);
    } else {
      mask[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
    }
  }
}

bool TokenMasker::consume_token(Matcher& matcher, TokenId token) {
  if (token < 0 || static_cast<size_t>(token) >= trie_->vocab_size()) return false;
  if (std::binary_search(trie_->end_tokens().begin(), trie_->end_tokens().end(), token)) {
    return matcher.accepts_end();
  }
  if (!trie_->in_trie(token)) return false;
  return matcher.consume_bytes(trie_->token_bytes(token));
}

void compute_step_mask(TokenMasker& masker, Matcher& matcher, std::span<const int32_t> end_tokens,
                       std::vector<uint64_t>& mask) {
  mask.assign(masker.mask_words(), 0);
  masker.compute_mask(matcher, mask);
  const bool may_end = matcher.accepts_end();
  const size_t vocab = masker.trie().vocab_size();
  for (const int32_t t : end_tokens) {
    const auto bit = static_cast<size_t>(t);
    if (t < 0 || bit >= vocab) continue;
    if (may_end) {
      mask[bit >> 6] |= uint64_t{1} << (bit & 63);
    } else {
      mask[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
    }
  }
}

void apply_mask(std::span<const uint64_t> mask, std::span<const float> logits,
                std::vector<float>& out) {
  out.resize(logits.size());
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  for (size_t t = 0; t < logits.size(); ++t) {
    const bool allowed = (t >> 6) < mask.size() && ((mask[t >> 6] >> (t & 63)) & 1) != 0;
    out[t] = allowed ? logits[t] : kBanned;
  }
}

void mask_logits(TokenMasker& masker, Matcher& matcher, std::span<const int32_t> end_tokens,
                 std::span<const float> logits, std::vector<uint64_t>& mask,
                 std::vector<float>& out) {
  compute_step_mask(masker, matcher, end_tokens, mask);
  apply_mask(mask, logits, out);
}

}  // namespace synapse::constrain
