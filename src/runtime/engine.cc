// SPDX-License-Identifier: Apache-2.0
#include "runtime/engine.h"

#include <algorithm>

namespace synapse {
namespace {

size_t rows_wanted(LogitsWanted wanted, size_t n_tokens, size_t from = 0) {
  return wanted == LogitsWanted::kAll ? n_tokens - from : wanted == LogitsWanted::kNone ? 0 : 1;
}

// Whether token `index` of an input of `n_tokens` is a row `wanted` asks for (kAll: from token
// `from` on).
bool row_wanted(LogitsWanted wanted, size_t index, size_t n_tokens, size_t from = 0) {
  switch (wanted) {
    case LogitsWanted::kAll:
      return index >= from;
    case LogitsWanted::kLast:
      return index + 1 == n_tokens;
    case LogitsWanted::kFirst:
      return index == 0;
    case LogitsWanted::kNone:
      break;
  }
  return false;
}

// Room for n elements, at least twice the old capacity when it has to grow: steps vary in rows
// (a prefill chunk beside the sequences decoding), and a vector refilled by insert() grows to
// each new largest size exactly, allocating step after step.
template <typename T>
void reserve_growing(std::vector<T>& v, size_t n) {
  if (v.capacity() < n) v.reserve(std::max(n, 2 * v.capacity()));
}

}  // namespace

Engine::Engine(DecoderModel& model, const EngineConfig& config)
    : model_(model),
      config_(config),
      cache_(model.backend(), model.kv_format(config.kv.page_tokens), model.n_layer(),
             model.n_ctx(), config.kv) {
  if (config_.max_batch_tokens == 0) config_.max_batch_tokens = 1;
}

Status Engine::step(std::span<const StepInput> inputs, StepOutput& out) {
  const size_t n_vocab = model_.n_vocab();
  const size_t n_logits = model_.n_logits();
  const bool whole = model_.bidirectional();
  // Validate all inputs before changing anything.
  size_t out_rows = 0, hidden_rows = 0, all_tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const StepInput& in = inputs[i];
    if (!cache_.contains(in.sequence)) {
      return Status(ErrorCode::kNotFound, "no sequence " + std::to_string(in.sequence),
                    ErrorWhere{.field = "sequence"});
    }
    for (size_t j = 0; j < i; ++j) {
      if (inputs[j].sequence == in.sequence) {
        return Status(ErrorCode::kInvalidArgument,
                      "sequence " + std::to_string(in.sequence) + " appears twice in one step",
                      ErrorWhere{.field = "sequence"});
      }
    }
    for (int32_t t : in.tokens) {
      if (t < 0 || static_cast<uint32_t>(t) >= n_vocab) {
        return Status(ErrorCode::kInvalidArgument,
                      "token id " + std::to_string(t) + " is outside the vocabulary of " +
                          std::to_string(n_vocab),
                      ErrorWhere{.field = "tokens"});
      }
    }
    if (cache_.n_tokens(in.sequence) + in.tokens.size() > cache_.n_ctx()) {
      return Status(ErrorCode::kLimitExceeded,
                    "context overflow: sequence " + std::to_string(in.sequence) + " would hold " +
                        std::to_string(cache_.n_tokens(in.sequence) + in.tokens.size()) +
                        " tokens, the context is " + std::to_string(cache_.n_ctx()),
                    ErrorWhere{.field = "context"});
    }
    if (whole && cache_.n_tokens(in.sequence) != 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "a bidirectional model runs each sequence whole: sequence " +
                        std::to_string(in.sequence) + " already holds tokens",
                    ErrorWhere{.field = "sequence"});
    }
    if (!in.token_types.empty() && in.token_types.size() != in.tokens.size()) {
      return Status(ErrorCode::kInvalidArgument, "token types and tokens differ in length",
                    ErrorWhere{.field = "token_types"});
    }
    if (in.logits != LogitsWanted::kNone && n_logits == 0) {
      return Status(ErrorCode::kUnsupported,
                    "the model has no output head: it answers hidden states (embeddings) only",
                    ErrorWhere{.field = "logits"});
    }
    if ((in.logits != LogitsWanted::kNone || in.hidden != LogitsWanted::kNone) &&
        in.tokens.empty()) {
      return Status(ErrorCode::kInvalidArgument, "outputs asked for an input without tokens",
                    ErrorWhere{.field = "tokens"});
    }
    if (in.logits == LogitsWanted::kAll && in.logits_from >= in.tokens.size()) {
      return Status(ErrorCode::kInvalidArgument,
                    "logits asked from token " + std::to_string(in.logits_from) + " of " +
                        std::to_string(in.tokens.size()),
                    ErrorWhere{.field = "logits_from"});
    }
    out_rows += rows_wanted(in.logits, in.tokens.size(), in.logits_from);
    all_tokens += in.tokens.size();
    hidden_rows += rows_wanted(in.hidden, in.tokens.size());
  }
  for (const StepInput& in : inputs) {
    SYN_RETURN_IF_ERROR(cache_.reserve(in.sequence, in.tokens.size()));
  }
  out.n_logits = n_logits;
  out.logits.resize(out_rows * n_logits);
  out.first_row.assign(inputs.size(), 0);
  out.n_rows.assign(inputs.size(), 0);
  out.n_embd = model_.n_embd();
  out.hidden.resize(hidden_rows * out.n_embd);
  out.hidden_first_row.assign(inputs.size(), 0);
  out.hidden_n_rows.assign(inputs.size(), 0);

  // Forward passes of up to max_batch_tokens rows, filled in input order: the logits rows come
  // out in input order, token order within an input.
  const size_t pass_rows = std::min(all_tokens, config_.max_batch_tokens);
  reserve_growing(tokens_, pass_rows);
  reserve_growing(token_types_, pass_rows);
  reserve_growing(output_rows_, pass_rows);
  reserve_growing(hidden_rows_, pass_rows);
  size_t input = 0, offset = 0, written_rows = 0, written_hidden = 0;
  while (input < inputs.size()) {
    tokens_.clear();
    sequences_.clear();
    sequence_ids_.clear();
    output_rows_.clear();
    hidden_rows_.clear();
    token_types_.clear();
    bool any_types = false;
    const size_t first_written = written_rows;
    const size_t first_hidden = written_hidden;
    while (input < inputs.size() && tokens_.size() < config_.max_batch_tokens) {
      const StepInput& in = inputs[input];
      if (offset == 0) {
        out.first_row[input] = written_rows;
        out.hidden_first_row[input] = written_hidden;
      }
      size_t take = std::min(in.tokens.size() - offset, config_.max_batch_tokens - tokens_.size());
      if (whole && take < in.tokens.size()) {
        // Unsplit: into the next pass, or alone in one of its own length.
        if (!tokens_.empty()) break;
        take = in.tokens.size();
      }
      if (take > 0) {
        const size_t first_row = tokens_.size();
        const std::span<const int32_t> piece = in.tokens.subspan(offset, take);
        tokens_.insert(tokens_.end(), piece.begin(), piece.end());
        if (!in.token_types.empty()) {
          // Earlier inputs of this pass without types are type 0.
          if (!any_types) token_types_.assign(first_row, 0);
          any_types = true;
          const std::span<const int32_t> types = in.token_types.subspan(offset, take);
          token_types_.insert(token_types_.end(), types.begin(), types.end());
        } else if (any_types) {
          token_types_.insert(token_types_.end(), take, 0);
        }
        sequences_.push_back(ForwardSequence{first_row, take, cache_.n_tokens(in.sequence),
                                             cache_.layer_views(in.sequence)});
        sequence_ids_.push_back(in.sequence);
        for (size_t r = 0; r < take; ++r) {
          if (row_wanted(in.logits, offset + r, in.tokens.size(), in.logits_from)) {
            output_rows_.push_back(static_cast<uint32_t>(first_row + r));
            ++out.n_rows[input];
            ++written_rows;
          }
          if (row_wanted(in.hidden, offset + r, in.tokens.size())) {
            hidden_rows_.push_back(static_cast<uint32_t>(first_row + r));
            ++out.hidden_n_rows[input];
            ++written_hidden;
          }
        }
      }
      offset += take;
      if (offset == in.tokens.size()) {
        ++input;
        offset = 0;
      }
    }
    if (tokens_.empty()) continue;
    ForwardBatch batch;
    batch.tokens = tokens_;
    batch.sequences = sequences_;
    batch.output_rows = output_rows_;
    batch.logits = out.logits.data() + first_written * n_logits;
    batch.token_types = token_types_;
    batch.page_tokens = cache_.page_tokens();
    batch.hidden_rows = hidden_rows_;
    batch.hidden = out.hidden.data() + first_hidden * out.n_embd;
    SYN_RETURN_IF_ERROR(model_.forward(batch));
    for (size_t s = 0; s < sequences_.size(); ++s) {
      cache_.commit(sequence_ids_[s], sequences_[s].n_rows);
    }
  }
  return ok_status();
}

Result<std::span<const float>> Session::append(std::span<const int32_t> tokens) {
  const StepInput in{seq_, tokens, LogitsWanted::kLast};
  SYN_RETURN_IF_ERROR(engine_.step(std::span(&in, 1), out_));
  return out_.last(0);
}

Result<std::span<const float>> Session::append_all(std::span<const int32_t> tokens) {
  const StepInput in{seq_, tokens, LogitsWanted::kAll};
  SYN_RETURN_IF_ERROR(engine_.step(std::span(&in, 1), out_));
  return std::span<const float>(out_.logits);
}

int32_t greedy_token(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace synapse
