// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of ollama_request_fuzz: bodies Ollama's clients send to each endpoint,
// each behind its selector byte.
//   make_ollama_request_seeds DIR
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
       R"({"model": "m", "prompt": "Why?", "system": "s", "stream": false, "keep_alive": "5m", "options": {"temperature": 0.2, "top_k": 3, "num_predict": 8, "stop": ["\n"], "seed": 1, "num_ctx": 2048}})"},
      {0, R"({"model": "m", "prompt": "p", "raw": true, "format": "json", "keep_alive": 0})"},
      {0,
       R"({"model": "m", "format": {"type": "object", "properties": {"a": {"type": "string"}}}, "images": []})"},
      {1,
       R"({"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"x": [1, null]}}}]}, {"role": "tool", "content": "1", "tool_name": "f"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})"},
      {1, R"({"model": "m", "messages": [], "keep_alive": -1, "stream": true})"},
      {2, R"({"model": "e", "input": ["a", "b"], "truncate": false, "keep_alive": "1h30m"})"},
      {2, R"({"model": "e", "input": "a"})"},
      {3, R"({"model": "e", "prompt": "hello"})"},
      {4, R"({"name": "m", "stream": false, "insecure": true})"},
      {5, R"({"source": "a", "destination": "b"})"},
  };
  int i = 0;
  for (const Seed& s : seeds) {
    std::ofstream out(dir + "/seed_" + std::to_string(i++), std::ios::binary);
    out.put(s.selector);
    out << s.body;
  }
  std::printf("make_ollama_request_seeds: %d seeds\n", i);
  return 0;
}
