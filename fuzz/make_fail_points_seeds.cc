// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of fail_points_fuzz into a directory: SYNAPSE_FAILPOINTS values, valid
// and not.
//   make_fail_points_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const char* const seeds[] = {
      "engine.step=crash@3",
      "engine.prompt=hang:<<HANG>>",
      "engine.prompt=alloc@2:a@b:c=d,serve.step_delay_ms=5,http.write_delay_ms=100",
      "engine.step=abort,engine.prompt=crash@18446744073709551615:x",
      "engine.step=crash,engine.step=abort",
      "engine.step=crash:marker",
      "serve.step_delay_ms=-1",
      "nope=crash",
      ",",
  };
  int written = 0;
  for (const char* seed : seeds) {
    std::ofstream(dir + "/seed_" + std::to_string(written++), std::ios::binary) << seed;
  }
  return 0;
}
