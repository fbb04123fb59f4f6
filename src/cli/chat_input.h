// SPDX-License-Identifier: Apache-2.0
// Input of `synapse run`: lines read from a file descriptor with read(2), so that a signal
// (Ctrl-C) interrupts a wait instead of being retried away as stdio does, and messages made of
// several lines as Ollama reads them: `"""` opens and closes a block, a line ending in `\`
// continues on the next. On a terminal the lines come from the line editor (line_editor.h)
// instead; both are LineSources.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace synapse::cli {

enum class InputEvent { kLine, kEof, kInterrupted };

// Where the lines of messages come from.
class LineSource {
 public:
  virtual ~LineSource() = default;
  // The next line without its end, after showing `prompt` where the source shows prompts.
  virtual InputEvent read_line(std::string_view prompt, std::string& line) = 0;
};

class LineReader : public LineSource {
 public:
  // `interrupt_fd`, when not -1, is the read end of a pipe a signal handler writes to: a byte
  // there ends a wait as kInterrupted (and is consumed), whenever the signal came. Prompts go to
  // `prompt_out` (flushed) when it is not null.
  explicit LineReader(int fd, int interrupt_fd = -1, std::FILE* prompt_out = nullptr)
      : fd_(fd), interrupt_fd_(interrupt_fd), prompt_out_(prompt_out) {}
  // The next line without its end ("\n" or "\r\n"). kInterrupted when a signal interrupted the
  // wait (see interrupt_fd; or EINTR); a last line without "\n" is a line.
  InputEvent read_line(std::string& line);
  InputEvent read_line(std::string_view prompt, std::string& line) override;
  // Everything left until the end of input (a piped prompt).
  std::string read_all();

 private:
  // One read(2) into buffer_; false at the end of input, kInterrupted through `interrupted`.
  bool fill(bool& interrupted);

  int fd_;
  int interrupt_fd_;
  std::FILE* prompt_out_;
  std::string buffer_;
  bool eof_ = false;
};

// The prompts of a message's first line and of the lines that continue it.
inline constexpr std::string_view kPrompt = ">>> ";
inline constexpr std::string_view kContinuationPrompt = "... ";

// One message or command, its lines read with kPrompt, then kContinuationPrompt. kInterrupted or
// kEof in the middle of a message drop it.
InputEvent read_message(LineSource& source, std::string& message);

}  // namespace synapse::cli
