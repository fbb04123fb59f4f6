// SPDX-License-Identifier: Apache-2.0
// The Service's half that turns a step's rows into output: masking by the request's grammar,
// sampling (with fast-forward through forced tokens), verifying speculative drafts, emitting
// tokens, text, pooled embeddings and scores into each request's events. Loop thread only.
#include <algorithm>
#include <bit>

#include "base/numeric_check.h"
#include "serve/service_state.h"

namespace synapse::serve {

// The logits with every token the grammar refuses at -infinity; the sampler treats those as
// banned, so the draw (and its seeded random stream) is the one over the allowed tokens.
std::span<const float> Service::constrain_logits(Job& job, std::span<const float> logits) {
  constrain::TokenMasker& masker = *job.request.constraint;
  if (!job.matcher) job.matcher.emplace(masker.new_matcher());
  if (!job.mask_ready) {
    constrain::compute_step_mask(masker, *job.matcher, job.request.eog_tokens, job.mask);
  }
  job.mask_ready = false;
  // Nothing allowed: the text is complete and the request has no end-of-generation token to
  // say so (or, with intersections in the grammar, a dead end). The caller ends the request.
  if (std::all_of(job.mask.begin(), job.mask.end(), [](uint64_t w) { return w == 0; })) return {};
  constrain::apply_mask(job.mask, logits, job.masked_logits);
  return job.masked_logits;
}

std::span<const float> Service::choice_row(Job& job, std::span<const float> logits,
                                           GenerationEvent& event) {
  const std::span<const float> row =
      job.request.constraint ? constrain_logits(job, logits) : logits;
  if (!row.empty()) return row;
  if (job.matcher->accepts_end()) {
    finish(job, event, FinishReason::kStop);
  } else {
    finish(job, event, FinishReason::kError,
           Status(ErrorCode::kInternal, "the grammar allows no token after this text"));
  }
  return {};
}

bool Service::take_choice(Job& job, std::span<const float> logits, int32_t token,
                          GenerationEvent& event, std::optional<Logprobs>& logprobs) {
  if (job.matcher && !job.request.constraint->consume_token(*job.matcher, token)) {
    const std::vector<int32_t>& eog = job.request.eog_tokens;
    if (std::find(eog.begin(), eog.end(), token) == eog.end()) {
      finish(job, event, FinishReason::kError,
             Status(ErrorCode::kInternal, "the sampler drew a token the grammar refuses"));
      return false;
    }
  }
  if (job.request.logprobs) {
    Result<Logprobs> lp = compute_logprobs(logits, token, job.request.top_logprobs);
    if (!lp.ok()) {
      finish(job, event, FinishReason::kError, lp.status());
      return false;
    }
    logprobs = *lp;
  }
  return true;
}

void Service::sample_and_emit(Job& job, std::span<const float> logits) {
  LoopState& s = *state_;
  GenerationEvent event;
  event.step = s.step;
  const std::span<const float> row = choice_row(job, logits, event);
  if (row.empty()) return;
  // Fast-forward: a token the grammar forces is taken without sampling. The mask that says so
  // was computed during this step's forward pass; only after a forced token are the next masks
  // computed here, each in place of a forward pass.
  const bool fast_forward = job.request.constraint && config_.fast_forward && !job.request.logprobs;
  std::optional<int32_t> forced = fast_forward ? only_allowed_token(job) : std::nullopt;
  int32_t token = 0;
  if (forced) {
    token = *forced;
  } else {
    Result<int32_t> sampled = job.sampler.sample(row);
    if (!sampled.ok()) return finish(job, event, FinishReason::kError, sampled.status());
    token = *sampled;
  }
  std::optional<Logprobs> logprobs;
  if (!take_choice(job, logits, token, event, logprobs)) return;
  if (!emit_token(job, token, logprobs, event)) return;
  // The tokens forced after a forced one follow at once; the next step feeds them all.
  for (size_t n = 1; forced && n < ServiceConfig::kMaxForcedPerStep; ++n) {
    constrain::compute_step_mask(*job.request.constraint, *job.matcher, job.request.eog_tokens,
                                 job.mask);
    job.mask_ready = true;  // if nothing is forced, the next step samples from this mask
    forced = only_allowed_token(job);
    if (!forced) break;
    job.mask_ready = false;
    if (!job.request.constraint->consume_token(*job.matcher, *forced)) {
      return finish(job, event, FinishReason::kError,
                    Status(ErrorCode::kInternal, "the grammar refuses the token it forced"));
    }
    if (!emit_token(job, *forced, std::nullopt, event)) return;
  }
  job.handle->push(std::move(event));
}

bool Service::propose_drafts(Job& job, size_t step_tokens) {
  job.drafts.clear();
  if (job.context.empty() || job.request.embedding) return false;
  // Room in the step, in the context (after the pending tokens) and in max_tokens (the drafts
  // and the token after them).
  const size_t kv = job.prompt_done + job.fed + job.pending.size();
  const size_t generated = job.generated.size();
  const auto max_tokens = static_cast<size_t>(job.request.max_tokens);
  if (step_tokens >= config_.max_step_tokens || kv >= limits_.n_ctx ||
      generated + 1 >= max_tokens) {
    return false;
  }
  const size_t room = std::min({config_.draft_max, config_.max_step_tokens - step_tokens,
                                limits_.n_ctx - kv, max_tokens - generated - 1});
  Drafter& drafter = job.draft_model ? *job.draft_model : state_->lookup;
  if (Status s = drafter.propose(job.context, room, job.drafts); !s.ok()) return false;
  return !job.drafts.empty();
}

// The rows of the last chosen token and of each draft: tokens are chosen in order, each draft
// checked by the rejection rule (Sampler::sample_against_draft keeps the distribution) against its
// row, masked first when the request is constrained, until a choice differs from the draft; the
// KV keeps the request's tokens only.
void Service::verify_and_emit(Job& job, size_t input) {
  LoopState& s = *state_;
  const StepOutput& out = s.out;
  GenerationEvent event;
  event.step = s.step;
  const size_t n_drafts = job.drafts.size();
  for (size_t r = 0; r <= n_drafts; ++r) {
    const std::span<const float> logits = out.row(out.first_row[input] + r);
    const std::span<const float> row = choice_row(job, logits, event);
    if (row.empty()) return;
    Sampler::DraftVerdict verdict;
    if (r < n_drafts) {
      Result<Sampler::DraftVerdict> v = job.sampler.sample_against_draft(row, job.drafts[r]);
      if (!v.ok()) return finish(job, event, FinishReason::kError, v.status());
      verdict = *v;
      ++job.draft_tokens;
      job.draft_tokens_accepted += verdict.accepted ? 1 : 0;
      metrics_.add_draft_tokens(1, verdict.accepted ? 1 : 0);
    } else {
      Result<int32_t> sampled = job.sampler.sample(row);
      if (!sampled.ok()) return finish(job, event, FinishReason::kError, sampled.status());
      verdict.token = *sampled;
    }
    std::optional<Logprobs> logprobs;
    if (!take_choice(job, logits, verdict.token, event, logprobs)) return;
    if (!emit_token(job, verdict.token, logprobs, event, verdict.accepted)) return;
    if (!verdict.accepted) break;
  }
  s.engine.truncate(job.sequence, job.prompt_done + job.fed);
  job.handle->push(std::move(event));
}

std::optional<int32_t> Service::only_allowed_token(const Job& job) const {
  std::optional<int32_t> only;
  for (size_t w = 0; w < job.mask.size(); ++w) {
    for (uint64_t bits = job.mask[w]; bits != 0; bits &= bits - 1) {
      if (only) return std::nullopt;  // two or more
      only = static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
    }
  }
  // An end-of-generation token alone is left to the sampler, which ends the request as usual.
  const std::vector<int32_t>& eog = job.request.eog_tokens;
  if (only && std::find(eog.begin(), eog.end(), *only) != eog.end()) return std::nullopt;
  return only;
}

bool Service::emit_token(Job& job, int32_t token, std::optional<Logprobs> logprobs,
                         GenerationEvent& event, bool in_kv) {
  LoopState& s = *state_;
  job.sampler.accept(token);
  job.generated.push_back(token);
  if (!job.context.empty()) job.context.push_back(token);
  if (in_kv) ++job.fed;  // an accepted draft: the step computed its KV
  metrics_.add_generated_tokens(1);
  const Clock::time_point now = Clock::now();
  if (job.generated.size() == 1) {
    job.first_token = now;
    metrics_.observe_time_to_first_token(
        job.request.request_class, std::chrono::duration<double>(now - job.submitted).count());
  } else {
    metrics_.observe_inter_token_latency(
        std::chrono::duration<double>(now - job.last_token).count());
  }
  job.last_token = now;

  const std::vector<int32_t>& eog = job.request.eog_tokens;
  if (std::find(eog.begin(), eog.end(), token) != eog.end()) {
    finish(job, event, FinishReason::kStop);
    return false;
  }
  event.tokens.push_back(GeneratedToken{token, logprobs});
  s.piece.clear();
  if (Status st = job.detok.push(token, s.piece); !st.ok()) {
    finish(job, event, FinishReason::kError, std::move(st));
    return false;
  }
  StopMatcher::Step r = job.stop.feed(s.piece);
  event.text.append(r.text);
  if (r.stopped) {
    finish(job, event, FinishReason::kStop);
    return false;
  }
  // The token goes after what the KV holds and what is already chosen for it (not the step's
  // unverified drafts, nor this token when it is an accepted draft: plain decoding would feed it
  // next step).
  const size_t before = job.prompt_done + job.fed - (in_kv ? 1 : 0) + job.pending.size();
  const bool full = before >= limits_.n_ctx;
  if (job.generated.size() >= static_cast<size_t>(job.request.max_tokens) || full) {
    s.piece.clear();
    job.detok.finish(s.piece);
    r = job.stop.feed(s.piece);
    event.text.append(r.text);
    if (r.stopped) {
      finish(job, event, FinishReason::kStop);
      return false;
    }
    event.text.append(job.stop.flush());
    finish(job, event, FinishReason::kLength);
    return false;
  }
  if (!in_kv) job.pending.push_back(token);
  return true;
}

void Service::pool_and_emit(Job& job, std::span<const float> hidden_rows) {
  const bool per_token = job.request.embedding->pooling == PoolingType::kNone;
  if (job.mean) {
    job.mean->add(hidden_rows.data(), hidden_rows.size() / n_embd_);
  } else if (per_token) {
    // Every row, chunk after chunk (at most the context's rows).
    job.kept_rows.insert(job.kept_rows.end(), hidden_rows.begin(), hidden_rows.end());
  } else if (!hidden_rows.empty()) {
    job.kept_rows.assign(hidden_rows.end() - n_embd_, hidden_rows.end());
  }
  if (job.prompt_done < job.request.prompt.size()) return;
  GenerationEvent event;
  event.step = state_->step;
  if (job.mean) {
    event.embedding.resize(n_embd_);
    job.mean->finish(event.embedding.data());
  } else {
    event.embedding = std::move(job.kept_rows);
  }
  if (job.request.embedding->normalize) {
    for (size_t row = 0; row + n_embd_ <= event.embedding.size(); row += n_embd_) {
      l2_normalize(event.embedding.data() + row, n_embd_);
    }
  }
  // As the sampler refuses a NaN logit: a broken vector is numeric_fault, never a 200 with nulls.
  if (Status finite = check_finite(event.embedding, "the embedding"); !finite.ok()) {
    event.embedding.clear();
    return finish(job, event, FinishReason::kError, std::move(finite));
  }
  finish(job, event, FinishReason::kStop);
}

void Service::emit_scores(Job& job, std::span<const float> scores) {
  GenerationEvent event;
  event.step = state_->step;
  event.embedding.assign(scores.begin(), scores.end());
  // As for vectors: a NaN score is numeric_fault, never a 200 with nulls (or a broken sort).
  if (Status finite = check_finite(event.embedding, "the rerank score"); !finite.ok()) {
    event.embedding.clear();
    return finish(job, event, FinishReason::kError, std::move(finite));
  }
  finish(job, event, FinishReason::kStop);
}

}  // namespace synapse::serve
