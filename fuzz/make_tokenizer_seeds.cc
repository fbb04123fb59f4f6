// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of tokenizer_fuzz into a directory: short texts that reach the
// interesting paths (contractions, digits, white-space runs, CRLF, accents and NFD, CJK, emoji
// with joiners, special-token text, invalid UTF-8), each behind every selector byte, plus a
// minimal tokenizer.json for the loader mode.
//   make_tokenizer_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const char* const texts[] = {
      "Hello world! It's 2024, isn't it? I'VE 12345 apples.",
      "  leading and   inner spaces\t\ttabs\r\nCRLF\n\n\nend  ",
      "caf\xC3\xA9 cafe\xCC\x81 \xC3\x85ngstr\xC3\xB6m na\xC3\xAFve "
      "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82 "
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 "
      "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8 ok",
      "<|im_start|>user\nhi<|im_end|><s></s>[CLS][SEP]<unk><|endoftext|>",
      "bad \xFF\xFE utf8 \xC3 \xE2\x82 \xF0\x9F\x98 \xED\xA0\x80 \xC0\xAF end",
      "int main(void) { return x->y[3] != 0x1F && a <= b; } // comment",
      "\xE2\x96\x81"
      "already"
      "\xE2\x96\x81"
      "escaped \xC2\xA0nbsp \xE3\x80\x80ideographic",
  };
  int written = 0;
  for (const char* text : texts) {
    for (int selector = 0; selector < 16; ++selector) {
      const std::string path = dir + "/seed_" + std::to_string(written++);
      std::ofstream out(path, std::ios::binary);
      out.put(static_cast<char>(selector | ((selector & 3) << 4)));
      out << text;
    }
  }
  const char* const json =
      "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"\\u0120\":3},"
      "\"merges\":[\"a b\"]},\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":"
      "\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true},\"added_tokens\":[{\"id\":4,"
      "\"content\":\"<x>\",\"special\":true}]}";
  for (int selector = 0; selector < 16; ++selector) {
    std::ofstream out(dir + "/json_" + std::to_string(selector), std::ios::binary);
    out.put(static_cast<char>(selector));
    out << json;
  }
  std::printf("make_tokenizer_seeds: wrote %d seeds to %s\n", written + 16, dir.c_str());
  return 0;
}
