// SPDX-License-Identifier: Apache-2.0
// Turns one row of logits into a token: llama.cpp's chain (logit bias, repetition penalties,
// top-k, top-p, min-p, temperature, a seeded draw), reproducible bit for bit on every platform.
//
// Design goals: same seed and inputs -> same tokens everywhere (own PRNG and exp, ties broken by
// the lower token id); no allocation per call (all scratch is sized at creation); one pass over
// the vocabulary for the default chain (top-k by a bounded heap, no full sort). Non-goals:
// grammars, DRY, XTC, mirostat, typical-p (not requested yet; they would slot into the chain).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "sample/portable_random.h"
#include "sample/sampling_params.h"

namespace synapse {

// One token of the final distribution: its logit after bias and penalties (before temperature)
// and its probability after every filter and the temperature.
struct TokenProb {
  int32_t token = 0;
  float logit = 0.0f;
  double prob = 0.0;
};

class Sampler {
 public:
  // Validates `params` (see validate()) and that logit_bias ids are below n_vocab; draws the seed
  // if params.seed is SamplingParams::kRandomSeed.
  static Result<Sampler> create(const SamplingParams& params, int32_t n_vocab);

  // Picks the next token from `logits` (n_vocab values). Errors: kInvalidArgument (wrong size,
  // field "logits"; every token banned, field "logit_bias"), kNumericFault (a NaN or +infinity
  // logit, field "logits"). A logit of -infinity is not an error: it bans that token, as a
  // grammar mask or a -infinity logit_bias would. Consumes one random number unless greedy.
  Result<int32_t> sample(std::span<const float> logits);

  // Adds a token to the penalty window (generated tokens, and prompt tokens if they should be
  // penalized too, as llama.cpp does). Precondition: 0 <= token < n_vocab (ids come from the
  // tokenizer or from sample(), never unchecked from a request).
  void accept(int32_t token);
  void accept(std::span<const int32_t> tokens);

  // Speculative decoding's verification of one drafted token (Leviathan et al. 2023, with the
  // draft a point mass: drafters here propose one token, not a distribution): greedy accepts the
  // draft when it is the argmax and otherwise answers the argmax; sampled accepts it with the
  // probability p(draft) of this row's final distribution, and on rejection draws from that
  // distribution with the draft removed. Either way the token returned has exactly the
  // distribution sample() would draw from, so drafts change speed, never what is generated.
  // Same errors as sample(); consumes one or two random numbers unless greedy.
  struct DraftVerdict {
    int32_t token = 0;
    bool accepted = false;  // token == draft
  };
  Result<DraftVerdict> sample_against_draft(std::span<const float> logits, int32_t draft);

  // The distribution sample() would draw from, in draw order (sorted by logit, ties by id, when
  // top-k or top-p sorted it; by id otherwise); greedy gives the argmax with probability 1. The
  // span is valid until the next call. Does not consume a random number.
  Result<std::span<const TokenProb>> distribution(std::span<const float> logits);

  // Forgets accepted tokens and restarts the random stream from seed().
  void reset();

  uint64_t seed() const { return seed_; }  // the drawn seed when the request asked for a random one
  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  struct Candidate {
    float logit;
    int32_t token;
  };
  struct Occurrence {
    int32_t token;
    int32_t count;
  };

  Sampler(const SamplingParams& params, int32_t n_vocab, uint64_t seed);

  bool greedy() const { return params_.temperature <= 0.0f; }
  bool penalties_on() const;
  // Fills overrides_ with the logits that bias or penalties change, sorted by token id.
  Status compute_overrides(std::span<const float> logits);
  Result<int32_t> argmax(std::span<const float> logits);
  // Fills dist_ with the final candidates and unnormalized weights; returns their sum.
  Result<double> build_distribution(std::span<const float> logits);
  Status gather_top_k(std::span<const float> logits, size_t k);
  Status gather_all(std::span<const float> logits);
  void apply_top_p_sorted();
  void apply_top_p_unsorted();
  void count_add(int32_t token);
  void count_remove(int32_t token);

  SamplingParams params_;
  int32_t n_vocab_ = 0;
  uint64_t seed_ = 0;
  PortableRandom random_;

  std::vector<LogitBias> bias_;  // sorted by token, duplicates summed

  // Penalty window: the last penalty_last_n accepted tokens (a ring; unused when -1 = all), and
  // the count of each token in it. slot_ maps a token to its index in occurrences_ (-1: absent);
  // it is only allocated when penalties are on.
  std::vector<int32_t> window_;
  size_t window_head_ = 0;
  size_t window_size_ = 0;
  std::vector<int32_t> slot_;
  std::vector<Occurrence> occurrences_;

  // Scratch reused by every call.
  std::vector<Candidate> overrides_;
  std::vector<Candidate> candidates_;
  std::vector<double> weights_;  // parallel to candidates_
  std::vector<TokenProb> dist_;
  bool sorted_ = false;  // candidates_ are in (logit desc, id asc) order
};

}  // namespace synapse
