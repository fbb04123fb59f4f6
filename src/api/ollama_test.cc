// SPDX-License-Identifier: Apache-2.0
// Ollama's bodies: the shapes its clients send, Ollama's defaults, refusals that name the field,
// and the response objects' exact keys.
#include "api/ollama.h"

#include <gtest/gtest.h>

namespace synapse::api {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
void expect_error(const Result<T>& r, ErrorCode code, const std::string& field) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_EQ(r.status().where().field, field) << r.status().to_string();
}

TEST(OllamaGenerate, DefaultsAreOllamas) {
  auto r = parse_ollama_generate(R"({"model": "m", "prompt": "hi"})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->common.model, "m");
  EXPECT_EQ(r->prompt, "hi");
  EXPECT_TRUE(r->common.stream);
  EXPECT_DOUBLE_EQ(r->common.sampling.temperature, 0.8);
  EXPECT_DOUBLE_EQ(r->common.sampling.top_p, 0.9);
  EXPECT_EQ(r->common.sampling.top_k, 40);
  EXPECT_FALSE(r->common.sampling.max_tokens);
  EXPECT_FALSE(r->common.keep_alive);
  EXPECT_EQ(r->common.format.kind, OutputFormat::Kind::kText);
}

TEST(OllamaGenerate, OptionsMapToTheSampler) {
  auto r = parse_ollama_generate(R"({"model": "m", "prompt": "p", "system": "s", "raw": true,
    "stream": false, "keep_alive": "10m", "format": "json",
    "options": {"temperature": 0, "top_p": 0.5, "top_k": 3, "min_p": 0.1, "seed": 7,
      "num_predict": 12, "stop": ["a", ""], "repeat_penalty": 1.2, "presence_penalty": 0.5,
      "frequency_penalty": 0.25, "num_ctx": 4096.0, "num_gpu": 99, "unknown": "x"}})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SamplingParams& s = r->common.sampling;
  EXPECT_DOUBLE_EQ(s.temperature, 0.0);
  EXPECT_DOUBLE_EQ(s.top_p, 0.5);
  EXPECT_EQ(s.top_k, 3);
  EXPECT_DOUBLE_EQ(s.min_p, 0.1);
  EXPECT_EQ(s.seed, 7);
  EXPECT_EQ(s.max_tokens, 12);
  EXPECT_EQ(s.stop, std::vector<std::string>{"a"});
  EXPECT_DOUBLE_EQ(s.repeat_penalty, 1.2);
  EXPECT_DOUBLE_EQ(s.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(s.frequency_penalty, 0.25);
  EXPECT_EQ(r->common.num_ctx, 4096);
  EXPECT_EQ(r->common.keep_alive, "10m");
  EXPECT_EQ(r->common.format.kind, OutputFormat::Kind::kJsonObject);
  EXPECT_FALSE(r->common.stream);
  EXPECT_TRUE(r->raw);
  EXPECT_EQ(r->system, "s");
}

TEST(OllamaGenerate, NegativeNumPredictAndSeedMeanUnboundedAndRandom) {
  auto r = parse_ollama_generate(
      R"({"model": "m", "options": {"num_predict": -1, "seed": -1}, "keep_alive": 0})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->common.sampling.max_tokens);
  EXPECT_FALSE(r->common.sampling.seed);
  EXPECT_EQ(r->common.keep_alive, "0");
  auto f = parse_ollama_generate(R"({"model": "m", "keep_alive": 1.5})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->common.keep_alive, "1500ms");
}

TEST(OllamaGenerate, SchemaFormat) {
  auto r = parse_ollama_generate(
      R"({"model": "m", "format": {"type": "object", "properties": {"a": {"type": "integer"}}}})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->common.format.kind, OutputFormat::Kind::kJsonSchema);
  EXPECT_EQ(r->common.format.schema["type"], "object");
  expect_error(parse_ollama_generate(R"({"model": "m", "format": "yaml"})"),
               ErrorCode::kInvalidValue, "format");
  expect_error(parse_ollama_generate(R"({"model": "m", "format": 3})"), ErrorCode::kInvalidType,
               "format");
}

TEST(OllamaGenerate, RefusesWhatItCannotHonour) {
  expect_error(parse_ollama_generate(R"({"model": "m", "images": ["aGk="]})"),
               ErrorCode::kUnsupportedParameter, "images");
  expect_error(parse_ollama_generate(R"({"model": "m", "template": "{{ .Prompt }}"})"),
               ErrorCode::kUnsupportedParameter, "template");
  expect_error(parse_ollama_generate(R"({"model": "m", "suffix": "end"})"),
               ErrorCode::kUnsupportedParameter, "suffix");
  expect_error(parse_ollama_generate(R"({"model": "m", "context": [1, 2]})"),
               ErrorCode::kUnsupportedParameter, "context");
  expect_error(parse_ollama_generate(R"({"model": "m", "think": true})"),
               ErrorCode::kUnsupportedParameter, "think");
  // Empty values are what clients send by default: accepted.
  EXPECT_TRUE(parse_ollama_generate(R"({"model": "m", "images": [], "suffix": ""})").ok());
}

TEST(OllamaGenerate, BadFieldsAreNamed) {
  expect_error(parse_ollama_generate(R"({"prompt": "p"})"), ErrorCode::kMissingParameter, "model");
  expect_error(parse_ollama_generate(R"({"model": "m", "options": {"top_k": "x"}})"),
               ErrorCode::kInvalidType, "options.top_k");
  expect_error(parse_ollama_generate(R"({"model": "m", "options": {"temperature": -1}})"),
               ErrorCode::kInvalidValue, "options.temperature");
  expect_error(parse_ollama_generate(R"({"model": "m", "options": {"stop": [1]}})"),
               ErrorCode::kInvalidType, "options.stop");
  expect_error(parse_ollama_generate(R"({"model": "m", "stream": "yes"})"), ErrorCode::kInvalidType,
               "stream");
  expect_error(parse_ollama_generate(R"({"model": "m", "keep_alive": []})"),
               ErrorCode::kInvalidType, "keep_alive");
  EXPECT_EQ(parse_ollama_generate("[1]").status().code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_ollama_generate(std::string(100, '[')).status().code(), ErrorCode::kInvalidJson);
}

TEST(OllamaChat, MessagesToolsAndToolCalls) {
  auto r = parse_ollama_chat(R"({"model": "m", "messages": [
      {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "f", "arguments": {"x": 1}}}]},
      {"role": "tool", "content": "42", "tool_name": "f"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[2].tool_calls.at(0).name, "f");
  EXPECT_EQ(r->messages[2].tool_calls.at(0).arguments, R"({"x":1})");
  EXPECT_EQ(r->messages[3].name, "f");
  EXPECT_TRUE(r->tools.is_array());
  EXPECT_TRUE(parse_ollama_chat(R"({"model": "m"})").ok());  // loads the model
  expect_error(parse_ollama_chat(R"({"model": "m", "messages": [{"role": "x", "content": ""}]})"),
               ErrorCode::kInvalidValue, "messages[0].role");
  expect_error(
      parse_ollama_chat(
          R"({"model": "m", "messages": [{"role": "user", "content": "", "images": ["x"]}]})"),
      ErrorCode::kUnsupportedParameter, "messages[0].images");
  expect_error(parse_ollama_chat(R"({"model": "m", "tools": [{"function": {}}]})"),
               ErrorCode::kInvalidType, "tools[0].function.name");
}

TEST(OllamaEmbed, InputShapesAndLegacyPrompt) {
  auto one = parse_ollama_embed(R"({"model": "e", "input": "a"})", false);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->inputs, std::vector<std::string>{"a"});
  EXPECT_TRUE(one->truncate);
  auto many =
      parse_ollama_embed(R"({"model": "e", "input": ["a", "b"], "truncate": false})", false);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->inputs.size(), 2u);
  EXPECT_FALSE(many->truncate);
  auto legacy = parse_ollama_embed(R"({"model": "e", "prompt": "p"})", true);
  ASSERT_TRUE(legacy.ok());
  EXPECT_TRUE(legacy->legacy);
  EXPECT_EQ(legacy->inputs, std::vector<std::string>{"p"});
  expect_error(parse_ollama_embed(R"({"model": "e", "input": [1]})", false),
               ErrorCode::kInvalidType, "input[0]");
}

TEST(OllamaModelRequests, ModelOrName) {
  EXPECT_EQ(parse_ollama_model_request(R"({"name": "a"})")->model, "a");
  EXPECT_EQ(parse_ollama_model_request(R"({"model": "b", "stream": false})")->model, "b");
  expect_error(parse_ollama_model_request("{}"), ErrorCode::kMissingParameter, "model");
  auto copy = parse_ollama_copy(R"({"source": "a", "destination": "b"})");
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->destination, "b");
  expect_error(parse_ollama_copy(R"({"source": "a"})"), ErrorCode::kMissingParameter,
               "destination");
}

TEST(OllamaResponses, TimeIsRfc3339WithNanoseconds) {
  EXPECT_EQ(ollama_time(1'700'000'000'123'456'789), "2023-11-14T22:13:20.123456789Z");
}

TEST(OllamaResponses, GenerateAndChatObjects) {
  const Json piece = Json::parse(ollama_reply({.model = "m", .created_ns = 0, .text = "hi"}));
  EXPECT_EQ(piece.dump(),
            R"({"model":"m","created_at":"1970-01-01T00:00:00.000000000Z","response":"hi",)"
            R"("done":false})");
  OllamaStats stats{.done_reason = "stop",
                    .total_ns = 9,
                    .load_ns = 1,
                    .prompt_eval_count = 3,
                    .prompt_eval_ns = 2,
                    .eval_count = 4,
                    .eval_ns = 5};
  const Json last = Json::parse(ollama_reply(
      {.model = "m", .chat = true, .tool_calls = {{"f", R"({"x": 1})"}}, .stats = &stats}));
  EXPECT_EQ(last["message"]["role"], "assistant");
  EXPECT_EQ(last["message"]["content"], "");
  EXPECT_EQ(last["message"]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(last["done"], true);
  EXPECT_EQ(last["done_reason"], "stop");
  EXPECT_EQ(last["eval_count"], 4);
  EXPECT_EQ(last["total_duration"], 9);
  EXPECT_EQ(ollama_error("boom"), R"({"error":"boom"})");
}

TEST(OllamaResponses, TagsAndPs) {
  OllamaModelEntry e{.name = "m:latest", .modified_unix_s = 0, .size_bytes = 10};
  const Json tags = Json::parse(ollama_tags({e}));
  EXPECT_EQ(tags["models"][0]["name"], "m:latest");
  EXPECT_EQ(tags["models"][0]["model"], "m:latest");
  EXPECT_EQ(tags["models"][0]["size"], 10);
  EXPECT_EQ(tags["models"][0]["details"]["format"], "gguf");
  EXPECT_TRUE(tags["models"][0].contains("modified_at"));
  const Json ps = Json::parse(ollama_ps({e}));
  EXPECT_EQ(ps["models"][0]["size_vram"], 0);
  EXPECT_EQ(ps["models"][0]["expires_at"], "9999-12-31T23:59:59.000000000Z");
  EXPECT_TRUE(ps["models"][0]["details"]["families"].is_null());  // no family: null, as Ollama
}

TEST(OllamaResponses, DetailsDigestAndShow) {
  const OllamaDetails details{.format = "gguf",
                              .family = "fam",
                              .parameter_size = "494.03M",
                              .quantization_level = "Q4_K_M"};
  OllamaModelEntry e{.name = "m", .digest = "ab12", .details = details};
  const Json entry = Json::parse(ollama_tags({e}))["models"][0];
  EXPECT_EQ(entry["digest"], "ab12");
  EXPECT_EQ(entry["details"], Json::parse(R"({"parent_model": "", "format": "gguf", "family": "fam",
                            "families": ["fam"], "parameter_size": "494.03M",
                            "quantization_level": "Q4_K_M"})"));
  OllamaShow show{.parameters = ollama_parameters({{"stop", "<|im_end|>"}, {"stop", "a\"b"}}),
                  .template_text = "{{ messages }}",
                  .details = details,
                  .capabilities = {"completion", "tools"},
                  .modified_unix_s = 1700000000};
  show.model_info["general.architecture"] = "fam";
  const Json s = Json::parse(ollama_show(show));
  EXPECT_EQ(s["details"], entry["details"]);
  EXPECT_EQ(s["model_info"]["general.architecture"], "fam");
  EXPECT_EQ(s["template"], "{{ messages }}");
  EXPECT_EQ(s["capabilities"], Json::array({"completion", "tools"}));
  EXPECT_EQ(s["modified_at"], "2023-11-14T22:13:20.000000000Z");
  // Ollama's layout: the name padded to 30 columns, the value a quoted literal, one per line.
  EXPECT_EQ(s["parameters"], std::string("stop") + std::string(27, ' ') + "\"<|im_end|>\"\n" +
                                 "stop" + std::string(27, ' ') + "\"a\\\"b\"");
  EXPECT_EQ(ollama_parameters({}), "");
}

}  // namespace
}  // namespace synapse::api
