// SPDX-License-Identifier: Apache-2.0
#include "cli/inspect_report.h"

#include <fmt/format.h>

#include <string>

#include "cli/cli_util.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"
#include "format/package/package_file.h"
#include "model/arch/architecture.h"
#include "model/tensor_check.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

// The double whose shortest decimal form equals the float's (1e-05, not 9.999999747378752e-06), so
// JSON shows float metadata the way it was written.
double float_for_json(float value) { return std::stod(fmt::format("{}", value)); }

Json value_json(const GgufValue& value, size_t max_elements) {
  switch (value.type()) {
    case GgufValueType::kString:
      return std::string(*value.to_string());
    case GgufValueType::kBool:
      return *value.to_bool();
    case GgufValueType::kFloat32:
      return float_for_json(static_cast<float>(*value.to_double()));
    case GgufValueType::kFloat64:
      return *value.to_double();
    case GgufValueType::kArray: {
      Json out;
      out["element_type"] = std::string(gguf_value_type_name(value.element_type()));
      out["count"] = value.array_size();
      Json head = Json::array();
      for (uint64_t i = 0; i < value.array_size() && i < max_elements; ++i) {
        head.push_back(value_json(value.element(i), max_elements));
      }
      out["head"] = std::move(head);
      return out;
    }
    default:
      if (const auto u = value.to_uint()) return *u;
      return *value.to_int();
  }
}

Json hparams_json(const HParams& hp) {
  Json h;
  h["kind"] = hp.kind == ModelKind::kDecoder ? "decoder" : "encoder";
  h["n_vocab"] = hp.n_vocab;
  h["n_ctx_train"] = hp.n_ctx_train;
  h["n_embd"] = hp.n_embd;
  h["n_ff"] = hp.n_ff;
  h["n_layer"] = hp.n_layer;
  h["n_head"] = hp.n_head;
  h["n_head_kv"] = hp.n_head_kv;
  h["head_dim_k"] = hp.head_dim_k;
  h["head_dim_v"] = hp.head_dim_v;
  h["norm"] = hp.rms_norm ? "rms" : "layer";
  h["norm_eps"] = float_for_json(hp.norm_eps);
  if (hp.rope_layout != RopeLayout::kNone) {
    h["rope"] = {{"layout", std::string(rope_layout_name(hp.rope_layout))},
                 {"n_rot", hp.n_rot},
                 {"freq_base", float_for_json(hp.rope_freq_base)},
                 {"scaling", std::string(rope_scaling_name(hp.rope_scaling))},
                 {"scaling_factor", float_for_json(hp.rope_scaling_factor)},
                 {"original_context", hp.rope_original_context}};
  }
  h["causal"] = hp.causal;
  if (hp.kind == ModelKind::kEncoder) {
    h["pooling"] = std::string(pooling_type_name(hp.pooling));
    h["n_token_types"] = hp.n_token_types;
  }
  return h;
}

// Token id and its text, or null when the key is absent or out of range.
Json special_token(const GgufMetadata& md, std::string_view key,
                   std::span<const std::string_view> tokens) {
  const GgufValue* value = md.find(key);
  if (value == nullptr) return nullptr;
  const auto id = value->to_uint();
  if (!id) return nullptr;
  Json t;
  t["id"] = *id;
  if (*id < tokens.size()) t["text"] = std::string(tokens[*id]);
  return t;
}

Json tokenizer_json(const GgufMetadata& md) {
  namespace k = gguf_key;
  if (!md.contains(k::kTokenizerModel)) return nullptr;
  Json t;
  const auto string_or_null = [&md](std::string_view key) -> Json {
    const GgufValue* v = md.find(key);
    if (v == nullptr || !v->is_string()) return nullptr;
    return std::string(*v->to_string());
  };
  const auto bool_or_null = [&md](std::string_view key) -> Json {
    const GgufValue* v = md.find(key);
    if (v == nullptr || !v->to_bool()) return nullptr;
    return *v->to_bool();
  };
  const auto array_size = [&md](std::string_view key) -> Json {
    const GgufValue* v = md.find(key);
    if (v == nullptr || !v->is_array()) return nullptr;
    return v->array_size();
  };
  t["model"] = string_or_null(k::kTokenizerModel);
  t["pre"] = string_or_null(k::kTokenizerPre);
  t["tokens"] = array_size(k::kTokenizerTokens);
  t["merges"] = array_size(k::kTokenizerMerges);
  t["has_scores"] = md.contains(k::kTokenizerScores);
  std::span<const std::string_view> tokens;
  if (auto list = md.get_string_array(k::kTokenizerTokens); list.ok()) tokens = *list;
  t["bos"] = special_token(md, k::kTokenizerBosId, tokens);
  t["eos"] = special_token(md, k::kTokenizerEosId, tokens);
  t["unk"] = special_token(md, k::kTokenizerUnknownId, tokens);
  t["pad"] = special_token(md, k::kTokenizerPaddingId, tokens);
  t["sep"] = special_token(md, k::kTokenizerSeparatorId, tokens);
  t["cls"] = special_token(md, k::kTokenizerClsId, tokens);
  t["add_bos"] = bool_or_null(k::kTokenizerAddBos);
  t["add_eos"] = bool_or_null(k::kTokenizerAddEos);
  t["chat_template"] = md.contains(k::kChatTemplate);
  return t;
}

void add_model_check(const ModelFile& file, Json& report) {
  const auto arch_name = file.metadata().architecture();
  report["architecture"] = arch_name.ok() ? Json(std::string(*arch_name)) : Json(nullptr);
  const Architecture* arch = arch_name.ok() ? find_architecture(*arch_name) : nullptr;
  report["supported"] = arch != nullptr;
  if (arch == nullptr) {
    report["model_check"] = {
        {"ok", false},
        {"summary", arch_name.ok() ? "architecture '" + std::string(*arch_name) +
                                         "' is not supported by this build"
                                   : "no general.architecture key"}};
    return;
  }
  HParams hp;
  Status read = arch->read_hparams(file.metadata(), hp);
  if (!read.ok()) {
    report["hparams"] = nullptr;
    report["model_check"] = {{"ok", false},
                             {"summary", "hyper-parameters: " + read.to_string()},
                             {"error", error_json(read)}};
    return;
  }
  report["hparams"] = hparams_json(hp);
  if (file.tensor_views().empty()) {
    report["model_check"] = {{"ok", false},
                             {"summary", "vocabulary only: the file has no tensors"}};
    return;
  }
  const TensorCheckReport check = check_model_tensors(*arch, hp, file);
  Json problems = Json::array();
  for (const Status& p : check.problems) problems.push_back(error_json(p));
  std::string summary = fmt::format(
      "{} model, {}/{} required tensors, {} optional{}", arch->name(), check.present_required,
      check.expected_required, check.present_optional, check.tied_output ? ", tied output" : "");
  if (!check.ok()) summary += fmt::format(", {} problem(s)", check.problems.size());
  if (!check.unknown.empty()) summary += fmt::format(", {} unused tensor(s)", check.unknown.size());
  report["model_check"] = {{"ok", check.ok()},
                           {"summary", summary},
                           {"expected_required", check.expected_required},
                           {"present_required", check.present_required},
                           {"present_optional", check.present_optional},
                           {"tied_output", check.tied_output},
                           {"problems", problems},
                           {"unused_tensors", check.unknown}};
}

// Version, alignment, where the data starts and how every byte is used: GGUF.
void add_gguf_layout(const GgufFile& file, Json& report) {
  report["version"] = file.version();
  report["alignment"] = file.alignment();
  report["data_offset"] = file.data_section_offset();
  const GgufLayout& l = file.layout();
  report["layout"] = {{"file_bytes", l.file_bytes},
                      {"header_bytes", l.header_bytes},
                      {"metadata_bytes", l.metadata_bytes},
                      {"tensor_info_bytes", l.tensor_info_bytes},
                      {"alignment_padding_bytes", l.alignment_padding_bytes},
                      {"tensor_data_bytes", l.tensor_data_bytes},
                      {"tensor_padding_bytes", l.tensor_padding_bytes},
                      {"trailing_bytes", l.trailing_bytes}};
}

// The same for a package, with where it came from and its section checksums.
void add_package_layout(const PackageFile& file, Json& report) {
  const PackageHeader& h = file.header();
  report["version"] = h.version;
  report["alignment"] = h.alignment;
  report["data_offset"] = h.data_offset;
  const PackageSource& s = file.source();
  report["package"] = {{"source",
                        {{"format", std::string(s.format)},
                         {"name", std::string(s.name)},
                         {"bytes", s.bytes},
                         {"sha256", std::string(s.sha256)}}},
                       {"graph_sha256", std::string(s.graph_hash)},
                       {"created_by", std::string(s.created_by)},
                       {"manifest_xxh3_128", h.manifest_checksum.to_hex()},
                       {"tensor_table_xxh3_128", h.table_checksum.to_hex()},
                       {"tensor_checksums", "not checked by inspect: synapse verify checks them"}};
  const PackageLayout& l = file.layout();
  report["layout"] = {{"file_bytes", l.file_bytes},
                      {"header_bytes", l.header_bytes},
                      {"manifest_bytes", l.manifest_bytes},
                      {"tensor_table_bytes", l.tensor_table_bytes},
                      {"alignment_padding_bytes", l.alignment_padding_bytes},
                      {"tensor_data_bytes", l.tensor_data_bytes},
                      {"tensor_padding_bytes", l.tensor_padding_bytes}};
}

}  // namespace

Json inspect_error_report(const std::string& path, const Status& error) {
  Json report;
  report["file"] = path;
  report["format"] = std::string(sniff_model_format(path));
  report["valid"] = false;
  report["error"] = error_json(error);
  return report;
}

Json build_inspect_report(const std::string& path, size_t max_array_elements) {
  Result<std::unique_ptr<ModelFile>> opened = open_model_file(path);
  if (!opened.ok()) return inspect_error_report(path, opened.status());
  const ModelFile& file = **opened;
  const auto* gguf = dynamic_cast<const GgufFile*>(&file);
  const auto* package = dynamic_cast<const PackageFile*>(&file);
  Json report;
  report["file"] = path;
  report["format"] = std::string(file.format_name());
  report["valid"] = true;
  if (gguf != nullptr) add_gguf_layout(*gguf, report);
  if (package != nullptr) add_package_layout(*package, report);
  report["name"] = nullptr;
  if (auto name = file.metadata().get_string(gguf_key::kName); name.ok()) {
    report["name"] = std::string(*name);
  }
  add_model_check(file, report);
  report["tokenizer"] = tokenizer_json(file.metadata());

  uint64_t parameters = 0;
  Json tensors = Json::array();
  const uint8_t* base = file.mapping().bytes().data();
  for (const TensorView& t : file.tensor_views()) {
    parameters += t.element_count();
    Json tensor = {{"name", std::string(t.name)},
                   {"type", std::string(tensor_type_name(t.type))},
                   {"shape", std::vector<uint64_t>(t.shape().begin(), t.shape().end())},
                   {"bytes", t.data.size()},
                   {"offset", static_cast<uint64_t>(t.data.data() - base)}};
    if (package != nullptr) tensor["xxh3_128"] = package->find_tensor(t.name)->checksum.to_hex();
    tensors.push_back(std::move(tensor));
  }
  report["parameters"] = parameters;
  Json metadata = Json::array();
  for (const GgufKeyValue& kv : file.metadata().entries()) {
    metadata.push_back({{"key", std::string(kv.key)},
                        {"type", std::string(gguf_value_type_name(kv.value.type()))},
                        {"value", value_json(kv.value, max_array_elements)}});
  }
  report["metadata"] = std::move(metadata);
  report["tensors"] = std::move(tensors);
  return report;
}

}  // namespace synapse::cli
