// SPDX-License-Identifier: Apache-2.0
#include "base/progress.h"

#include <unistd.h>

namespace synapse {

ProgressLine::ProgressLine(std::string label, uint64_t total, std::FILE* stream, ProgressUnit unit)
    : label_(std::move(label)),
      total_(total),
      stream_(stream),
      enabled_(::isatty(::fileno(stream)) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)),
      unit_(unit) {}

ProgressLine::~ProgressLine() {
  if (enabled_ && !finished_) {
    std::fputc('\n', stream_);
    std::fflush(stream_);
  }
}

void ProgressLine::update(uint64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    first_done_ = done;
    first_time_ = now;
  }
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
  if (unit_ == ProgressUnit::kBytes) {
    constexpr double kMb = 1e6;
    const double since =
        started_
            ? std::chrono::duration<double>(std::chrono::steady_clock::now() - first_time_).count()
            : 0.0;
    const double rate =
        since > 0.0 && done > first_done_ ? static_cast<double>(done - first_done_) / since : 0.0;
    char eta[32] = "--:--";
    if (rate > 0.0 && total_ > done) {
      const auto left = static_cast<uint64_t>(static_cast<double>(total_ - done) / rate);
      std::snprintf(eta, sizeof eta, "%llu:%02llu", static_cast<unsigned long long>(left / 60),
                    static_cast<unsigned long long>(left % 60));
    }
    // Trailing spaces wipe what a longer previous line left.
    std::fprintf(stream_, "\r%s [%s] %5.1f%% %.1f/%.1f MB %6.1f MB/s ETA %s   ", label_.c_str(),
                 bar.c_str(), fraction * 100.0, static_cast<double>(done) / kMb,
                 static_cast<double>(total_) / kMb, rate / kMb, eta);
  } else {
    std::fprintf(stream_, "\r%s [%s] %5.1f%% %6.1fs", label_.c_str(), bar.c_str(), fraction * 100.0,
                 seconds);
  }
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
