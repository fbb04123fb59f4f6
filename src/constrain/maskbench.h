// SPDX-License-Identifier: Apache-2.0
// The MaskBench protocol (JSONSchemaBench's mask benchmark): compile each schema, feed each of
// its instances token by token through the masks, and count what passes.
//
// A valid instance passes when every token is in the mask at its step and the end is allowed;
// an invalid one passes when some token is refused or the end is not allowed. A schema passes
// when it compiles and all its instances pass. Times are per mask (TBM) and per compile plus
// first mask (TTFM), one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "constrain/json_schema.h"
#include "constrain/token_trie.h"

namespace synapse::constrain {

struct MaskBenchCounts {
  uint64_t schemas = 0;
  uint64_t passing = 0;
  uint64_t compile_error = 0;       // schemas refused by the compiler (unsupported, malformed)
  uint64_t timeout = 0;             // schemas over the compile bounds (schema_too_complex)
  uint64_t validation_error = 0;    // valid instances refused
  uint64_t invalidation_error = 0;  // invalid instances accepted
  uint64_t valid_instances = 0;
  uint64_t invalid_instances = 0;
  uint64_t masks = 0;
};

class MaskBench {
 public:
  MaskBench(const tokenizer::Tokenizer& tokenizer, std::shared_ptr<const TokenTrie> trie,
            JsonSchemaOptions options = {});

  // One record of a MaskBench file: {"id", "schema", "tests": [{"data", "valid"}, ...]}.
  // `category` groups the figures (the file's name).
  void run_record(const nlohmann::ordered_json& record, const std::string& category);

  // {"schemas", "passing", ..., "tbm_us": {...}, "ttfm_us": {...}, "categories": {...},
  //  "compile_errors": {"code: first words": count, ...}, "failures": [...]}
  nlohmann::ordered_json report() const;

 private:
  struct Category {
    MaskBenchCounts counts;
    std::vector<double> tbm_us;
    std::vector<double> ttfm_us;
  };
  // Feeds one instance; true when the masks accepted it at every token and at the end.
  bool feed_instance(class TokenMasker& masker, const std::string& text, Category& category,
                     Category& total);

  const tokenizer::Tokenizer& tokenizer_;
  std::shared_ptr<const TokenTrie> trie_;
  JsonSchemaOptions options_;
  Category total_;
  std::map<std::string, Category> categories_;
  std::map<std::string, uint64_t> compile_errors_;
  std::vector<std::string> failures_;  // ids of schemas with instance errors (the first 50)
  // The slowest schemas by time to first mask and by their slowest mask: (µs, id).
  std::vector<std::pair<double, std::string>> slowest_ttfm_;
  std::vector<std::pair<double, std::string>> slowest_mask_;
  double record_max_mask_us_ = 0;
  uint64_t walked_ = 0, shared_hits_ = 0, unshareable_ = 0, merged_ = 0;  // lexer states' masks
};

}  // namespace synapse::constrain
