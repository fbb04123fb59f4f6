// SPDX-License-Identifier: Apache-2.0
#include "sample/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace synapse {
namespace {

constexpr float kMaxFinite = std::numeric_limits<float>::max();
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The one order of candidates everywhere: higher logit first, ties to the lower token id.
template <typename C>
bool better(const C& a, const C& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// NaN or +infinity; -infinity is a ban, not a fault.
bool is_fault(float x) { return std::isnan(x) || x > kMaxFinite; }

Status non_finite_error(std::span<const float> logits) {
  for (size_t i = 0; i < logits.size(); ++i) {
    if (is_fault(logits[i])) {
      return Status(ErrorCode::kNumericFault,
                    "logit of token " + std::to_string(i) + " is " + std::to_string(logits[i]))
          .with_field("logits");
    }
  }
  return Status(ErrorCode::kInternal, "non-finite logit reported but not found");
}

Status all_banned_error() {
  return Status(ErrorCode::kInvalidArgument,
                "every token has logit -infinity after logit_bias and penalties")
      .with_field("logit_bias");
}

Result<uint64_t> draw_seed() {
  // std::random_device may throw when the system has no entropy source; no exception leaves
  // this layer.
  try {
    std::random_device device;
    for (;;) {
      const uint64_t seed = (static_cast<uint64_t>(device()) << 32) | device();
      if (seed != SamplingParams::kRandomSeed) return seed;
    }
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnavailable, std::string("cannot draw a random seed: ") + e.what())
        .with_field("seed");
  }
}

}  // namespace

Result<Sampler> Sampler::create(const SamplingParams& params, int32_t n_vocab) {
  SYN_RETURN_IF_ERROR(validate(params));
  if (n_vocab <= 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "vocabulary size must be > 0, got " + std::to_string(n_vocab))
        .with_field("n_vocab");
  }
  for (const LogitBias& b : params.logit_bias) {
    if (b.token >= n_vocab) {
      return Status(ErrorCode::kInvalidArgument, "logit_bias token id " + std::to_string(b.token) +
                                                     " is outside the vocabulary (size " +
                                                     std::to_string(n_vocab) + ")")
          .with_field("logit_bias");
    }
  }
  uint64_t seed = params.seed;
  if (seed == SamplingParams::kRandomSeed) {
    SYN_ASSIGN_OR_RETURN(seed, draw_seed());
  }
  return Sampler(params, n_vocab, seed);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab, uint64_t seed)
    : params_(params), n_vocab_(n_vocab), seed_(seed), random_(seed), bias_(params.logit_bias) {
  // Stable: biases on one token apply in the order given, as llama.cpp adds them.
  std::stable_sort(bias_.begin(), bias_.end(),
                   [](const LogitBias& a, const LogitBias& b) { return a.token < b.token; });
  const auto vocab = static_cast<size_t>(n_vocab);
  size_t max_occurrences = 0;
  if (penalties_on()) {
    slot_.assign(vocab, -1);
    if (params_.penalty_last_n > 0) {
      window_.resize(static_cast<size_t>(params_.penalty_last_n));
      max_occurrences = std::min(window_.size(), vocab);
    } else {
      max_occurrences = std::min<size_t>(1024, vocab);  // grows with the context (rarely)
    }
    occurrences_.reserve(max_occurrences);
  }
  overrides_.reserve(bias_.size() + max_occurrences);
  if (greedy()) {
    dist_.reserve(1);
    return;
  }
  const bool top_k_on = params_.top_k > 0 && params_.top_k < n_vocab;
  const size_t n_candidates = top_k_on ? static_cast<size_t>(params_.top_k) : vocab;
  candidates_.reserve(n_candidates);
  weights_.reserve(n_candidates);
  dist_.reserve(n_candidates);
}

bool Sampler::penalties_on() const {
  return params_.penalty_last_n != 0 &&
         (params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
          params_.presence_penalty != 0.0f);
}

void Sampler::accept(int32_t token) {
  SYN_CHECK(token >= 0 && token < n_vocab_, "accepted token id outside the vocabulary");
  if (!penalties_on()) return;
  if (!window_.empty()) {
    if (window_size_ == window_.size()) {
      count_remove(window_[window_head_]);  // the oldest token leaves the window
      window_[window_head_] = token;
      window_head_ = (window_head_ + 1) % window_.size();
    } else {
      window_[(window_head_ + window_size_) % window_.size()] = token;
      ++window_size_;
    }
  }
  count_add(token);
}

void Sampler::accept(std::span<const int32_t> tokens) {
  for (int32_t token : tokens) accept(token);
}

void Sampler::count_add(int32_t token) {
  int32_t& slot = slot_[static_cast<size_t>(token)];
  if (slot < 0) {
    slot = static_cast<int32_t>(occurrences_.size());
    occurrences_.push_back({token, 1});
  } else {
    ++occurrences_[static_cast<size_t>(slot)].count;
  }
}

void Sampler::count_remove(int32_t token) {
  int32_t& slot = slot_[static_cast<size_t>(token)];
  Occurrence& occurrence = occurrences_[static_cast<size_t>(slot)];
  if (--occurrence.count > 0) return;
  // Swap-remove, keeping slot_ pointing at each occurrence.
  occurrence = occurrences_.back();
  slot_[static_cast<size_t>(occurrence.token)] = slot;
  occurrences_.pop_back();
  slot = -1;
}

void Sampler::reset() {
  random_ = PortableRandom(seed_);
  for (const Occurrence& o : occurrences_) slot_[static_cast<size_t>(o.token)] = -1;
  occurrences_.clear();
  window_head_ = 0;
  window_size_ = 0;
}

Status Sampler::compute_overrides(std::span<const float> logits) {
  if (logits.size() != static_cast<size_t>(n_vocab_)) {
    return Status(ErrorCode::kInvalidArgument, "expected " + std::to_string(n_vocab_) +
                                                   " logits, got " + std::to_string(logits.size()))
        .with_field("logits");
  }
  overrides_.clear();
  for (const LogitBias& b : bias_) {
    if (overrides_.empty() || overrides_.back().token != b.token) {
      overrides_.push_back({0.0f, b.token});
    }
  }
  if (!occurrences_.empty()) {
    for (const Occurrence& o : occurrences_) overrides_.push_back({0.0f, o.token});
    const auto by_token = [](const Candidate& a, const Candidate& b) { return a.token < b.token; };
    std::sort(overrides_.begin(), overrides_.end(), by_token);
    overrides_.erase(
        std::unique(overrides_.begin(), overrides_.end(),
                    [](const Candidate& a, const Candidate& b) { return a.token == b.token; }),
        overrides_.end());
  }
  const float repeat = params_.repeat_penalty;
  const float frequency = params_.frequency_penalty;
  const float presence = params_.presence_penalty;
  auto bias_it = bias_.begin();
  for (Candidate& o : overrides_) {
    const auto t = static_cast<size_t>(o.token);
    float v = logits[t];
    if (is_fault(v)) return non_finite_error(logits);
    // llama.cpp's order: logit bias, then penalties.
    while (bias_it != bias_.end() && bias_it->token < o.token) ++bias_it;
    for (; bias_it != bias_.end() && bias_it->token == o.token; ++bias_it) v += bias_it->bias;
    if (!slot_.empty() && slot_[t] >= 0) {
      const int32_t count = occurrences_[static_cast<size_t>(slot_[t])].count;
      // As llama.cpp's penalties sampler: the repeat penalty pushes the logit toward "less
      // likely" whatever its sign; then the OpenAI-style frequency and presence penalties.
      if (v <= 0.0f) {
        v *= repeat;
      } else {
        v /= repeat;
      }
      v -= static_cast<float>(count) * frequency + presence;
    }
    if (is_fault(v)) {
      return Status(ErrorCode::kNumericFault, "logit of token " + std::to_string(t) +
                                                  " is not finite after logit_bias and penalties")
          .with_field("logit_bias");
    }
    o.logit = v;
  }
  return ok_status();
}

// The scans below walk the vocabulary in id order: the raw logits between overridden tokens, and
// each overridden token's new logit in its place. Visiting ids in increasing order makes
// "strictly greater" the same as the (logit desc, id asc) order, so ties go to the lower id
// without comparing ids in the loop.

namespace {

constexpr size_t kLanes = 8;
constexpr size_t kBlock = 16 * kLanes;

// The maximum of kBlock logits and whether any is NaN or +infinity, written lane-wise so that the
// compiler vectorizes it (maxps and compares on baseline x86-64); NaN never wins `x > m`.
struct BlockSummary {
  float max;
  bool fault;
};
BlockSummary summarize_block(const float* x) {
  std::array<float, kLanes> m;
  std::array<int, kLanes> fault{};
  for (size_t k = 0; k < kLanes; ++k) m[k] = kNegInf;
  // Two loops, not one: fused, GCC 12 keeps the accumulators in memory.
  for (size_t j = 0; j < kBlock; j += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      const float v = x[j + k];
      m[k] = v > m[k] ? v : m[k];
    }
  }
  for (size_t j = 0; j < kBlock; j += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      const float v = x[j + k];
      fault[k] |= static_cast<int>(std::isnan(v)) | static_cast<int>(v > kMaxFinite);
    }
  }
  BlockSummary s{m[0], fault[0] != 0};
  for (size_t k = 1; k < kLanes; ++k) {
    s.max = m[k] > s.max ? m[k] : s.max;
    s.fault |= fault[k] != 0;
  }
  return s;
}

// Calls offer(logit, token) for every token, in id order, whose logit (overridden or raw) is
// greater than `threshold` at the time it is visited; `offer` may raise the threshold. Blocks
// whose maximum does not beat the threshold are skipped after one vectorized pass. Returns
// whether a raw logit was NaN or +infinity.
template <typename Candidate, typename Offer>
bool scan_above(std::span<const float> logits, std::span<const Candidate> overrides,
                const float& threshold, Offer offer) {
  bool fault = false;
  const auto scan = [&](size_t begin, size_t end) {
    size_t i = begin;
    for (; i + kBlock <= end; i += kBlock) {
      const BlockSummary s = summarize_block(logits.data() + i);
      fault |= s.fault;
      if (!(s.max > threshold)) continue;
      for (size_t j = i; j < i + kBlock; ++j) {
        if (logits[j] > threshold) offer(logits[j], static_cast<int32_t>(j));
      }
    }
    for (; i < end; ++i) {
      const float x = logits[i];
      fault |= is_fault(x);
      if (x > threshold) offer(x, static_cast<int32_t>(i));
    }
  };
  size_t next = 0;
  for (const Candidate& o : overrides) {
    scan(next, static_cast<size_t>(o.token));
    if (o.logit > threshold) offer(o.logit, o.token);
    next = static_cast<size_t>(o.token) + 1;
  }
  scan(next, logits.size());
  return fault;
}

}  // namespace

Result<int32_t> Sampler::argmax(std::span<const float> logits) {
  float best = kNegInf;
  int32_t best_token = -1;
  const bool fault =
      scan_above(logits, std::span<const Candidate>(overrides_), best, [&](float x, int32_t token) {
        best = x;
        best_token = token;
      });
  if (fault) return non_finite_error(logits);
  if (best_token < 0) return all_banned_error();
  return best_token;
}

Status Sampler::gather_top_k(std::span<const float> logits, size_t k) {
  candidates_.clear();
  // A heap of the k best so far with the worst on top; below k entries the threshold is -inf,
  // which also keeps banned tokens out.
  float threshold = kNegInf;
  const auto worst_first = [](const Candidate& a, const Candidate& b) { return better(a, b); };
  const bool fault = scan_above(
      logits, std::span<const Candidate>(overrides_), threshold, [&](float x, int32_t token) {
        if (candidates_.size() < k) {
          candidates_.push_back({x, token});
          std::push_heap(candidates_.begin(), candidates_.end(), worst_first);
          if (candidates_.size() == k) threshold = candidates_.front().logit;
        } else {
          std::pop_heap(candidates_.begin(), candidates_.end(), worst_first);
          candidates_.back() = {x, token};
          std::push_heap(candidates_.begin(), candidates_.end(), worst_first);
          threshold = candidates_.front().logit;
        }
      });
  if (fault) return non_finite_error(logits);
  std::sort_heap(candidates_.begin(), candidates_.end(), worst_first);  // best first
  sorted_ = true;
  return ok_status();
}

Status Sampler::gather_all(std::span<const float> logits) {
  candidates_.clear();
  bool fault = false;
  size_t next = 0;
  const auto scan = [&](size_t end) {
    for (size_t i = next; i < end; ++i) {
      const float x = logits[i];
      fault |= std::isnan(x) | (x > kMaxFinite);
      if (x > kNegInf) candidates_.push_back({x, static_cast<int32_t>(i)});
    }
  };
  for (const Candidate& o : overrides_) {
    scan(static_cast<size_t>(o.token));
    if (o.logit > kNegInf) candidates_.push_back(o);
    next = static_cast<size_t>(o.token) + 1;
  }
  scan(logits.size());
  if (fault) return non_finite_error(logits);
  sorted_ = false;
  return ok_status();
}

// top-p as llama.cpp: the probabilities are the softmax of the current candidates (temperature
// 1); keep the shortest prefix in descending order whose cumulative probability reaches top_p,
// at least one token. weights_ holds exp(logit - max) per candidate on entry; on exit
// candidates_ is that prefix, sorted, with weights_ in step.
void Sampler::apply_top_p_sorted() {
  double total = 0.0;
  for (double w : weights_) total += w;
  const auto p = static_cast<double>(params_.top_p);
  double cumulative = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += weights_[i] / total;
    if (cumulative >= p) {
      candidates_.resize(i + 1);
      weights_.resize(i + 1);
      return;
    }
  }
}

// The same without a full sort of the vocabulary: sort a prefix, and grow it only while the
// probability mass found so far is short of top_p.
void Sampler::apply_top_p_unsorted() {
  double total = 0.0;
  for (double w : weights_) total += w;
  const auto p = static_cast<double>(params_.top_p);
  const size_t n = candidates_.size();
  const auto best_first = [](const Candidate& a, const Candidate& b) { return better(a, b); };
  double cumulative = 0.0;
  size_t done = 0;
  size_t m = std::min<size_t>(n, 64);
  size_t keep = n;
  while (done < n) {
    // The first `done` positions stay as they are: the order is total, so the sorted prefix of
    // a longer partial sort begins with the shorter one.
    std::partial_sort(candidates_.begin() + static_cast<ptrdiff_t>(done),
                      candidates_.begin() + static_cast<ptrdiff_t>(m), candidates_.end(),
                      best_first);
    const double top = static_cast<double>(candidates_.front().logit);
    for (size_t i = done; i < m; ++i) {
      weights_[i] = portable_exp(static_cast<double>(candidates_[i].logit) - top);
      cumulative += weights_[i] / total;
      if (cumulative >= p) {
        keep = i + 1;
        break;
      }
    }
    if (keep < n) break;
    done = m;
    m = std::min(n, m * 8);
  }
  candidates_.resize(keep);
  weights_.resize(keep);
  sorted_ = true;
}

Result<double> Sampler::build_distribution(std::span<const float> logits) {
  SYN_RETURN_IF_ERROR(compute_overrides(logits));
  const bool top_k_on = params_.top_k > 0 && params_.top_k < n_vocab_;
  if (top_k_on) {
    SYN_RETURN_IF_ERROR(gather_top_k(logits, static_cast<size_t>(params_.top_k)));
  } else {
    SYN_RETURN_IF_ERROR(gather_all(logits));
  }
  if (candidates_.empty()) return all_banned_error();

  float max_logit = candidates_.front().logit;
  if (!sorted_) {
    for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  }
  const auto max_d = static_cast<double>(max_logit);
  const bool top_p_on = params_.top_p < 1.0f;
  const bool min_p_on = params_.min_p > 0.0f;
  weights_.resize(candidates_.size());
  if (top_p_on || min_p_on) {
    for (size_t i = 0; i < candidates_.size(); ++i) {
      weights_[i] = portable_exp(static_cast<double>(candidates_[i].logit) - max_d);
    }
  }
  if (top_p_on) {
    if (sorted_) {
      apply_top_p_sorted();
    } else {
      apply_top_p_unsorted();
    }
  }
  if (min_p_on) {
    // min-p: keep tokens whose probability is at least min_p times the top one's, i.e.
    // exp(logit - max) >= min_p (llama.cpp compares logits with max + log(min_p), the same set).
    const auto min_p = static_cast<double>(params_.min_p);
    size_t kept = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (weights_[i] >= min_p) {
        candidates_[kept] = candidates_[i];
        weights_[kept] = weights_[i];
        ++kept;
      }
    }
    candidates_.resize(kept);  // never empty: the top token has weight 1
    weights_.resize(kept);
  }

  // Temperature last, as in llama.cpp's default chain, then the weights to draw from.
  const auto temperature = static_cast<double>(params_.temperature);
  const bool reuse = (top_p_on || min_p_on) && params_.temperature == 1.0f;
  dist_.clear();
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const Candidate& c = candidates_[i];
    const double w =
        reuse ? weights_[i] : portable_exp((static_cast<double>(c.logit) - max_d) / temperature);
    dist_.push_back({c.token, c.logit, w});
    total += w;
  }
  return total;
}

Result<int32_t> Sampler::sample(std::span<const float> logits) {
  if (greedy()) {
    SYN_RETURN_IF_ERROR(compute_overrides(logits));
    return argmax(logits);
  }
  SYN_ASSIGN_OR_RETURN(const double total, build_distribution(logits));
  // Inverse-CDF draw over the weights in dist_'s order; total >= 1 (the top token weighs 1).
  const double target = random_.next_unit() * total;
  double cumulative = 0.0;
  for (const TokenProb& d : dist_) {
    cumulative += d.prob;
    if (target < cumulative) return d.token;
  }
  // Rounding left target at or past the sum: the last token that has any weight.
  for (auto it = dist_.rbegin(); it != dist_.rend(); ++it) {
    if (it->prob > 0.0) return it->token;
  }
  return dist_.front().token;
}

Result<Sampler::DraftVerdict> Sampler::sample_against_draft(std::span<const float> logits,
                                                            int32_t draft) {
  if (greedy()) {
    SYN_ASSIGN_OR_RETURN(const int32_t token, sample(logits));
    return DraftVerdict{token, token == draft};
  }
  SYN_ASSIGN_OR_RETURN(const double total, build_distribution(logits));
  double draft_weight = 0.0;
  for (const TokenProb& d : dist_) {
    if (d.token == draft) draft_weight = d.prob;
  }
  if (random_.next_unit() * total < draft_weight) return DraftVerdict{draft, true};
  // Rejected: the residual max(0, p - q) with q the point mass on the draft is p without it.
  const double rest = total - draft_weight;
  const double target = random_.next_unit() * rest;
  double cumulative = 0.0;
  int32_t last_weighted = -1;
  for (const TokenProb& d : dist_) {
    if (d.token == draft || d.prob <= 0.0) continue;
    cumulative += d.prob;
    last_weighted = d.token;
    if (target < cumulative) return DraftVerdict{d.token, false};
  }
  // Rounding left target at or past the sum (or the draft held every bit of weight, which the
  // draw above then accepts unless rounding): the last other token with weight, else the draft.
  if (last_weighted >= 0) return DraftVerdict{last_weighted, false};
  return DraftVerdict{draft, true};
}

Result<std::span<const TokenProb>> Sampler::distribution(std::span<const float> logits) {
  if (greedy()) {
    SYN_RETURN_IF_ERROR(compute_overrides(logits));
    SYN_ASSIGN_OR_RETURN(const int32_t token, argmax(logits));
    float logit = logits[static_cast<size_t>(token)];
    for (const Candidate& o : overrides_) {
      if (o.token == token) logit = o.logit;
    }
    dist_.clear();
    dist_.push_back({token, logit, 1.0});
    return std::span<const TokenProb>(dist_);
  }
  SYN_ASSIGN_OR_RETURN(const double total, build_distribution(logits));
  for (TokenProb& d : dist_) d.prob /= total;
  return std::span<const TokenProb>(dist_);
}

}  // namespace synapse
