// SPDX-License-Identifier: Apache-2.0
#include "encoder/decoder_embedder.h"

#include <algorithm>

#include "encoder/pooling.h"

namespace synapse {
namespace {

std::string input_field(size_t index) { return "input[" + std::to_string(index) + "]"; }

size_t pages_for(size_t tokens, size_t page_tokens) {
  return (tokens + page_tokens - 1) / page_tokens;
}

}  // namespace

Result<PoolingType> decoder_embedding_pooling(PoolingType model_pooling,
                                              std::optional<PoolingType> asked, bool allow_none) {
  const PoolingType pooling = asked.value_or(model_pooling);
  switch (pooling) {
    case PoolingType::kLast:
    case PoolingType::kMean:
      return pooling;
    case PoolingType::kNone:
      if (allow_none) return pooling;
      return Status(ErrorCode::kInvalidArgument,
                    "pooling none gives one vector per token; this request needs one vector per "
                    "input (use last or mean)",
                    ErrorWhere{.field = "pooling"});
    case PoolingType::kCls:
    case PoolingType::kRank:
      break;
  }
  return Status(ErrorCode::kUnsupported,
                std::string(pooling_type_name(pooling)) +
                    " pooling needs a bidirectional encoder; this is a causal decoder (use last "
                    "or mean)",
                ErrorWhere{.field = "pooling"});
}

Result<bool> fit_decoder_input(std::vector<int32_t>& tokens, size_t index, uint32_t n_vocab,
                               size_t n_ctx, bool truncate, std::optional<int32_t> closing_token) {
  if (tokens.empty()) {
    return Status(ErrorCode::kInvalidArgument, "empty input",
                  ErrorWhere{.field = input_field(index)});
  }
  for (const int32_t id : tokens) {
    if (id < 0 || static_cast<uint32_t>(id) >= n_vocab) {
      return Status(ErrorCode::kInvalidArgument,
                    "token id " + std::to_string(id) + " outside the vocabulary",
                    ErrorWhere{.field = input_field(index)});
    }
  }
  if (tokens.size() <= n_ctx) return false;
  if (!truncate) {
    return Status(ErrorCode::kContextLengthExceeded,
                  std::to_string(tokens.size()) + " tokens; the model's context is " +
                      std::to_string(n_ctx) + " (ask for truncation to cut it)",
                  ErrorWhere{.field = input_field(index)});
  }
  // Keep the closing end-of-sequence token: the last-token recipe pools exactly that position.
  const bool keep_last = closing_token && tokens.back() == *closing_token;
  const int32_t last = tokens.back();
  tokens.resize(keep_last ? n_ctx - 1 : n_ctx);
  if (keep_last) tokens.push_back(last);
  return true;
}

std::vector<int32_t> decoder_embedding_tokens(const tokenizer::Tokenizer& tokenizer,
                                              std::string_view text) {
  return tokenizer.encode(text, {.add_special = true, .parse_special = false});
}

std::optional<int32_t> appended_eos(const tokenizer::Tokenizer& tokenizer) {
  const tokenizer::SpecialTokens& special = tokenizer.vocab().special();
  if (!special.add_eos || special.eos == tokenizer::kNoToken) return std::nullopt;
  return special.eos;
}

void pool_hidden_rows(PoolingType pooling, std::span<const float> rows, size_t n_embd,
                      bool normalize, EmbeddingItem& item) {
  const size_t n_rows = rows.size() / n_embd;
  if (pooling == PoolingType::kNone) {
    item.values.assign(rows.begin(), rows.end());
    if (normalize) {
      for (size_t t = 0; t < n_rows; ++t) l2_normalize(item.values.data() + t * n_embd, n_embd);
    }
    return;
  }
  item.values.resize(n_embd);
  pool_sequence(pooling, rows.data(), n_rows, n_embd, item.values.data());
  if (normalize) l2_normalize(item.values.data(), n_embd);
}

Result<EmbedResult> DecoderEmbedder::embed(std::span<const std::string> inputs,
                                           const EmbedOptions& options) {
  std::vector<Input> prepared(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    prepared[i].tokens = decoder_embedding_tokens(tokenizer_, inputs[i]);
    // A text that tokenizes to nothing but the special tokens is still empty text.
    if (inputs[i].empty()) prepared[i].tokens.clear();
  }
  return embed_inputs(std::move(prepared), options);
}

Result<EmbedResult> DecoderEmbedder::embed_tokens(std::span<const std::vector<int32_t>> inputs,
                                                  const EmbedOptions& options) {
  std::vector<Input> prepared(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) prepared[i].tokens = inputs[i];
  return embed_inputs(std::move(prepared), options);
}

Result<EmbedResult> DecoderEmbedder::embed_inputs(std::vector<Input> inputs,
                                                  const EmbedOptions& options) {
  if (inputs.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no inputs to embed", ErrorWhere{.field = "input"});
  }
  const DecoderModel& model = engine_.model();
  EmbedResult result;
  SYN_ASSIGN_OR_RETURN(result.pooling,
                       decoder_embedding_pooling(model.hparams().pooling, options.pooling, true));
  const std::optional<int32_t> eos = appended_eos(tokenizer_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    SYN_ASSIGN_OR_RETURN(inputs[i].truncated,
                         fit_decoder_input(inputs[i].tokens, i, model.n_vocab(),
                                           engine_.cache().n_ctx(), options.truncate, eos));
  }
  result.n_embd = n_embd();
  result.items.resize(inputs.size());
  // Group inputs in order while their tokens fit the budget and their pages the KV pool (one
  // input always runs: it fits the context, and the pool holds at least one full context).
  const size_t page_tokens = engine_.cache().page_tokens();
  const size_t max_pages = engine_.cache().stats().max_pages;
  size_t first = 0;
  while (first < inputs.size()) {
    size_t end = first, tokens = 0, pages = 0;
    while (end < inputs.size()) {
      const size_t n = inputs[end].tokens.size();
      const size_t p = pages_for(n, page_tokens);
      if (end > first && (tokens + n > max_batch_tokens_ || pages + p > max_pages)) break;
      tokens += n;
      pages += p;
      ++end;
    }
    SYN_RETURN_IF_ERROR(run_group(inputs, first, end, result, options.normalize));
    first = end;
  }
  for (const EmbeddingItem& item : result.items) result.prompt_tokens += item.n_tokens;
  return result;
}

Status DecoderEmbedder::run_group(std::span<const Input> inputs, size_t first, size_t end,
                                  EmbedResult& result, bool normalize) {
  const LogitsWanted rows =
      result.pooling == PoolingType::kLast ? LogitsWanted::kLast : LogitsWanted::kAll;
  step_inputs_.clear();
  sequences_.clear();
  for (size_t i = first; i < end; ++i) {
    sequences_.push_back(engine_.new_sequence());
    step_inputs_.push_back(StepInput{.sequence = sequences_.back(),
                                     .tokens = inputs[i].tokens,
                                     .logits = LogitsWanted::kNone,
                                     .hidden = rows});
  }
  const Status status = engine_.step(step_inputs_, out_);
  for (const SeqId seq : sequences_) (void)engine_.release(seq);
  SYN_RETURN_IF_ERROR(status);
  for (size_t i = first; i < end; ++i) {
    EmbeddingItem& item = result.items[i];
    item.n_tokens = inputs[i].tokens.size();
    item.truncated = inputs[i].truncated;
    pool_hidden_rows(result.pooling, out_.hidden_rows(i - first), result.n_embd, normalize, item);
  }
  return ok_status();
}

}  // namespace synapse
