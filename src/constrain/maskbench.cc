// SPDX-License-Identifier: Apache-2.0
#include "constrain/maskbench.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "constrain/token_masker.h"

namespace synapse::constrain {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

Json distribution(std::vector<double> values) {
  Json out = Json::object();
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (const double v : values) sum += v;
  auto at = [&](double q) {
    const auto index = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size()))) - 1;
    return values[std::min(index, values.size() - 1)];
  };
  auto round2 = [](double v) { return std::round(v * 100) / 100; };
  out["count"] = values.size();
  out["avg"] = round2(sum / static_cast<double>(values.size()));
  out["p50"] = round2(at(0.50));
  out["p75"] = round2(at(0.75));
  out["p90"] = round2(at(0.90));
  out["p99"] = round2(at(0.99));
  out["p999"] = round2(at(0.999));
  out["max"] = round2(values.back());
  return out;
}

Json counts_json(const MaskBenchCounts& c) {
  Json out = Json::object();
  out["schemas"] = c.schemas;
  out["passing"] = c.passing;
  out["compile_error"] = c.compile_error;
  out["validation_error"] = c.validation_error;
  out["invalidation_error"] = c.invalidation_error;
  out["timeout"] = c.timeout;
  out["valid_instances"] = c.valid_instances;
  out["invalid_instances"] = c.invalid_instances;
  out["masks"] = c.masks;
  return out;
}

// "unsupported_schema: keyword 'not'" -> a short key for the histogram of compile errors.
std::string error_key(const Status& status) {
  std::string message = status.message();
  if (message.size() > 60) message.resize(60);
  return std::string(error_code_name(status.code())) + ": " + message;
}

}  // namespace

MaskBench::MaskBench(const tokenizer::Tokenizer& tokenizer, std::shared_ptr<const TokenTrie> trie,
                     JsonSchemaOptions options)
    : tokenizer_(tokenizer), trie_(std::move(trie)), options_(options) {}

bool MaskBench::feed_instance(TokenMasker& masker, const std::string& text, Category& category,
                              Category& total) {
  const std::vector<TokenId> ids =
      tokenizer_.encode(text, tokenizer::EncodeOptions{.add_special = false});
  Matcher matcher = masker.new_matcher();
  std::vector<uint64_t> mask(masker.mask_words());
  auto allowed = [&](TokenId t) {
    const auto bit = static_cast<size_t>(t);
    return ((mask[bit >> 6] >> (bit & 63)) & 1) != 0;
  };
  const TokenId end = trie_->end_tokens().empty() ? tokenizer::kNoToken : trie_->end_tokens()[0];
  for (size_t i = 0; i <= ids.size(); ++i) {
    const Clock::time_point start = Clock::now();
    masker.compute_mask(matcher, mask);
    const double us = micros_since(start);
    ++category.counts.masks;
    ++total.counts.masks;
    category.tbm_us.push_back(us);
    total.tbm_us.push_back(us);
    record_max_mask_us_ = std::max(record_max_mask_us_, us);
    const TokenId next = i < ids.size() ? ids[i] : end;
    if (next == tokenizer::kNoToken || !allowed(next)) return false;
    if (i < ids.size() && !masker.consume_token(matcher, next)) return false;
  }
  return true;
}

void MaskBench::run_record(const Json& record, const std::string& category_name) {
  Category& category = categories_[category_name];
  // Every count goes to the record's category and to the total.
  const auto count = [&](uint64_t MaskBenchCounts::*field) {
    ++(category.counts.*field);
    ++(total_.counts.*field);
  };
  const std::string id = record.value("id", std::string("?"));
  count(&MaskBenchCounts::schemas);
  const Clock::time_point start = Clock::now();
  Result<Grammar> grammar = compile_json_schema(record.at("schema"), options_);
  if (!grammar.ok()) {
    const Status status = grammar.status();
    count(status.code() == ErrorCode::kSchemaTooComplex ? &MaskBenchCounts::timeout
                                                        : &MaskBenchCounts::compile_error);
    ++compile_errors_[error_key(status)];
    return;
  }
  TokenMasker masker(std::make_shared<const Grammar>(std::move(grammar).value()), trie_);
  {
    // Time to first mask: compile plus the first mask of an empty text.
    Matcher matcher = masker.new_matcher();
    std::vector<uint64_t> mask(masker.mask_words());
    masker.compute_mask(matcher, mask);
    const double us = micros_since(start);
    category.ttfm_us.push_back(us);
    total_.ttfm_us.push_back(us);
    slowest_ttfm_.emplace_back(us, id);
  }
  record_max_mask_us_ = 0;
  bool schema_passes = true;
  for (const Json& test : record.value("tests", Json::array())) {
    const bool valid = test.at("valid").get<bool>();
    const bool accepted = feed_instance(masker, test.at("data").dump(), category, total_);
    count(valid ? &MaskBenchCounts::valid_instances : &MaskBenchCounts::invalid_instances);
    if (valid != accepted) {
      count(valid ? &MaskBenchCounts::validation_error : &MaskBenchCounts::invalidation_error);
      schema_passes = false;
    }
  }
  slowest_mask_.emplace_back(record_max_mask_us_, id);
  walked_ += masker.stats().walked;
  shared_hits_ += masker.stats().shared_hits;
  unshareable_ += masker.stats().unshareable;
  merged_ += masker.stats().merged;
  if (schema_passes) {
    count(&MaskBenchCounts::passing);
  } else if (failures_.size() < 50) {
    failures_.push_back(id);
  }
}

Json MaskBench::report() const {
  Json out = counts_json(total_.counts);
  out["tbm_us"] = distribution(total_.tbm_us);
  out["ttfm_us"] = distribution(total_.ttfm_us);
  Json categories = Json::object();
  for (const auto& [name, category] : categories_) {
    Json c = counts_json(category.counts);
    c["tbm_us"] = distribution(category.tbm_us);
    c["ttfm_us"] = distribution(category.ttfm_us);
    categories[name] = std::move(c);
  }
  out["categories"] = std::move(categories);
  std::vector<std::pair<uint64_t, std::string>> errors;
  for (const auto& [key, count] : compile_errors_) errors.emplace_back(count, key);
  std::sort(errors.rbegin(), errors.rend());
  Json top = Json::object();
  for (size_t i = 0; i < errors.size() && i < 40; ++i) top[errors[i].second] = errors[i].first;
  out["compile_errors"] = std::move(top);
  out["failures"] = failures_;
  auto slowest = [](std::vector<std::pair<double, std::string>> v) {
    std::sort(v.rbegin(), v.rend());
    Json list = Json::array();
    for (size_t i = 0; i < v.size() && i < 10; ++i) {
      list.push_back(Json{{"id", v[i].second}, {"us", std::round(v[i].first)}});
    }
    return list;
  };
  out["lexer_states"] = Json{{"walked", walked_},
                             {"shared_hits", shared_hits_},
                             {"unshareable", unshareable_},
                             {"merged", merged_}};
  out["slowest_ttfm"] = slowest(slowest_ttfm_);
  out["slowest_mask"] = slowest(slowest_mask_);
  return out;
}

}  // namespace synapse::constrain
