// SPDX-License-Identifier: Apache-2.0
#include "encoder/embedder.h"

#include <algorithm>

#include "base/numeric_check.h"
#include "encoder/pooling.h"

namespace synapse {
namespace {

std::string item_field(const char* field, size_t index) {
  return std::string(field) + "[" + std::to_string(index) + "]";
}

size_t pages_for(size_t tokens, size_t page_tokens) {
  return (tokens + page_tokens - 1) / page_tokens;
}

}  // namespace

Result<PoolingType> embedding_pooling(PoolingType model_pooling, bool bidirectional,
                                      std::optional<PoolingType> asked, bool allow_none) {
  PoolingType pooling = asked.value_or(model_pooling);
  if (pooling == PoolingType::kRank) pooling = PoolingType::kCls;  // a reranker's embedding
  switch (pooling) {
    case PoolingType::kLast:
    case PoolingType::kMean:
      return pooling;
    case PoolingType::kNone:
      if (allow_none) return pooling;
      return Status(ErrorCode::kInvalidArgument,
                    "pooling none gives one vector per token; this request needs one vector per "
                    "input (use last, mean or cls)",
                    ErrorWhere{.field = "pooling"});
    case PoolingType::kCls:
    case PoolingType::kRank:
      if (bidirectional) return PoolingType::kCls;
      break;
  }
  return Status(ErrorCode::kUnsupported,
                std::string(pooling_type_name(pooling)) +
                    " pooling needs a bidirectional encoder; this is a causal decoder (use last "
                    "or mean)",
                ErrorWhere{.field = "pooling"});
}

Result<bool> fit_embedding_input(std::vector<int32_t>& tokens, size_t index, uint32_t n_vocab,
                                 size_t n_ctx, bool truncate,
                                 std::optional<int32_t> closing_token) {
  if (tokens.empty()) {
    return Status(ErrorCode::kInvalidArgument, "empty input",
                  ErrorWhere{.field = item_field("input", index)});
  }
  for (const int32_t id : tokens) {
    if (id < 0 || static_cast<uint32_t>(id) >= n_vocab) {
      return Status(ErrorCode::kInvalidArgument,
                    "token id " + std::to_string(id) + " outside the vocabulary",
                    ErrorWhere{.field = item_field("input", index)});
    }
  }
  if (tokens.size() <= n_ctx) return false;
  if (!truncate) {
    return Status(ErrorCode::kContextLengthExceeded,
                  std::to_string(tokens.size()) + " tokens; the model's context is " +
                      std::to_string(n_ctx) + " (ask for truncation to cut it)",
                  ErrorWhere{.field = item_field("input", index)});
  }
  // Keep the closing token, as Hugging Face's truncation keeps [SEP] (and the last-token recipe
  // pools exactly that position).
  const bool keep_last = closing_token && tokens.back() == *closing_token;
  const int32_t last = tokens.back();
  tokens.resize(keep_last ? n_ctx - 1 : n_ctx);
  if (keep_last) tokens.push_back(last);
  return true;
}

std::vector<int32_t> embedding_tokens(const tokenizer::Tokenizer& tokenizer,
                                      std::string_view text) {
  return tokenizer.encode(text, {.add_special = true, .parse_special = false});
}

std::optional<int32_t> appended_closing_token(const tokenizer::Tokenizer& tokenizer) {
  if (!tokenizer.vocab().special().add_eos) return std::nullopt;
  // What the tokenizer appends after any text: the last special token of an empty one.
  const std::vector<int32_t> ids = embedding_tokens(tokenizer, "");
  if (ids.empty()) return std::nullopt;
  return ids.back();
}

Result<std::vector<RerankPair>> rerank_pairs(const tokenizer::Tokenizer& tokenizer,
                                             std::string_view query,
                                             std::span<const std::string> documents, size_t n_ctx,
                                             bool truncate) {
  if (query.empty()) {
    return Status(ErrorCode::kInvalidArgument, "empty query", ErrorWhere{.field = "query"});
  }
  if (documents.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no documents", ErrorWhere{.field = "documents"});
  }
  const tokenizer::SpecialTokens& special = tokenizer.vocab().special();
  const int32_t cls = special.cls != tokenizer::kNoToken ? special.cls : special.bos;
  const int32_t sep = special.sep != tokenizer::kNoToken ? special.sep : special.eos;
  if (cls == tokenizer::kNoToken || sep == tokenizer::kNoToken) {
    return Status(ErrorCode::kUnsupported, "the vocabulary lacks [CLS] or [SEP] tokens");
  }
  tokenizer::EncodeScratch scratch;
  std::vector<int32_t> query_ids;
  tokenizer.encode(query, {.add_special = false}, scratch, query_ids);
  const size_t query_part = query_ids.size() + 2;  // [CLS] query [SEP]
  std::vector<RerankPair> pairs(documents.size());
  std::vector<int32_t> doc_ids;
  for (size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].empty()) {
      return Status(ErrorCode::kInvalidArgument, "empty document",
                    ErrorWhere{.field = item_field("documents", i)});
    }
    doc_ids.clear();
    tokenizer.encode(documents[i], {.add_special = false}, scratch, doc_ids);
    RerankPair& p = pairs[i];
    if (query_part + doc_ids.size() + 1 > n_ctx) {
      if (!truncate || query_part + 2 > n_ctx) {
        return Status(ErrorCode::kContextLengthExceeded,
                      "query and document take " + std::to_string(query_part + doc_ids.size() + 1) +
                          " tokens; the model's context is " + std::to_string(n_ctx) +
                          (truncate ? " (the query alone leaves no room)"
                                    : " (ask for truncation to cut the document)"),
                      ErrorWhere{.field = item_field("documents", i)});
      }
      doc_ids.resize(n_ctx - query_part - 1);
      p.truncated = true;
    }
    p.tokens.push_back(cls);
    p.tokens.insert(p.tokens.end(), query_ids.begin(), query_ids.end());
    p.tokens.push_back(sep);
    p.types.assign(p.tokens.size(), 0);
    p.tokens.insert(p.tokens.end(), doc_ids.begin(), doc_ids.end());
    p.tokens.push_back(sep);
    p.types.resize(p.tokens.size(), 1);
  }
  return pairs;
}

bool can_rerank(const DecoderModel& model) {
  return model.hparams().kind == ModelKind::kEncoder && model.n_logits() > 0;
}

Status rank_documents(RerankResult& result, size_t top_n) {
  // Before sorting: a NaN score breaks the sort's ordering and would reach the client as null.
  for (const RerankItem& item : result.items) {
    SYN_RETURN_IF_ERROR(check_finite(std::span<const float>(&item.score, 1),
                                     "the rerank score of document " + std::to_string(item.index)));
  }
  std::stable_sort(result.items.begin(), result.items.end(),
                   [](const RerankItem& a, const RerankItem& b) { return a.score > b.score; });
  if (top_n != 0 && top_n < result.items.size()) result.items.resize(top_n);
  return ok_status();
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
  // CLS and last are given their one row; mean all of them.
  pool_sequence(pooling == PoolingType::kMean ? pooling : PoolingType::kCls, rows.data(), n_rows,
                n_embd, item.values.data());
  if (normalize) l2_normalize(item.values.data(), n_embd);
}

LogitsWanted pooling_rows(PoolingType pooling) {
  switch (pooling) {
    case PoolingType::kLast:
      return LogitsWanted::kLast;
    case PoolingType::kCls:
    case PoolingType::kRank:
      return LogitsWanted::kFirst;
    case PoolingType::kMean:
    case PoolingType::kNone:
      break;
  }
  return LogitsWanted::kAll;
}

Result<EmbedResult> Embedder::embed(std::span<const std::string> inputs,
                                    const EmbedOptions& options) {
  std::vector<Input> prepared(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A text that tokenizes to nothing but the special tokens is still empty text.
    if (!inputs[i].empty()) prepared[i].tokens = embedding_tokens(tokenizer_, inputs[i]);
  }
  return embed_inputs(std::move(prepared), options);
}

Result<EmbedResult> Embedder::embed_tokens(std::span<const std::vector<int32_t>> inputs,
                                           const EmbedOptions& options) {
  std::vector<Input> prepared(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) prepared[i].tokens = inputs[i];
  return embed_inputs(std::move(prepared), options);
}

template <typename Fn>
Status Embedder::run_groups(std::span<const Input> inputs, LogitsWanted logits, LogitsWanted hidden,
                            Fn&& on_input) {
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
    step_inputs_.clear();
    sequences_.clear();
    for (size_t i = first; i < end; ++i) {
      sequences_.push_back(engine_.new_sequence());
      step_inputs_.push_back(StepInput{.sequence = sequences_.back(),
                                       .tokens = inputs[i].tokens,
                                       .logits = logits,
                                       .hidden = hidden,
                                       .token_types = inputs[i].types});
    }
    const Status status = engine_.step(step_inputs_, out_);
    for (const SeqId seq : sequences_) (void)engine_.release(seq);
    SYN_RETURN_IF_ERROR(status);
    for (size_t i = first; i < end; ++i) SYN_RETURN_IF_ERROR(on_input(i, out_, i - first));
    first = end;
  }
  return ok_status();
}

Result<EmbedResult> Embedder::embed_inputs(std::vector<Input> inputs, const EmbedOptions& options) {
  if (inputs.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no inputs to embed", ErrorWhere{.field = "input"});
  }
  const DecoderModel& model = engine_.model();
  EmbedResult result;
  SYN_ASSIGN_OR_RETURN(
      result.pooling,
      embedding_pooling(model.hparams().pooling, model.bidirectional(), options.pooling, true));
  const std::optional<int32_t> closing = appended_closing_token(tokenizer_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    SYN_ASSIGN_OR_RETURN(inputs[i].truncated,
                         fit_embedding_input(inputs[i].tokens, i, model.n_vocab(),
                                             engine_.cache().n_ctx(), options.truncate, closing));
  }
  result.n_embd = n_embd();
  result.items.resize(inputs.size());
  SYN_RETURN_IF_ERROR(run_groups(inputs, LogitsWanted::kNone, pooling_rows(result.pooling),
                                 [&](size_t i, const StepOutput& out, size_t in_step) -> Status {
                                   EmbeddingItem& item = result.items[i];
                                   item.n_tokens = inputs[i].tokens.size();
                                   item.truncated = inputs[i].truncated;
                                   pool_hidden_rows(result.pooling, out.hidden_rows(in_step),
                                                    result.n_embd, options.normalize, item);
                                   result.prompt_tokens += item.n_tokens;
                                   return check_finite(
                                       item.values, "the embedding of input " + std::to_string(i));
                                 }));
  return result;
}

Result<RerankResult> Embedder::rerank(std::string_view query,
                                      std::span<const std::string> documents, size_t top_n,
                                      bool truncate) {
  if (!can_rerank()) {
    return Status(ErrorCode::kUnsupported,
                  "not a reranker: the model has no classification head (cls.output.weight / "
                  "cls.weight)",
                  ErrorWhere{.path = engine_.model().file().path()});
  }
  SYN_ASSIGN_OR_RETURN(
      std::vector<RerankPair> pairs,
      rerank_pairs(tokenizer_, query, documents, engine_.cache().n_ctx(), truncate));
  std::vector<Input> inputs(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    inputs[i] = Input{std::move(pairs[i].tokens), std::move(pairs[i].types), pairs[i].truncated};
  }
  // The classifier runs on each pair's CLS row: its first logit is the score.
  RerankResult result;
  SYN_RETURN_IF_ERROR(run_groups(inputs, LogitsWanted::kFirst, LogitsWanted::kNone,
                                 [&](size_t i, const StepOutput& out, size_t in_step) -> Status {
                                   const size_t n = inputs[i].tokens.size();
                                   result.items.push_back(
                                       {.index = i, .score = out.last(in_step)[0], .n_tokens = n});
                                   result.prompt_tokens += n;
                                   return ok_status();
                                 }));
  SYN_RETURN_IF_ERROR(rank_documents(result, top_n));
  return result;
}

}  // namespace synapse
