// SPDX-License-Identifier: Apache-2.0
// Token masks: which tokens of the vocabulary may come next in a Matcher's state.
//
// The walk goes down the vocabulary trie driving the lexer byte by byte; a subtree is skipped
// as soon as its prefix is impossible, and taken whole when all its bytes leave the lexer
// where it is (most of a JSON string). Three caches make a mask cheap:
//   - what a lexer state allows without ending its lexeme does not depend on the parser: it
//     is computed once per state, and once per vocabulary for states many grammars share
//     (state_mask_cache.h); states inside a long counted repeat share their walk down to
//     kShallowDepth bytes through a widened state (Lexer::horizon_state);
//   - where a lexeme ends inside a token, the tokens that then stay inside the next lexeme
//     depend only on where (the group of trie subtrees) and on the next lexer state: cached
//     per (group, state);
//   - where several lexemes are alive whose ends never compete on a token (the keys an object
//     may take next, each a quoted literal), what they allow together is what each allows
//     alone: the state's masks are merged from the single-lexeme states' cached ones, so the
//     many subsets of keys an unordered object passes through cost no walk each;
//   - a state P & ~F, where F is a few strings (an additional key: any string but the declared
//     keys), allows what P allows except along F's paths in the trie: its masks are P's
//     (shared by every grammar) corrected on those few nodes, not a walk of its own;
//   - so a mask is a copy of a bitmask, one parser scan per group (undone after), and the
//     cached token lists of what follows.
//
// One TokenMasker per compiled grammar and vocabulary, shared by every sequence that uses the
// grammar; not thread-safe (the lexer and the caches fill in lazily): callers serialise.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"
#include "constrain/lexer.h"
#include "constrain/matcher.h"
#include "constrain/token_trie.h"

namespace synapse::constrain {

class TokenMasker {
 public:
  TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

  Matcher new_matcher() const { return Matcher(grammar_, lexer_); }
  const TokenTrie& trie() const { return *trie_; }
  size_t mask_words() const { return (trie_->vocab_size() + 63) / 64; }

  // Sets bit t of `mask` (mask_words() words) when token t may come next: its bytes keep the
  // text a prefix of the language, or it ends generation and the text is complete.
  void compute_mask(Matcher& matcher, std::span<uint64_t> mask);
  // Feeds one token. False (state unchanged) when the mask would not allow it. An end token
  // leaves the matcher as it is.
  bool consume_token(Matcher& matcher, TokenId token);

  size_t cached_states() const { return cache_.size(); }
  // How lexer states got their masks: walked here, found in the vocabulary's shared cache,
  // or walked and not shareable (the walk met a transition the lexer decided inexactly).
  struct Stats {
    uint64_t walked = 0;
    uint64_t shared_hits = 0;
    uint64_t unshareable = 0;
    uint64_t widened = 0;  // walked only below kShallowDepth, the rest from a widened state
    uint64_t merged = 0;   // merged from the states of their lexemes alone
    uint64_t plain_text_subtrees = 0;  // trie subtrees taken whole as plain text
    uint64_t peeled = 0;               // P & ~F states corrected from P's masks
  };
  const Stats& stats() const { return stats_; }
  static constexpr size_t kMaxCachedStates = 2048;
  static constexpr size_t kMaxCachedAfters = 1 << 16;
  // Subtrees at least this large (in nodes) are checked for being allowed whole.
  static constexpr uint32_t kWholeSubtreeMin = 8;
  // Trie depth (bytes) up to which states inside long counted repeats share their walk. Each
  // such state still walks the branches deeper than this itself; at 16 those walks were most
  // of MaskBench's masks over 300 µs (TBM p99 309 µs), at 32 they are few (p99 197 µs).
  static constexpr uint32_t kShallowDepth = 32;

 private:
  // Trie nodes whose byte ends the lexeme of lexer state `before` (accepting there): what they
  // allow depends on the parser, which must scan that lexeme first.
  struct Group {
    uint32_t id;
    LexerStateId before;
    std::vector<uint32_t> nodes;
  };
  // What a lexer state allows on its own: the tokens that stay inside the current lexeme, and
  // the groups of subtrees where it ends.
  struct StateMasks {
    std::shared_ptr<const SharedStateMasks> shared;  // `within` (maybe shared by grammars)
    std::vector<Group> groups;
  };
  // After a group's lexeme is scanned and the next one starts in lexer state `start`: the
  // tokens that end inside that next lexeme, and the groups where it ends in turn.
  struct AfterMasks {
    std::vector<TokenId> tokens;
    std::vector<Group> groups;
  };

  const StateMasks& state_masks(LexerStateId state);
  // The masks of `state` merged from those of each alive lexeme alone; nullopt when some token
  // ends one lexeme where another is still alive (or accepts too), where greedy lexing makes
  // the state more than the sum of its parts.
  std::optional<StateMasks> merged_masks(LexerStateId state);
  // Every node of `group` (walked from the state of `lexeme` alone) ends only `lexeme` when
  // walked from `state`: nothing else accepts there or goes on with the node's byte.
  bool ends_alone(LexerStateId state, LexemeId lexeme, const Group& group);
  // The lexer state reached from `state` by the bytes of the trie path to `node`.
  LexerStateId after_path(LexerStateId state, uint32_t node);
  // The masks of a state whose one lexeme has P & ~F left, F a few strings: P's masks, with the
  // tokens and lexeme ends on F's trie paths decided again from `state`; nullopt for others.
  std::optional<StateMasks> peeled_masks(LexerStateId state);
  static constexpr size_t kMaxPeeledStrings = 64;
  static constexpr size_t kMaxPeeledLength = 256;
  const StateMasks& walked_masks(LexerStateId state, uint32_t deepest,
                                 std::unordered_map<LexerStateId, StateMasks>& cache);
  const std::vector<uint32_t>& root_children();
  // The key of `state` in the vocabulary's shared cache.
  StateMaskCache::Key shared_key(LexerStateId state) const;
  const AfterMasks& after_masks(const Group& group, LexerStateId start);
  // Walks the subtrees of `roots` (whose bytes follow lexer state `parent`) with the lexer
  // alone: `on_token` for every token that fits, boundaries collected into groups.
  // Which trie depths a walk covers: nodes no deeper than `deepest`, and only those deeper than
  // `record_below` give tokens and boundaries (shallower ones are passed through).
  static constexpr uint32_t kAllDepths = UINT16_MAX;
  struct WalkDepths {
    uint32_t deepest = kAllDepths;
    uint32_t record_below = 0;
  };
  template <typename OnToken>
  std::vector<Group> walk_lexer(std::span<const uint32_t> roots, LexerStateId parent,
                                OnToken on_token, const WalkDepths& depths);
  void apply_group(const Group& group, EarleyParser& parser, std::span<uint64_t> mask);
  // The bytes on which lexer state `state` goes back to itself (inside a JSON string: nearly
  // all), so a trie subtree made only of those bytes is allowed whole without walking it.
  const std::array<uint64_t, 4>& self_loops(LexerStateId state);
  LexerStateId start_after_scan(EarleyParser& parser);
  // `state` stays alive, exactly decided, on every PlainText text read from its boundary (the
  // body of a JSON string): a trie subtree of such text below it is allowed whole. Explores
  // pairs (PlainText state, lexer state); false past kMaxPlainTextPairs of them (a counted
  // repeat never comes back to the same state).
  bool keeps_plain_text_alive(LexerStateId state);
  static constexpr size_t kMaxPlainTextPairs = 64;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::shared_ptr<Lexer> lexer_;
  std::unordered_map<LexerStateId, StateMasks> cache_;
  // Walks of widened states to kShallowDepth only (see state_masks).
  std::unordered_map<LexerStateId, StateMasks> shallow_cache_;
  std::vector<uint32_t> root_children_;
  std::unordered_map<uint64_t, AfterMasks> after_cache_;  // key: group id << 32 | start
  std::vector<LexerStateId> walk_states_;                 // scratch of walk_lexer, per trie depth
  bool walk_inexact_ = false;  // walk_lexer met a state with an inexact transition
  std::vector<std::array<uint64_t, 4>> self_loops_;  // per lexer state, once known
  std::vector<uint8_t> self_loops_known_;
  std::vector<int8_t> plain_text_alive_;  // per lexer state: -1 unknown, else the answer
  Stats stats_;
};

// The mask of the next step: the tokens the matcher's state allows, with `end_tokens` (the
// request's end-of-generation ids) allowed exactly when the text may end there. `mask` is
// resized to mask_words() words.
void compute_step_mask(TokenMasker& masker, Matcher& matcher, std::span<const int32_t> end_tokens,
                       std::vector<uint64_t>& mask);
// `logits` with -infinity for every token `mask` refuses (tokens past the mask are refused).
void apply_mask(std::span<const uint64_t> mask, std::span<const float> logits,
                std::vector<float>& out);
// Both: the logits a sampler draws from under the grammar.
void mask_logits(TokenMasker& masker, Matcher& matcher, std::span<const int32_t> end_tokens,
                 std::span<const float> logits, std::vector<uint64_t>& mask,
                 std::vector<float>& out);

}  // namespace synapse::constrain
