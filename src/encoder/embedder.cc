// SPDX-License-Identifier: Apache-2.0
#include "encoder/embedder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/numeric_check.h"
#include "encoder/pooling.h"
#include "kernels/kernel_selection.h"
#include "kernels/matmul.h"

namespace synapse {
namespace {

std::string input_field(const char* field, size_t index) {
  return std::string(field) + "[" + std::to_string(index) + "]";
}

}  // namespace

Embedder::Embedder(std::unique_ptr<ModelFile> file, std::unique_ptr<EncoderModel> model,
                   tokenizer::Tokenizer tokenizer)
    : file_(std::move(file)), model_(std::move(model)), tokenizer_(std::move(tokenizer)) {}

Result<std::unique_ptr<Embedder>> Embedder::open(std::unique_ptr<ModelFile> file) {
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<EncoderModel> model, EncoderModel::load(*file));
  auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
  if (!tok.ok()) return std::move(tok).take_status().with_path(file->path());
  return std::unique_ptr<Embedder>(
      new Embedder(std::move(file), std::move(model), std::move(tok).value()));
}

Status Embedder::fit_context(Sequence& seq, bool truncate, size_t index, const char* field) const {
  const size_t n_ctx = model_->hparams().n_ctx_train;
  if (seq.tokens.size() <= n_ctx) return ok_status();
  if (!truncate) {
    return Status(ErrorCode::kContextLengthExceeded,
                  std::to_string(seq.tokens.size()) + " tokens; the model's context is " +
                      std::to_string(n_ctx) + " (ask for truncation to cut it)",
                  ErrorWhere{.field = input_field(field, index)});
  }
  // Keep the closing [SEP] the tokenizer added, as Hugging Face's truncation does.
  const tokenizer::SpecialTokens& special = tokenizer_.vocab().special();
  const bool keep_last = special.add_eos && !seq.tokens.empty() &&
                         (seq.tokens.back() == special.sep || seq.tokens.back() == special.eos);
  const int32_t last = seq.tokens.back();
  seq.tokens.resize(keep_last ? n_ctx - 1 : n_ctx);
  if (keep_last) seq.tokens.push_back(last);
  if (!seq.types.empty()) seq.types.resize(n_ctx);
  seq.truncated = true;
  return ok_status();
}

template <typename Fn>
Status Embedder::run_batches(std::span<const Sequence> sequences, EncoderGelu gelu,
                             ThreadPool& pool, Fn&& on_sequence) {
  const size_t d = n_embd();
  std::vector<int32_t> tokens, types;
  std::vector<uint32_t> lengths;
  size_t first = 0;
  while (first < sequences.size()) {
    tokens.clear();
    types.clear();
    lengths.clear();
    bool any_types = false;
    size_t end = first;
    // Pack inputs in order until the token budget is reached (at least one per batch).
    while (end < sequences.size() &&
           (end == first || tokens.size() + sequences[end].tokens.size() <= max_batch_tokens_)) {
      const Sequence& s = sequences[end];
      tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
      if (s.types.empty()) {
        types.insert(types.end(), s.tokens.size(), 0);
      } else {
        types.insert(types.end(), s.types.begin(), s.types.end());
        any_types = true;
      }
      lengths.push_back(static_cast<uint32_t>(s.tokens.size()));
      ++end;
    }
    const EncoderBatch batch{
        .tokens = tokens,
        .token_types = any_types ? std::span<const int32_t>(types) : std::span<const int32_t>(),
        .seq_lengths = lengths};
    SYN_RETURN_IF_ERROR(encoder_forward(*model_, batch, workspace_, pool, gelu));
    const float* hidden = workspace_.hidden().data();
    size_t offset = 0;
    for (size_t i = first; i < end; ++i) {
      SYN_RETURN_IF_ERROR(on_sequence(i, hidden + offset * d, lengths[i - first]));
      offset += lengths[i - first];
    }
    first = end;
  }
  return ok_status();
}

Result<EmbedResult> Embedder::embed_sequences(std::vector<Sequence> sequences,
                                              const EmbedOptions& options, ThreadPool& pool) {
  if (sequences.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no inputs to embed", ErrorWhere{.field = "input"});
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    SYN_RETURN_IF_ERROR(fit_context(sequences[i], options.truncate, i, "input"));
  }
  EmbedResult result;
  result.n_embd = n_embd();
  result.pooling = options.pooling.value_or(model_->hparams().pooling);
  if (result.pooling == PoolingType::kRank) result.pooling = PoolingType::kCls;
  result.items.resize(sequences.size());
  const size_t d = n_embd();
  SYN_RETURN_IF_ERROR(run_batches(
      sequences, options.gelu, pool, [&](size_t i, const float* hidden, size_t n) -> Status {
        EmbeddingItem& item = result.items[i];
        item.n_tokens = n;
        item.truncated = sequences[i].truncated;
        if (result.pooling == PoolingType::kNone) {
          item.values.assign(hidden, hidden + n * d);
          if (options.normalize) {
            for (size_t t = 0; t < n; ++t) l2_normalize(item.values.data() + t * d, d);
          }
        } else {
          item.values.resize(d);
          pool_sequence(result.pooling, hidden, n, d, item.values.data());
          if (options.normalize) l2_normalize(item.values.data(), d);
        }
        // Not SYN_RETURN_IF_ERROR: this lambda sits inside one, whose local it would shadow.
        if (Status finite =
                check_finite(item.values, "the embedding of input " + std::to_string(i));
            !finite.ok()) {
          return finite;
        }
        result.prompt_tokens += n;
        return ok_status();
      }));
  return result;
}

Result<EmbedResult> Embedder::embed(std::span<const std::string> inputs,
                                    const EmbedOptions& options, ThreadPool& pool) {
  std::vector<Sequence> sequences(inputs.size());
  tokenizer::EncodeScratch scratch;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      return Status(ErrorCode::kInvalidArgument, "empty input",
                    ErrorWhere{.field = input_field("input", i)});
    }
    tokenizer_.encode(inputs[i], {.add_special = true, .parse_special = false}, scratch,
                      sequences[i].tokens);
  }
  return embed_sequences(std::move(sequences), options, pool);
}

Result<EmbedResult> Embedder::embed_tokens(std::span<const std::vector<int32_t>> inputs,
                                           const EmbedOptions& options, ThreadPool& pool) {
  std::vector<Sequence> sequences(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      return Status(ErrorCode::kInvalidArgument, "empty token list",
                    ErrorWhere{.field = input_field("input", i)});
    }
    for (const int32_t id : inputs[i]) {
      if (id < 0 || static_cast<uint32_t>(id) >= model_->hparams().n_vocab) {
        return Status(ErrorCode::kInvalidArgument,
                      "token id " + std::to_string(id) + " outside the vocabulary",
                      ErrorWhere{.field = input_field("input", i)});
      }
    }
    sequences[i].tokens = inputs[i];
  }
  return embed_sequences(std::move(sequences), options, pool);
}

Result<RerankResult> Embedder::rerank(std::string_view query,
                                      std::span<const std::string> documents, size_t top_n,
                                      bool truncate, ThreadPool& pool) {
  if (!model_->classifier()) {
    return Status(ErrorCode::kUnsupported,
                  "not a reranker: the model has no classification head (cls.output.weight / "
                  "cls.weight)",
                  ErrorWhere{.path = file_->path()});
  }
  if (query.empty()) {
    return Status(ErrorCode::kInvalidArgument, "empty query", ErrorWhere{.field = "query"});
  }
  if (documents.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no documents", ErrorWhere{.field = "documents"});
  }
  const tokenizer::SpecialTokens& special = tokenizer_.vocab().special();
  const int32_t cls = special.cls != tokenizer::kNoToken ? special.cls : special.bos;
  const int32_t sep = special.sep != tokenizer::kNoToken ? special.sep : special.eos;
  if (cls == tokenizer::kNoToken || sep == tokenizer::kNoToken) {
    return Status(ErrorCode::kUnsupported, "the vocabulary lacks [CLS] or [SEP] tokens");
  }
  tokenizer::EncodeScratch scratch;
  std::vector<int32_t> query_ids;
  tokenizer_.encode(query, {.add_special = false}, scratch, query_ids);
  const size_t n_ctx = model_->hparams().n_ctx_train;
  const size_t query_part = query_ids.size() + 2;  // [CLS] query [SEP]
  std::vector<Sequence> sequences(documents.size());
  std::vector<int32_t> doc_ids;
  for (size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].empty()) {
      return Status(ErrorCode::kInvalidArgument, "empty document",
                    ErrorWhere{.field = input_field("documents", i)});
    }
    doc_ids.clear();
    tokenizer_.encode(documents[i], {.add_special = false}, scratch, doc_ids);
    Sequence& s = sequences[i];
    if (query_part + doc_ids.size() + 1 > n_ctx) {
      if (!truncate || query_part + 2 > n_ctx) {
        return Status(ErrorCode::kContextLengthExceeded,
                      "query and document take " + std::to_string(query_part + doc_ids.size() + 1) +
                          " tokens; the model's context is " + std::to_string(n_ctx) +
                          (truncate ? " (the query alone leaves no room)"
                                    : " (ask for truncation to cut the document)"),
                      ErrorWhere{.field = input_field("documents", i)});
      }
      doc_ids.resize(n_ctx - query_part - 1);
      s.truncated = true;
    }
    s.tokens.push_back(cls);
    s.tokens.insert(s.tokens.end(), query_ids.begin(), query_ids.end());
    s.tokens.push_back(sep);
    s.types.assign(s.tokens.size(), 0);
    s.tokens.insert(s.tokens.end(), doc_ids.begin(), doc_ids.end());
    s.tokens.push_back(sep);
    s.types.resize(s.tokens.size(), 1);
  }

  // The CLS vectors of every pair, then the head over all of them at once.
  const size_t d = n_embd();
  std::vector<float> pooled(documents.size() * d);
  RerankResult result;
  SYN_RETURN_IF_ERROR(run_batches(
      sequences, EncoderGelu::kTanh, pool, [&](size_t i, const float* hidden, size_t n) -> Status {
        pool_sequence(PoolingType::kCls, hidden, n, d, pooled.data() + i * d);
        result.prompt_tokens += n;
        return ok_status();
      }));
  const EncoderClassifier& head = *model_->classifier();
  const KernelTable& kernels = selected_kernels();
  const size_t n = documents.size();
  auto apply = [&](const EncoderLinear& l, const std::vector<float>& x) {
    const size_t n_out = l.weight.n_rows;
    std::vector<uint8_t> scratch_bytes(matmul_scratch_bytes(kernels, l.weight, n, pool.size()));
    std::vector<float> y(n * n_out);
    matmul(kernels, l.weight, x.data(), l.weight.k, n, y.data(), n_out, scratch_bytes, pool);
    if (l.bias != nullptr) {
      for (size_t c = 0; c < n; ++c) kernels.add(&y[c * n_out], l.bias, &y[c * n_out], n_out);
    }
    return y;
  };
  std::vector<float> scores = std::move(pooled);
  if (head.dense) {
    scores = apply(*head.dense, scores);
    for (float& v : scores) v = std::tanh(v);
  }
  if (head.out) scores = apply(*head.out, scores);
  const size_t stride = head.n_outputs;
  // Before sorting: a NaN score breaks the sort's ordering and would reach the client as null.
  for (size_t i = 0; i < n; ++i) {
    SYN_RETURN_IF_ERROR(check_finite(std::span<const float>(&scores[i * stride], 1),
                                     "the rerank score of document " + std::to_string(i)));
  }
  for (size_t i = 0; i < n; ++i) {
    result.items.push_back(
        {.index = i, .score = scores[i * stride], .n_tokens = sequences[i].tokens.size()});
  }
  std::stable_sort(result.items.begin(), result.items.end(),
                   [](const RerankItem& a, const RerankItem& b) { return a.score > b.score; });
  if (top_n != 0 && top_n < result.items.size()) result.items.resize(top_n);
  return result;
}

}  // namespace synapse
