// SPDX-License-Identifier: Apache-2.0
#include "cli/chat_input.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace synapse::cli {
namespace {

constexpr std::string_view kBlockQuote = "\"\"\"";

}  // namespace

bool LineReader::fill(bool& interrupted) {
  interrupted = false;
  if (eof_) return false;
  char chunk[4096];
  if (interrupt_fd_ >= 0) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, -1);
    if ((ready < 0 && errno == EINTR) || (ready > 0 && (fds[1].revents & POLLIN) != 0)) {
      while (::read(interrupt_fd_, chunk, sizeof chunk) > 0) {
      }
      interrupted = true;
      return true;
    }
  }
  const ssize_t n = ::read(fd_, chunk, sizeof chunk);
  if (n < 0 && errno == EINTR) {
    interrupted = true;
    return true;
  }
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

InputEvent LineReader::read_line(std::string& line) {
  for (;;) {
    const size_t end = buffer_.find('\n');
    if (end != std::string::npos) {
      line.assign(buffer_, 0, end);
      buffer_.erase(0, end + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return InputEvent::kLine;
    }
    bool interrupted = false;
    if (!fill(interrupted)) {
      if (buffer_.empty()) return InputEvent::kEof;
      line = std::move(buffer_);
      buffer_.clear();
      return InputEvent::kLine;
    }
    if (interrupted) return InputEvent::kInterrupted;
  }
}

std::string LineReader::read_all() {
  bool interrupted = false;
  while (fill(interrupted)) {
  }
  std::string all = std::move(buffer_);
  buffer_.clear();
  return all;
}

InputEvent LineReader::read_line(std::string_view prompt, std::string& line) {
  if (prompt_out_ != nullptr) {
    std::fwrite(prompt.data(), 1, prompt.size(), prompt_out_);
    std::fflush(prompt_out_);
  }
  return read_line(line);
}

InputEvent read_message(LineSource& source, std::string& message) {
  message.clear();
  bool block = false;  // inside """ ... """
  bool continuation = false;
  std::string line;
  for (;;) {
    const InputEvent event = source.read_line(continuation ? kContinuationPrompt : kPrompt, line);
    if (event != InputEvent::kLine) return event;
    std::string_view text = line;
    if (!continuation && text.starts_with(kBlockQuote)) {
      text.remove_prefix(kBlockQuote.size());
      block = true;
    }
    if (block) {
      if (text.ends_with(kBlockQuote)) {
        text.remove_suffix(kBlockQuote.size());
        // A closing quote on a line of its own adds no line.
        if (text.empty() && message.ends_with('\n')) message.pop_back();
        message.append(text);
        return InputEvent::kLine;
      }
      // The opening quote on a line of its own starts no line.
      if (continuation || !text.empty()) {
        message.append(text);
        message.push_back('\n');
      }
      continuation = true;
      continue;
    }
    if (text.ends_with('\\')) {
      text.remove_suffix(1);
      message.append(text);
      message.push_back('\n');
      continuation = true;
      continue;
    }
    message.append(text);
    return InputEvent::kLine;
  }
}

}  // namespace synapse::cli
