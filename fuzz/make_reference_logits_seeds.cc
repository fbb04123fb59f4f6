// SPDX-License-Identifier: Apache-2.0
// Writes small valid reference-logits files (with and without BOS, several shapes) as seeds.
#include <cstdio>
#include <string>
#include <vector>

#include "eval/reference_logits_file.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  struct Shape {
    uint32_t vocab, ctx, chunks;
    bool bos;
  };
  const Shape shapes[] = {{5, 4, 2, true}, {17, 8, 3, false}, {3, 6, 1, true}};
  int index = 0;
  for (const Shape& s : shapes) {
    synapse::ReferenceLogitsHeader h;
    h.n_vocab = s.vocab;
    h.n_ctx = s.ctx;
    h.n_chunks = s.chunks;
    h.first_row = s.ctx / 2;
    h.n_rows = s.ctx - 1 - h.first_row;
    h.add_bos = s.bos;
    h.bos_id = s.bos ? 1 : -1;
    h.n_tokens = static_cast<uint64_t>(s.ctx) * s.chunks + 1;
    std::vector<int32_t> tokens(h.n_tokens);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % s.vocab);
    auto writer = synapse::ReferenceLogitsWriter::create(
        dir + "/seed_" + std::to_string(index++) + ".logits", h, tokens);
    if (!writer.ok()) return 1;
    std::vector<float> logits(static_cast<size_t>(h.n_rows) * h.n_vocab);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i) * 0.25f - 1.0f;
    for (uint32_t c = 0; c < h.n_chunks; ++c) {
      if (!writer->append_chunk(logits).ok()) return 1;
    }
    if (!writer->commit().ok()) return 1;
  }
  return 0;
}
