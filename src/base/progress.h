// SPDX-License-Identifier: Apache-2.0
// A one-line progress indicator for long work (conversion, synthesis, benchmarks). It draws only
// when the stream is a terminal, at most ten times a second, and is silent otherwise, so logs and
// pipes stay clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace synapse {

// kBytes adds the amount, the rate and the time left ("12.3/45.6 MB  3.4 MB/s  ETA 0:10"); the
// rate counts from the first update, so a resumed download's old bytes do not inflate it.
enum class ProgressUnit { kNone, kBytes };

class ProgressLine {
 public:
  ProgressLine(std::string label, uint64_t total, std::FILE* stream = stderr,
               ProgressUnit unit = ProgressUnit::kNone);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  void update(uint64_t done);
  void finish();  // draws 100% and ends the line

 private:
  void draw(uint64_t done);
  std::string label_;
  uint64_t total_;
  std::FILE* stream_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  ProgressUnit unit_;
  bool started_ = false;  // first update seen: first_done_ and first_time_ are set
  uint64_t first_done_ = 0;
  std::chrono::steady_clock::time_point first_time_;
};

}  // namespace synapse
