// SPDX-License-Identifier: Apache-2.0
#include "request/model_details.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "format/gguf/gguf_keys.h"
#include "format/model_file.h"

namespace synapse::request {
namespace {

constexpr std::string_view kParameterCountKey = "general.parameter_count";
// Keys whose token ids end a generation (as serve::end_of_generation_tokens reads them).
constexpr std::string_view kStopTokenKeys[] = {
    gguf_key::kTokenizerEosId, "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"};
// The listing of a store rarely holds more; past this the cache starts over rather than grow
// without bound when files come and go under a long-running server.
constexpr size_t kMaxCachedFiles = 512;

// llama.cpp's enum llama_ftype, by value: the names Ollama shows as `quantization_level`.
// Values missing here were removed from llama.cpp (or are its "guessed" marker, 1024).
struct FileTypeName {
  uint32_t value;
  std::string_view name;
};
constexpr FileTypeName kFileTypeNames[] = {
    {0, "F32"},     {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},    {4, "Q4_1_F16"},
    {7, "Q8_0"},    {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"},
    {12, "Q3_K_M"}, {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"}, {16, "Q5_K_S"},
    {17, "Q5_K_M"}, {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"},
    {22, "IQ3_XS"}, {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},
    {27, "IQ3_M"},  {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},
    {32, "BF16"},   {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4"},
};

// A float32 as the decimal it was written from (1e-06, not 9.99999997e-07): the shortest text
// that reads back to the same float, read as a double.
double shortest_double(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

// A metadata value as model_info shows it; null for arrays.
nlohmann::ordered_json info_value(const GgufValue& v) {
  switch (v.type()) {
    case GgufValueType::kArray:
      return nullptr;
    case GgufValueType::kString:
      return std::string(v.to_string().value_or(""));
    case GgufValueType::kBool:
      return v.to_bool().value_or(false);
    case GgufValueType::kFloat32:
      return shortest_double(static_cast<float>(v.to_double().value_or(0.0)));
    case GgufValueType::kFloat64:
      return v.to_double().value_or(0.0);
    case GgufValueType::kInt8:
    case GgufValueType::kInt16:
    case GgufValueType::kInt32:
    case GgufValueType::kInt64:
      return v.to_int().value_or(0);
    default:
      return v.to_uint().value_or(0);
  }
}

// The type most of the weights (matrices, by element count) are stored in.
std::string commonest_weight_type(const ModelFile& file) {
  std::map<TensorType, uint64_t> elements;
  for (const TensorView& t : file.tensor_views()) {
    if (t.n_dims >= 2) elements[t.type] += t.element_count();
  }
  const auto most =
      std::max_element(elements.begin(), elements.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == elements.end() ? std::string() : std::string(tensor_type_name(most->first));
}

std::vector<std::string> stop_texts(const GgufMetadata& metadata) {
  std::vector<std::string> out;
  const GgufValue* tokens = metadata.find(gguf_key::kTokenizerTokens);
  if (tokens == nullptr || !tokens->is_array()) return out;
  const std::span<const std::string_view> texts = tokens->strings();
  for (std::string_view key : kStopTokenKeys) {
    const Result<uint64_t> id = metadata.get_u64(key);
    if (!id.ok() || *id >= texts.size()) continue;
    std::string text(texts[*id]);
    if (!text.empty() && std::find(out.begin(), out.end(), text) == out.end()) {
      out.push_back(std::move(text));
    }
  }
  return out;
}

Result<std::shared_ptr<const ModelDetails>> parse_details(const std::string& path) {
  SYN_ASSIGN_OR_RETURN(const std::unique_ptr<ModelFile> file, open_model_file(path));
  const GgufMetadata& metadata = file->metadata();
  auto d = std::make_shared<ModelDetails>();
  d->format = std::string(file->format_name());
  if (const Result<std::string_view> arch = metadata.get_string(gguf_key::kArchitecture);
      arch.ok()) {
    d->family = std::string(*arch);
  }
  if (const Result<uint64_t> n = metadata.get_u64(kParameterCountKey); n.ok()) {
    d->parameter_count = *n;
  } else {
    for (const TensorView& t : file->tensor_views()) d->parameter_count += t.element_count();
  }
  d->parameter_size = parameter_size_text(d->parameter_count);
  if (const Result<uint32_t> ft = metadata.get_u32(gguf_key::kFileType); ft.ok()) {
    d->quantization_level = std::string(file_type_name(*ft));
  }
  if (d->quantization_level.empty()) d->quantization_level = commonest_weight_type(*file);

  std::vector<const GgufKeyValue*> entries;
  for (const GgufKeyValue& kv : metadata.entries()) {
    if (kv.key.starts_with(gguf_key::kChatTemplate)) continue;  // `template` has it
    entries.push_back(&kv);
  }
  std::sort(entries.begin(), entries.end(),
            [](const GgufKeyValue* a, const GgufKeyValue* b) { return a->key < b->key; });
  nlohmann::ordered_json info = nlohmann::ordered_json::object();
  bool has_count = false;
  for (const GgufKeyValue* kv : entries) {
    if (!has_count && kv->key > kParameterCountKey) {
      info[std::string(kParameterCountKey)] = d->parameter_count;
      has_count = true;
    }
    has_count = has_count || kv->key == kParameterCountKey;
    info[std::string(kv->key)] = info_value(kv->value);
  }
  if (!has_count) info[std::string(kParameterCountKey)] = d->parameter_count;
  d->model_info = std::move(info);
  d->stop = stop_texts(metadata);
  return std::shared_ptr<const ModelDetails>(std::move(d));
}

struct CacheEntry {
  uint64_t size_bytes = 0;
  int64_t mtime_ns = 0;
  Result<std::shared_ptr<const ModelDetails>> details;
};

std::mutex cache_mu;
std::map<std::string, CacheEntry>& cache() {
  static auto* entries = new std::map<std::string, CacheEntry>();  // never destroyed: no exit race
  return *entries;
}

}  // namespace

std::string parameter_size_text(uint64_t count) {
  constexpr double kThousand = 1e3;
  constexpr double kMillion = 1e6;
  constexpr double kBillion = 1e9;
  constexpr double kTrillion = 1e12;
  const auto n = static_cast<double>(count);
  char buf[48];
  // Whole numbers without decimals; else one decimal for B and T, two for M (Ollama's choice).
  const auto scaled = [&](double unit, int decimals, char suffix) {
    const double v = n / unit;
    (void)std::snprintf(buf, sizeof buf, "%.*f%c", v == std::floor(v) ? 0 : decimals, v, suffix);
    return std::string(buf);
  };
  if (n >= kTrillion) return scaled(kTrillion, 1, 'T');
  if (n >= kBillion) return scaled(kBillion, 1, 'B');
  if (n >= kMillion) return scaled(kMillion, 2, 'M');
  if (n >= kThousand) return scaled(kThousand, 0, 'K');
  return std::to_string(count);
}

std::string_view file_type_name(uint32_t file_type) {
  for (const FileTypeName& f : kFileTypeNames) {
    if (f.value == file_type) return f.name;
  }
  return {};
}

Result<std::shared_ptr<const ModelDetails>> read_model_details(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return parse_details(path);  // the reader says why
  const auto size_bytes = static_cast<uint64_t>(st.st_size);
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                           static_cast<int64_t>(st.st_mtim.tv_nsec);
  {
    std::lock_guard lock(cache_mu);
    const auto it = cache().find(path);
    if (it != cache().end() && it->second.size_bytes == size_bytes &&
        it->second.mtime_ns == mtime_ns) {
      return it->second.details;
    }
  }
  // Parsed outside the lock: one slow header does not hold up listings of the others.
  Result<std::shared_ptr<const ModelDetails>> details = parse_details(path);
  std::lock_guard lock(cache_mu);
  if (cache().size() >= kMaxCachedFiles) cache().clear();
  cache().insert_or_assign(path, CacheEntry{size_bytes, mtime_ns, details});
  return details;
}

}  // namespace synapse::request
