// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of http_fuzz: one connection's bytes per file — a request to each route
// of `synapse serve`, pipelined pairs, chunked bodies, multipart uploads and broken framing.
//   make_http_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string post(const std::string& path, const std::string& body,
                 const std::string& type = "application/json") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string multipart =
      "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--b\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n"
      R"({"custom_id":"a","method":"POST","url":"/v1/completions","body":{"prompt":"x","max_tokens":2}})"
      "\r\n--b--\r\n";
  const std::vector<std::string> seeds = {
      get("/health"),
      get("/v1/models"),
      get("/metrics"),
      post("/v1/completions", R"({"model":"tiny","prompt":"Once","max_tokens":4,"temperature":0})"),
      post("/v1/completions", R"({"prompt":[1,2,3],"max_tokens":3,"stream":true,"logprobs":2})"),
      post("/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true})"),
      post("/tokenize", R"({"content":"Hello world","with_pieces":true})"),
      post("/detokenize", R"({"tokens":[1,2,3]})"),
      post("/v1/embeddings", R"({"input":["a","b"],"encoding_format":"base64"})"),
      post("/v1/rerank", R"({"query":"q","documents":["a"]})"),
      post("/v1/jobs",
           R"({"requests":[{"custom_id":"a","url":"/v1/completions","body":{"prompt":"x"}}]})"),
      get("/v1/jobs?limit=2&status=queued"),
      get("/v1/jobs/job-1/results?page=0"),
      "POST /v1/jobs/job-1/cancel HTTP/1.1\r\n\r\n",
      post("/v1/files", multipart, "multipart/form-data; boundary=b"),
      get("/v1/files"),
      post("/v1/batches",
           R"({"input_file_id":"file-1","endpoint":"/v1/completions","completion_window":"24h"})"),
      get("/v1/batches/batch-1"),
      get("/health") + get("/v1/models"),
      "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "c\r\n{\"prompt\":1}\r\n0\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
      "DELETE /v1/files/file-1 HTTP/1.1\r\nAuthorization: Bearer k\r\n\r\n",
  };
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(dir + "/seed-" + std::to_string(i), std::ios::binary);
    out << seeds[i];
  }
  return 0;
}
