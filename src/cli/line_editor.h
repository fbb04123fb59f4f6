// SPDX-License-Identifier: Apache-2.0
// The line editor of `synapse run` on a terminal (readline's and Ollama's keys): the key decoder,
// the edit buffer, the history and the editor's state machine are pure (bytes in, bytes out) and
// tested without a terminal; TerminalLineSource is the thin layer that puts the terminal in raw
// mode while a line is edited and restores it on every way out.
// Goals: the keys people expect, correct redraws, UTF-8 aware cursor moves. Non-goals: display
// width of wide (CJK, emoji) and combining characters — every code point is one column and one
// cursor step; completion; a kill ring; a line that wraps across terminal rows (a long line
// scrolls horizontally within one row instead, which stays correct at any width).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/chat_input.h"

namespace synapse::cli {

enum class KeyKind {
  kText,  // `text` holds one UTF-8 character (or a printable control character such as Tab)
  kEnter,
  kBackspace,
  kDelete,
  kLeft,
  kRight,
  kWordLeft,
  kWordRight,
  kHome,
  kEnd,
  kUp,
  kDown,
  kKillToStart,       // Ctrl-U
  kKillToEnd,         // Ctrl-K
  kDeleteWordBefore,  // Ctrl-W
  kClearScreen,       // Ctrl-L
  kEndOfInput,        // Ctrl-D
  kInterrupt,         // Ctrl-C
  kIgnored,           // an unknown sequence, consumed whole
};

struct Key {
  KeyKind kind = KeyKind::kIgnored;
  std::string text;
};

// Decodes the key at the start of `bytes` into `key`; returns the bytes it used, or 0 when they
// are the start of a longer sequence. With `complete` (no more bytes are coming soon) a partial
// sequence is used anyway: a lone ESC is the Escape key (ignored), a cut character is ignored.
size_t decode_key(std::string_view bytes, bool complete, Key& key);

// The line being edited: UTF-8 text and a cursor (a byte offset, always at a character start).
class EditBuffer {
 public:
  const std::string& text() const { return text_; }
  size_t cursor() const { return cursor_; }
  // The cursor as a count of characters (code points) before it.
  size_t cursor_chars() const;
  void set(std::string text);  // the cursor goes to the end
  void clear() { set({}); }

  void insert(std::string_view text);
  bool left();   // false when nothing moved
  bool right();  // false when nothing moved
  void home() { cursor_ = 0; }
  void end() { cursor_ = text_.size(); }
  void word_left();
  void word_right();
  void backspace();
  void delete_forward();
  void kill_to_start();
  void kill_to_end();
  // Ctrl-W as readline's unix-word-rubout: the spaces before the cursor, then the word before
  // them.
  void delete_word_before();

 private:
  std::string text_;
  size_t cursor_ = 0;
};

// The lines entered, oldest first, bounded to the newest `max_entries`. A line equal to the last
// one, or empty, is not added again.
class History {
 public:
  static constexpr size_t kMaxEntries = 1000;
  explicit History(size_t max_entries = kMaxEntries) : max_entries_(max_entries) {}

  // Adds `line`; true when it was added.
  bool add(std::string_view line);
  const std::vector<std::string>& entries() const { return entries_; }
  // Replaces the entries with the lines of `text` (one entry a line; the newest max kept).
  void parse(std::string_view text);
  // The entries as a file holds them: one a line.
  std::string serialize() const;

 private:
  size_t max_entries_;
  std::vector<std::string> entries_;
};

// Where the history file lives: <state directory>/history (next to the model store and the job
// database); empty when there is no state directory.
std::string default_history_path();

// The editor's state machine for one line at a time. Keys go in; what to write to the terminal
// comes out, for a terminal `columns` wide.
class LineEditor {
 public:
  explicit LineEditor(History& history) : history_(history) {}

  enum class Outcome {
    kEditing,      // more keys needed
    kLine,         // Enter: line() is the line (added to the history), the cursor on a new row
    kEndOfInput,   // Ctrl-D on an empty line
    kInterrupted,  // Ctrl-C on an empty line (on a line with text, Ctrl-C clears it)
  };

  // Starts a line: the prompt is shown and the buffer is empty.
  void start(std::string_view prompt, std::string& out);
  Outcome apply(const Key& key, size_t columns, std::string& out);
  const std::string& line() const { return buffer_.text(); }
  const EditBuffer& buffer() const { return buffer_; }

 private:
  void recall(size_t index);
  void refresh(size_t columns, std::string& out);

  History& history_;
  EditBuffer buffer_;
  std::string prompt_;
  // History navigation: the entries and the line being typed (last), each as edited so far on
  // this line; `at_` is the one shown.
  std::vector<std::string> recalled_;
  size_t at_ = 0;
  size_t scroll_chars_ = 0;  // the first character shown when the line is wider than the row
};

// The line a terminal shows for `prompt` and `text` with the cursor `cursor_chars` characters
// in, on one row `columns` wide: `scroll_chars` (updated) is the first character shown, so the
// cursor always is on screen. Control characters show as spaces.
std::string render_line(std::string_view prompt, std::string_view text, size_t cursor_chars,
                        size_t columns, size_t& scroll_chars);

// True when both stdin and stdout are terminals (the editor's condition).
bool stdio_is_terminal();

// Lines read through a LineEditor on the terminal at `in_fd` (output to `out_fd`). The terminal
// is raw only while a line is edited; raw mode is undone before read_line returns, and by
// SIGTERM, SIGHUP and SIGQUIT, which then kill the process as they would have. A byte on
// `interrupt_fd` (the Ctrl-C pipe) acts as Ctrl-C. The history is loaded from `history_path`
// and each line is added to it there; an empty path keeps the history in memory only.
class TerminalRawMode;

class TerminalLineSource : public LineSource {
 public:
  TerminalLineSource(int in_fd, int out_fd, int interrupt_fd, std::string history_path);
  ~TerminalLineSource() override;
  InputEvent read_line(std::string_view prompt, std::string& line) override;
  const History& history() const { return history_; }

 private:
  InputEvent edit(std::string_view prompt, std::string& line);
  bool read_more();           // false at the end of input or on an error
  void save_history() const;  // best effort: a failure must not end the conversation
  void write_out(const std::string& bytes) const;

  int in_fd_;
  int out_fd_;
  int interrupt_fd_;
  std::string history_path_;
  History history_;
  LineEditor editor_{history_};
  std::string pending_;  // bytes read and not yet decoded (a paste, a partial sequence)
  LineReader fallback_;  // when the terminal refuses raw mode
  std::unique_ptr<TerminalRawMode> raw_;  // on while a line is edited (and between Ctrl-C and
                                          // the next prompt)
};

}  // namespace synapse::cli
