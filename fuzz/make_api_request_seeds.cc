// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of api_request_fuzz: valid and near-valid bodies of each endpoint
// (completions, chat, tokenize, detokenize, embeddings, rerank, model pull),
// each behind its selector byte.
//   make_api_request_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  struct Seed {
    char selector;
    const char* body;
  };
  const Seed seeds[] = {
      {0,
       R"({"model": "m", "prompt": "Once upon", "max_tokens": 8, "temperature": 0.7, "stop": ["\n"], "logprobs": 2, "echo": true, "seed": 1})"},
      {0,
       R"({"prompt": [[1, 2, 3]], "stream": true, "stream_options": {"include_usage": true}, "logit_bias": {"5": -100}})"},
      {0, R"({"prompt": ["one", "two"], "n": 2, "max_tokens": -1})"},
      {1,
       R"({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}], "max_completion_tokens": 4, "top_k": 40, "min_p": 0.1, "logprobs": true, "top_logprobs": 2})"},
      {1,
       R"({"messages": [{"role": "user", "content": "w?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": [1, {\"b\": null}]}"}}]}, {"role": "tool", "tool_call_id": "c", "content": "1"}], "tools": [{"type": "function", "function": {"name": "f"}}]})"},
      {1,
       R"({"messages": [{"role": "user", "content": 5}], "response_format": {"type": "json_object"}})"},
      {2, R"({"content": "hello world", "add_special": true, "with_pieces": true})"},
      {3, R"({"tokens": [1, 2, 3, 2147483647]})"},
      {4,
       R"({"model": "e", "input": ["a", "b"], "encoding_format": "base64", "pooling": "mean", "normalize": false, "truncate": true, "dimensions": 8, "priority": "batch"})"},
      {4, R"({"input": [[1, 2], [3]]})"},
      {4, R"({"input": [1, 2, 3]})"},
      {5,
       R"({"model": "r", "query": "q", "documents": ["a", {"text": "b"}], "top_n": 1, "return_documents": false})"},
      {6, R"({"model": "hf.co/org/m-GGUF:Q4_K_M", "stream": true})"},
      {6, R"({"model": "org/m-GGUF", "file": "m-Q8_0.gguf", "stream": false})"},
  };
  int i = 0;
  for (const Seed& s : seeds) {
    std::ofstream out(dir + "/seed_" + std::to_string(i++), std::ios::binary);
    out.put(s.selector);
    out << s.body;
  }
  std::printf("make_api_request_seeds: %d seeds\n", i);
  return 0;
}
