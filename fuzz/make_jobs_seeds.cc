// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of jobs_jsonl_fuzz into a directory: JSONL submissions and JSON bodies
// with valid and invalid lines (first byte: even = JSONL, odd = JSON form).
//   make_jobs_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const char* const jsonl[] = {
      R"({"custom_id":"a","method":"POST","url":"/v1/completions","body":{"prompt":"hi","max_tokens":8}})"
      "\n"
      R"({"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"x"}]}})"
      "\n",
      R"({"custom_id":"e","method":"POST","url":"/v1/embeddings","body":{"input":["a","b"]}})"
      "\r\n\r\nnot json\n"
      R"({"custom_id":"e","method":"POST","url":"/v1/embeddings","body":{}})"
      "\n"
      R"({"custom_id":"f","method":"GET","url":"/v1/x","body":[]})",
      R"({"custom_id":"\u00e9\ud83d\ude00","method":"POST","url":"/v1/completions","body":{"prompt":"\n\"","n":1.5e3,"stop":null,"b":true}})",
  };
  const char* const json_form[] = {
      R"({"class":"background","execution_ttl_s":3600,"requests":[{"custom_id":"a","url":"/v1/completions","body":{"prompt":"p"}},{"custom_id":"b","url":"/v1/embeddings","body":{"input":"x"}}]})",
      R"({"requests":[{"custom_id":"a","url":"/v1/completions","body":{}},{"custom_id":"a"},7,[]],"retention_ttl_s":-1})",
  };
  int written = 0;
  auto write = [&](char selector, const char* text) {
    std::ofstream out(dir + "/seed_" + std::to_string(written++), std::ios::binary);
    out.put(selector);
    out << text;
  };
  for (const char* text : jsonl) write(0, text);
  for (const char* text : json_form) write(1, text);
  return 0;
}
