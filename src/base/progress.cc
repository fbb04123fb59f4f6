// SPDX-License-Identifier: Apache-2.0
#include "base/progress.h"

#include <unistd.h>

namespace synapse {

ProgressLine::ProgressLine(std::string label, uint64_t total, std::FILE* stream)
    : label_(std::move(label)),
      total_(total),
      stream_(stream),
      enabled_(::isatty(::fileno(stream)) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

ProgressLine::~ProgressLine() {
  if (enabled_ && !finished_) {
    std::fputc('\n', stream_);
    std::fflush(stream_);
  }
}

void ProgressLine::update(uint64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(done);
}

void ProgressLine::draw(uint64_t done) {
  const double fraction =
      total_ == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stream_, "\r%s [%s] %5.1f%% %6.1fs", label_.c_str(), bar.c_str(), fraction * 100.0,
               seconds);
  std::fflush(stream_);
}

void ProgressLine::finish() {
  if (!enabled_ || finished_) return;
  draw(total_);
  std::fputc('\n', stream_);
  std::fflush(stream_);
  finished_ = true;
}

}  // namespace synapse
