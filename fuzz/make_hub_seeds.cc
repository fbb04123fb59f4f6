// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of hub_parsers_fuzz into a directory: hub model infos (first byte 0)
// and Ollama manifests (first byte 1), valid and not.
//   make_hub_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string sha(64, 'a');
  const std::string info[] = {
      R"({"_id":"x","id":"org/m","sha":"0123456789abcdef0123456789abcdef01234567","siblings":[)"
      R"({"rfilename":"README.md","size":10,"blobId":"b"},{"rfilename":"sub/m-Q4_K_M.gguf",)"
      R"("size":1000,"lfs":{"sha256":")" +
          sha + R"(","size":1000,"pointerSize":134}}]})",
      R"({"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"a.gguf"}]})",
      R"({"sha":"x","siblings":[{"rfilename":"../a"},{"rfilename":"a","lfs":null}]})",
  };
  const std::string manifest[] = {
      R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
      R"("config":{"digest":"sha256:)" +
          sha +
          R"(","size":1},"layers":[{"mediaType":)"
          R"("application/vnd.ollama.image.model","digest":"sha256:)" +
          sha + R"(","size":7}]})",
      R"({"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"x"}]})",
  };
  int written = 0;
  auto write = [&](char selector, const std::string& text) {
    std::ofstream out(dir + "/seed_" + std::to_string(written++), std::ios::binary);
    out.put(selector);
    out << text;
  };
  for (const std::string& text : info) write(0, text);
  for (const std::string& text : manifest) write(1, text);
  return 0;
}
