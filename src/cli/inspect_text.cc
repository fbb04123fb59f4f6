// SPDX-License-Identifier: Apache-2.0
// Text rendering of the inspect report.
#include <fmt/format.h>

#include "cli/inspect_report.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string json_text(const Json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string shorten(std::string text, size_t max_bytes) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.size() > max_bytes) text = text.substr(0, max_bytes) + "...";
  return text;
}

std::string special(const Json& token) {
  if (token.is_null()) return "-";
  std::string out = std::to_string(token["id"].get<uint64_t>());
  if (token.contains("text"))
    out += " " + Json(token["text"]).dump(-1, ' ', false, Json::error_handler_t::replace);
  return out;
}

std::string shape_text(const Json& shape) {
  std::string out;
  for (const Json& d : shape) out += (out.empty() ? "" : " x ") + std::to_string(d.get<uint64_t>());
  return out;
}

std::string metadata_value_text(const Json& entry) {
  const Json& value = entry["value"];
  if (entry["type"] == "array") {
    std::string head;
    for (const Json& item : value["head"])
      head += (head.empty() ? "" : ", ") + shorten(json_text(item), 24);
    const uint64_t count = value["count"].get<uint64_t>();
    if (count > value["head"].size()) head += ", ...";
    return fmt::format("[{}] ({} x {})", head, count, value["element_type"].get<std::string>());
  }
  if (value.is_string())
    return shorten(Json(value).dump(-1, ' ', false, Json::error_handler_t::replace), 100);
  return json_text(value);
}

}  // namespace

std::string render_inspect_text(const Json& r, bool show_all_tensors) {
  std::string out;
  auto line = [&out](std::string text) { out += text + "\n"; };
  line(fmt::format("file          {}", r["file"].get<std::string>()));
  if (!r["valid"].get<bool>()) {
    const Json& e = r["error"];
    std::string where;
    if (e.contains("byte_offset"))
      where += fmt::format(" at byte {}", e["byte_offset"].get<uint64_t>());
    if (e.contains("key")) where += fmt::format(", key '{}'", e["key"].get<std::string>());
    if (e.contains("tensor")) where += fmt::format(", tensor '{}'", e["tensor"].get<std::string>());
    line(fmt::format("verdict       INVALID: {}: {}{}", e["code"].get<std::string>(),
                     e["message"].get<std::string>(), where));
    return out;
  }
  const Json& layout = r["layout"];
  const bool package = r["format"] == "synapse";
  line(fmt::format("format        {} v{}, {} bytes, alignment {}, data at {}",
                   package ? "Synapse package" : "GGUF", r["version"].get<uint32_t>(),
                   layout["file_bytes"].get<uint64_t>(), r["alignment"].get<uint64_t>(),
                   r["data_offset"].get<uint64_t>()));
  line(fmt::format("verdict       valid {}; {}{}", package ? "package" : "GGUF",
                   r["model_check"]["summary"].get<std::string>(),
                   r["model_check"]["ok"].get<bool>() ? "" : " [model check failed]"));
  if (package) {
    const Json& p = r["package"];
    const Json& source = p["source"];
    line(fmt::format("source        {} ({}, {} bytes), sha256 {}", json_text(source["name"]),
                     json_text(source["format"]), json_text(source["bytes"]),
                     json_text(source["sha256"])));
    line(fmt::format("graph         sha256 {}   created by {}", json_text(p["graph_sha256"]),
                     json_text(p["created_by"])));
    line(
        fmt::format("checksums     header, manifest {} and tensor table {} valid; tensor data: "
                    "synapse verify",
                    json_text(p["manifest_xxh3_128"]), json_text(p["tensor_table_xxh3_128"])));
  }
  for (const Json& problem : r["model_check"].value("problems", Json::array())) {
    line(fmt::format("  problem     {}: {} ({})", problem["code"].get<std::string>(),
                     problem["message"].get<std::string>(), problem.value("tensor", "")));
  }
  line(fmt::format("architecture  {}   name {}", json_text(r["architecture"]),
                   json_text(r["name"])));

  if (r.contains("hparams") && !r["hparams"].is_null()) {
    const Json& h = r["hparams"];
    line("hyper-parameters");
    line(fmt::format("  {} | vocab {} | context {} | embedding {} | feed-forward {} | blocks {}",
                     h["kind"].get<std::string>(), json_text(h["n_vocab"]),
                     json_text(h["n_ctx_train"]), json_text(h["n_embd"]), json_text(h["n_ff"]),
                     json_text(h["n_layer"])));
    line(fmt::format("  heads {} (KV {}) | head size k {} v {} | norm {} eps {}",
                     json_text(h["n_head"]), json_text(h["n_head_kv"]), json_text(h["head_dim_k"]),
                     json_text(h["head_dim_v"]), json_text(h["norm"]), json_text(h["norm_eps"])));
    if (h.contains("rope")) {
      const Json& rope = h["rope"];
      line(fmt::format("  rope {} | {} dims | base {} | scaling {} x{}", json_text(rope["layout"]),
                       json_text(rope["n_rot"]), json_text(rope["freq_base"]),
                       json_text(rope["scaling"]), json_text(rope["scaling_factor"])));
    }
    if (h.contains("pooling")) {
      line(fmt::format("  pooling {} | token types {} | causal {}", json_text(h["pooling"]),
                       json_text(h["n_token_types"]), json_text(h["causal"])));
    }
  }
  if (!r["tokenizer"].is_null()) {
    const Json& t = r["tokenizer"];
    line("tokenizer");
    line(fmt::format("  {} (pre {}) | {} tokens | {} merges | scores {} | chat template {}",
                     json_text(t["model"]), json_text(t["pre"]), json_text(t["tokens"]),
                     json_text(t["merges"]), t["has_scores"].get<bool>() ? "yes" : "no",
                     t["chat_template"].get<bool>() ? "yes" : "no"));
    line(fmt::format("  bos {} | eos {} | unk {} | pad {} | add_bos {}", special(t["bos"]),
                     special(t["eos"]), special(t["unk"]), special(t["pad"]),
                     json_text(t["add_bos"])));
  }
  line(fmt::format("parameters    {}", r["parameters"].get<uint64_t>()));
  if (package) {
    line(fmt::format(
        "bytes         header {} + manifest {} + tensor table {} + padding {} + tensor data {} "
        "+ tensor padding {}",
        layout["header_bytes"].get<uint64_t>(), layout["manifest_bytes"].get<uint64_t>(),
        layout["tensor_table_bytes"].get<uint64_t>(),
        layout["alignment_padding_bytes"].get<uint64_t>(),
        layout["tensor_data_bytes"].get<uint64_t>(),
        layout["tensor_padding_bytes"].get<uint64_t>()));
  } else {
    line(fmt::format(
        "bytes         header {} + metadata {} + tensor infos {} + padding {} + tensor data {} "
        "+ tensor padding {} + trailing {}",
        layout["header_bytes"].get<uint64_t>(), layout["metadata_bytes"].get<uint64_t>(),
        layout["tensor_info_bytes"].get<uint64_t>(),
        layout["alignment_padding_bytes"].get<uint64_t>(),
        layout["tensor_data_bytes"].get<uint64_t>(), layout["tensor_padding_bytes"].get<uint64_t>(),
        layout["trailing_bytes"].get<uint64_t>()));
  }

  line(fmt::format("metadata      {} keys", r["metadata"].size()));
  for (const Json& entry : r["metadata"]) {
    line(fmt::format("  {:<48} {:<6} {}", entry["key"].get<std::string>(),
                     entry["type"].get<std::string>(), metadata_value_text(entry)));
  }
  const Json& tensors = r["tensors"];
  line(fmt::format("tensors       {}", tensors.size()));
  constexpr size_t kShownTensors = 40;
  const size_t shown = show_all_tensors ? tensors.size() : std::min(tensors.size(), kShownTensors);
  if (shown > 0) {
    line(fmt::format("  {:<40} {:<8} {:<20} {:>14} {:>14}{}", "name", "type", "shape", "bytes",
                     "offset", package ? "  xxh3-128" : ""));
  }
  for (size_t i = 0; i < shown; ++i) {
    const Json& t = tensors[i];
    line(fmt::format("  {:<40} {:<8} {:<20} {:>14} {:>14}{}", t["name"].get<std::string>(),
                     t["type"].get<std::string>(), shape_text(t["shape"]),
                     t["bytes"].get<uint64_t>(), t["offset"].get<uint64_t>(),
                     package ? "  " + t["xxh3_128"].get<std::string>() : ""));
  }
  if (shown < tensors.size())
    line(fmt::format("  ... {} more (--all-tensors)", tensors.size() - shown));
  return out;
}

}  // namespace synapse::cli
