// SPDX-License-Identifier: Apache-2.0
// Input of `synapse run`: lines read from a file descriptor with read(2), so that a signal
// (Ctrl-C) interrupts a wait instead of being retried away as stdio does, and messages made of
// several lines as Ollama reads them: `"""` opens and closes a block, a line ending in `\`
// continues on the next.
#pragma once

#include <functional>
#include <string>

namespace synapse::cli {

enum class InputEvent { kLine, kEof, kInterrupted };

class LineReader {
 public:
  // `interrupt_fd`, when not -1, is the read end of a pipe a signal handler writes to: a byte
  // there ends a wait as kInterrupted (and is consumed), whenever the signal came.
  explicit LineReader(int fd, int interrupt_fd = -1) : fd_(fd), interrupt_fd_(interrupt_fd) {}
  // The next line without its end ("\n" or "\r\n"). kInterrupted when a signal interrupted the
  // wait (see interrupt_fd; or EINTR); a last line without "\n" is a line.
  InputEvent read_line(std::string& line);
  // Everything left until the end of input (a piped prompt).
  std::string read_all();

 private:
  // One read(2) into buffer_; false at the end of input, kInterrupted through `interrupted`.
  bool fill(bool& interrupted);

  int fd_;
  int interrupt_fd_;
  std::string buffer_;
  bool eof_ = false;
};

// One message or command. `prompt(continuation)` is called before each line is read (">>> " for
// the first, "... " for the next ones). kInterrupted or kEof in the middle of a message drop it.
InputEvent read_message(LineReader& reader, std::string& message,
                        const std::function<void(bool continuation)>& prompt);

}  // namespace synapse::cli
