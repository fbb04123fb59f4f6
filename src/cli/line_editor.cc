// SPDX-License-Identifier: Apache-2.0
#include "cli/line_editor.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/paths.h"
#include "base/utf8.h"

namespace synapse::cli {
namespace {

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Code points in valid UTF-8 `text`: each one is one column and one cursor step (see the header).
size_t count_chars(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !is_continuation_byte(c); }));
}

// The byte offset of character `chars` of `text` (its size past the end).
size_t byte_of_char(std::string_view text, size_t chars) {
  size_t i = 0;
  for (; i < text.size(); ++i) {
    if (!is_continuation_byte(text[i]) && chars-- == 0) return i;
  }
  return text.size();
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

Key key_of(KeyKind kind) { return Key{kind, {}}; }

// The first number of a CSI sequence's parameters ("3;5" is 3), or -1.
int first_parameter(std::string_view parameters) {
  int value = -1;
  for (const char c : parameters) {
    if (c < '0' || c > '9') break;
    value = (value < 0 ? 0 : value * 10) + (c - '0');
    if (value > 9999) return -1;
  }
  return value;
}

// A cursor key's final byte (CSI or SS3): A-D, H, F. `modified` (Ctrl or Alt held) makes
// Left/Right move by words.
KeyKind cursor_key(char final_byte, bool modified) {
  switch (final_byte) {
    case 'A':
      return KeyKind::kUp;
    case 'B':
      return KeyKind::kDown;
    case 'C':
      return modified ? KeyKind::kWordRight : KeyKind::kRight;
    case 'D':
      return modified ? KeyKind::kWordLeft : KeyKind::kLeft;
    case 'H':
      return KeyKind::kHome;
    case 'F':
      return KeyKind::kEnd;
    default:
      return KeyKind::kIgnored;
  }
}

// ESC sequences: CSI (ESC [ parameters intermediates final), SS3 (ESC O final) and Alt+key.
size_t decode_escape(std::string_view b, bool complete, Key& key) {
  key = key_of(KeyKind::kIgnored);
  if (b.size() < 2) return complete ? 1 : 0;
  if (b[1] == '[') {
    size_t i = 2;
    while (i < b.size() && b[i] >= 0x30 && b[i] <= 0x3F) ++i;  // parameters
    const std::string_view parameters = b.substr(2, i - 2);
    while (i < b.size() && b[i] >= 0x20 && b[i] <= 0x2F) ++i;  // intermediates
    if (i == b.size()) return complete ? i : 0;
    const char final_byte = b[i];
    if (final_byte < 0x40 || final_byte > 0x7E) return i;  // malformed: drop what came before
    if (final_byte == '~') {
      switch (first_parameter(parameters)) {
        case 1:
        case 7:
          key = key_of(KeyKind::kHome);
          break;
        case 4:
        case 8:
          key = key_of(KeyKind::kEnd);
          break;
        case 3:
          key = key_of(KeyKind::kDelete);
          break;
        default:
          break;
      }
    } else {
      // "1;5C" is Ctrl-Right, "1;3C" Alt-Right.
      key = key_of(cursor_key(final_byte, parameters.find(';') != std::string_view::npos));
    }
    return i + 1;
  }
  if (b[1] == 'O') {
    if (b.size() < 3) return complete ? 2 : 0;
    key = key_of(cursor_key(b[2], false));
    return 3;
  }
  switch (b[1]) {
    case 'b':
      key = key_of(KeyKind::kWordLeft);
      return 2;
    case 'f':
      key = key_of(KeyKind::kWordRight);
      return 2;
    case 0x7f:
      key = key_of(KeyKind::kDeleteWordBefore);  // Alt-Backspace
      return 2;
    default:
      // Another Alt+key: ignored whole; ESC before anything else is a lone Escape.
      return b[1] > 0x20 && b[1] < 0x7f ? 2 : 1;
  }
}

// A UTF-8 character's length from its first byte; 0 when no character starts with it.
size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

size_t decode_key(std::string_view b, bool complete, Key& key) {
  key = key_of(KeyKind::kIgnored);
  if (b.empty()) return 0;
  const auto c = static_cast<unsigned char>(b[0]);
  switch (c) {
    case 0x1b:
      return decode_escape(b, complete, key);
    case '\r':
      key = key_of(KeyKind::kEnter);
      return b.size() > 1 && b[1] == '\n' ? 2 : 1;  // a pasted "\r\n" is one line end
    case '\n':
      key = key_of(KeyKind::kEnter);
      return 1;
    case '\t':
      key = Key{KeyKind::kText, "\t"};
      return 1;
    case 0x01:
      key = key_of(KeyKind::kHome);
      return 1;
    case 0x02:
      key = key_of(KeyKind::kLeft);
      return 1;
    case 0x03:
      key = key_of(KeyKind::kInterrupt);
      return 1;
    case 0x04:
      key = key_of(KeyKind::kEndOfInput);
      return 1;
    case 0x05:
      key = key_of(KeyKind::kEnd);
      return 1;
    case 0x06:
      key = key_of(KeyKind::kRight);
      return 1;
    case 0x08:
    case 0x7f:
      key = key_of(KeyKind::kBackspace);
      return 1;
    case 0x0b:
      key = key_of(KeyKind::kKillToEnd);
      return 1;
    case 0x0c:
      key = key_of(KeyKind::kClearScreen);
      return 1;
    case 0x0e:
      key = key_of(KeyKind::kDown);
      return 1;
    case 0x10:
      key = key_of(KeyKind::kUp);
      return 1;
    case 0x15:
      key = key_of(KeyKind::kKillToStart);
      return 1;
    case 0x17:
      key = key_of(KeyKind::kDeleteWordBefore);
      return 1;
    default:
      break;
  }
  if (c < 0x20) return 1;  // another control key: ignored
  const size_t length = utf8_length(c);
  if (length == 0) return 1;  // a stray continuation byte or an invalid lead: ignored
  const size_t have = std::min(length, b.size());
  for (size_t i = 1; i < have; ++i) {
    if (!is_continuation_byte(b[i])) return i;  // cut short: the bytes so far are ignored
  }
  if (have < length) return complete ? have : 0;
  if (!is_valid_utf8(b.substr(0, length))) return length;  // overlong or a surrogate
  key = Key{KeyKind::kText, std::string(b.substr(0, length))};
  return length;
}

size_t EditBuffer::cursor_chars() const {
  return count_chars(std::string_view(text_).substr(0, cursor_));
}

void EditBuffer::set(std::string text) {
  text_ = std::move(text);
  cursor_ = text_.size();
}

void EditBuffer::insert(std::string_view text) {
  text_.insert(cursor_, text);
  cursor_ += text.size();
}

bool EditBuffer::left() {
  if (cursor_ == 0) return false;
  --cursor_;
  while (cursor_ > 0 && is_continuation_byte(text_[cursor_])) --cursor_;
  return true;
}

bool EditBuffer::right() {
  if (cursor_ == text_.size()) return false;
  ++cursor_;
  while (cursor_ < text_.size() && is_continuation_byte(text_[cursor_])) ++cursor_;
  return true;
}

// Word moves stop at spaces, which are single bytes: the cursor stays on a character start.
void EditBuffer::word_left() {
  while (cursor_ > 0 && is_space(text_[cursor_ - 1])) --cursor_;
  while (cursor_ > 0 && !is_space(text_[cursor_ - 1])) --cursor_;
}

void EditBuffer::word_right() {
  while (cursor_ < text_.size() && is_space(text_[cursor_])) ++cursor_;
  while (cursor_ < text_.size() && !is_space(text_[cursor_])) ++cursor_;
}

void EditBuffer::backspace() {
  const size_t end = cursor_;
  if (left()) text_.erase(cursor_, end - cursor_);
}

void EditBuffer::delete_forward() {
  const size_t start = cursor_;
  if (right()) {
    text_.erase(start, cursor_ - start);
    cursor_ = start;
  }
}

void EditBuffer::kill_to_start() {
  text_.erase(0, cursor_);
  cursor_ = 0;
}

void EditBuffer::kill_to_end() { text_.erase(cursor_); }

void EditBuffer::delete_word_before() {
  const size_t end = cursor_;
  word_left();
  text_.erase(cursor_, end - cursor_);
}

bool History::add(std::string_view line) {
  if (line.find_first_not_of(" \t") == std::string_view::npos) return false;
  if (!entries_.empty() && entries_.back() == line) return false;
  entries_.emplace_back(line);
  if (entries_.size() > max_entries_) {
    entries_.erase(entries_.begin(),
                   entries_.begin() + static_cast<std::ptrdiff_t>(entries_.size() - max_entries_));
  }
  return true;
}

void History::parse(std::string_view text) {
  entries_.clear();
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (line.ends_with('\r')) line.remove_suffix(1);
    // A file edited by hand may hold anything: only valid UTF-8 lines come back.
    if (is_valid_utf8(line)) add(line);
  }
}

std::string History::serialize() const {
  std::string out;
  for (const std::string& line : entries_) {
    out += line;
    out += '\n';
  }
  return out;
}

std::string default_history_path() {
  Result<std::string> directory = state_directory();
  return directory.ok() ? *directory + "/history" : std::string();
}

std::string render_line(std::string_view prompt, std::string_view text, size_t cursor_chars,
                        size_t columns, size_t& scroll_chars) {
  const size_t prompt_chars = count_chars(prompt);
  // The last column stays free: a character written there would leave the terminal waiting to
  // wrap, and the next redraw would land on the row below.
  const size_t room = columns > prompt_chars + 1 ? columns - prompt_chars - 1 : 1;
  const size_t n = count_chars(text);
  // Fill the row when the text allows it (after a deletion near the end), then keep the cursor
  // on screen.
  scroll_chars = n + 1 > room ? std::min(scroll_chars, n + 1 - room) : 0;
  if (cursor_chars < scroll_chars) scroll_chars = cursor_chars;
  if (cursor_chars >= scroll_chars + room) scroll_chars = cursor_chars - room + 1;
  const size_t from = byte_of_char(text, scroll_chars);
  const size_t to = byte_of_char(text, scroll_chars + room);
  std::string out = "\r";
  out += prompt;
  for (const char c : text.substr(from, to - from)) {
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  }
  out += "\x1b[K\r";
  const size_t column = prompt_chars + cursor_chars - scroll_chars;
  if (column > 0) out += "\x1b[" + std::to_string(column) + "C";
  return out;
}

void LineEditor::start(std::string_view prompt, std::string& out) {
  prompt_ = prompt;
  buffer_.clear();
  recalled_ = history_.entries();
  recalled_.emplace_back();
  at_ = recalled_.size() - 1;
  scroll_chars_ = 0;
  out += prompt;
}

void LineEditor::recall(size_t index) {
  recalled_[at_] = buffer_.text();  // the edits made so far stay with that line
  at_ = index;
  buffer_.set(recalled_[at_]);
}

void LineEditor::refresh(size_t columns, std::string& out) {
  out += render_line(prompt_, buffer_.text(), buffer_.cursor_chars(), columns, scroll_chars_);
}

LineEditor::Outcome LineEditor::apply(const Key& key, size_t columns, std::string& out) {
  switch (key.kind) {
    case KeyKind::kText: {
      const bool at_end = buffer_.cursor() == buffer_.text().size();
      buffer_.insert(key.text);
      // Typing at the end of a line that fits writes the character alone, as the terminal's
      // own echo would; anything else redraws the line.
      const size_t used = count_chars(prompt_) + count_chars(buffer_.text());
      if (at_end && scroll_chars_ == 0 && used + 1 < columns &&
          static_cast<unsigned char>(key.text[0]) >= 0x20) {
        out += key.text;
      } else {
        refresh(columns, out);
      }
      return Outcome::kEditing;
    }
    case KeyKind::kEnter:
      // The terminal's output processing (ONLCR, left on) makes "\n" a new row, as for answers.
      out += "\n";
      history_.add(buffer_.text());
      return Outcome::kLine;
    case KeyKind::kEndOfInput:
      if (buffer_.text().empty()) return Outcome::kEndOfInput;
      buffer_.delete_forward();
      break;
    case KeyKind::kInterrupt:
      if (buffer_.text().empty()) return Outcome::kInterrupted;
      out += "^C\n";
      start(prompt_, out);
      return Outcome::kEditing;
    case KeyKind::kBackspace:
      buffer_.backspace();
      break;
    case KeyKind::kDelete:
      buffer_.delete_forward();
      break;
    case KeyKind::kLeft:
      buffer_.left();
      break;
    case KeyKind::kRight:
      buffer_.right();
      break;
    case KeyKind::kWordLeft:
      buffer_.word_left();
      break;
    case KeyKind::kWordRight:
      buffer_.word_right();
      break;
    case KeyKind::kHome:
      buffer_.home();
      break;
    case KeyKind::kEnd:
      buffer_.end();
      break;
    case KeyKind::kUp:
      if (at_ > 0) recall(at_ - 1);
      break;
    case KeyKind::kDown:
      if (at_ + 1 < recalled_.size()) recall(at_ + 1);
      break;
    case KeyKind::kKillToStart:
      buffer_.kill_to_start();
      break;
    case KeyKind::kKillToEnd:
      buffer_.kill_to_end();
      break;
    case KeyKind::kDeleteWordBefore:
      buffer_.delete_word_before();
      break;
    case KeyKind::kClearScreen:
      out += "\x1b[H\x1b[2J";
      break;
    case KeyKind::kIgnored:
      return Outcome::kEditing;
  }
  refresh(columns, out);
  return Outcome::kEditing;
}

// ---- The terminal ----

namespace {

// The settings raw mode replaced, for the handlers of signals that end the process while it is
// on (they cannot reach a RawMode object).
termios g_saved_termios{};
volatile std::sig_atomic_t g_saved_fd = -1;

constexpr int kFatalSignals[] = {SIGTERM, SIGHUP, SIGQUIT};

void restore_and_reraise(int signal_number) {
  // tcsetattr and raise are async-signal-safe.
  if (g_saved_fd >= 0) tcsetattr(g_saved_fd, TCSANOW, &g_saved_termios);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

}  // namespace

// Raw input while it lives: no echo, no line buffering, keys such as Ctrl-C and Ctrl-Z as bytes
// (no signals), Enter as "\r". Output processing stays as it was, so "\n" still starts a row.
// TCSADRAIN, not TCSAFLUSH: keys typed ahead (while an answer streamed) are kept.
class TerminalRawMode {
 public:
  explicit TerminalRawMode(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    g_saved_termios = saved_;
    g_saved_fd = fd_;
    struct sigaction action {};
    action.sa_handler = restore_and_reraise;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
      sigaction(kFatalSignals[i], &action, &previous_[i]);
    }
    on_ = tcsetattr(fd_, TCSADRAIN, &raw) == 0;
    if (!on_) restore();
  }
  ~TerminalRawMode() {
    if (on_) restore();
  }
  TerminalRawMode(const TerminalRawMode&) = delete;
  TerminalRawMode& operator=(const TerminalRawMode&) = delete;
  bool on() const { return on_; }

 private:
  void restore() {
    tcsetattr(fd_, TCSADRAIN, &saved_);
    g_saved_fd = -1;
    for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
      sigaction(kFatalSignals[i], &previous_[i], nullptr);
    }
  }

  int fd_;
  termios saved_{};
  struct sigaction previous_[std::size(kFatalSignals)]{};
  bool on_ = false;
};

namespace {

size_t terminal_columns(int fd) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// How long the rest of an escape sequence may take to arrive before a lone ESC is taken as the
// Escape key (terminals send a sequence in one write; 50 ms covers a slow link).
constexpr int kSequenceWaitMs = 50;

}  // namespace

bool stdio_is_terminal() { return isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0; }

TerminalLineSource::TerminalLineSource(int in_fd, int out_fd, int interrupt_fd,
                                       std::string history_path)
    : in_fd_(in_fd),
      out_fd_(out_fd),
      interrupt_fd_(interrupt_fd),
      history_path_(std::move(history_path)),
      fallback_(in_fd, interrupt_fd, stdout) {
  if (history_path_.empty()) return;
  std::ifstream file(history_path_, std::ios::binary);
  if (!file) return;
  std::ostringstream text;
  text << file.rdbuf();
  history_.parse(text.str());
}

InputEvent TerminalLineSource::read_line(std::string_view prompt, std::string& line) {
  // What the session printed must reach the terminal before the prompt.
  std::fflush(stdout);
  std::fflush(stderr);
  if (!raw_) raw_ = std::make_unique<TerminalRawMode>(in_fd_);
  if (!raw_->on()) {
    // The terminal refused raw mode: lines as they are read without the editor.
    raw_.reset();
    return fallback_.read_line(prompt, line);
  }
  const InputEvent event = edit(prompt, line);
  // Ctrl-C at the prompt: the session prints a hint and asks for the next line at once, so raw
  // mode stays on — a key typed in between would otherwise meet the cooked terminal (a Ctrl-D
  // there is the line discipline's end-of-file, lost when raw mode comes back). A line goes to
  // the model (its answer streams with Ctrl-C as a signal) and the end restores the terminal.
  if (event != InputEvent::kInterrupted) raw_.reset();
  return event;
}

TerminalLineSource::~TerminalLineSource() = default;

InputEvent TerminalLineSource::edit(std::string_view prompt, std::string& line) {
  std::string out;
  editor_.start(prompt, out);
  for (;;) {
    Key key;
    size_t used = pending_.empty() ? 0 : decode_key(pending_, false, key);
    if (used == 0) {
      write_out(out);
      out.clear();
      pollfd fds[2] = {{in_fd_, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
      const int ready =
          ::poll(fds, interrupt_fd_ >= 0 ? 2 : 1, pending_.empty() ? -1 : kSequenceWaitMs);
      if (ready < 0 && errno != EINTR) return InputEvent::kEof;
      if (ready > 0 && interrupt_fd_ >= 0 && (fds[1].revents & POLLIN) != 0) {
        char bytes[64];
        while (::read(interrupt_fd_, bytes, sizeof bytes) > 0) {
        }
        key = key_of(KeyKind::kInterrupt);  // a SIGINT sent while editing acts as Ctrl-C
      } else if (ready > 0) {
        if (!read_more()) return InputEvent::kEof;
        continue;
      } else if (ready == 0) {
        pending_.erase(0, decode_key(pending_, true, key));  // the sequence never completed
      } else {
        continue;  // EINTR: a signal whose handler did its work
      }
    } else {
      pending_.erase(0, used);
    }
    const size_t columns = terminal_columns(out_fd_);
    const LineEditor::Outcome outcome = editor_.apply(key, columns, out);
    if (outcome == LineEditor::Outcome::kEditing) continue;
    write_out(out);
    switch (outcome) {
      case LineEditor::Outcome::kLine:
        line = editor_.line();
        save_history();
        return InputEvent::kLine;
      case LineEditor::Outcome::kEndOfInput:
        return InputEvent::kEof;
      default:
        return InputEvent::kInterrupted;
    }
  }
}

bool TerminalLineSource::read_more() {
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(in_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    pending_.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

void TerminalLineSource::save_history() const {
  if (history_path_.empty()) return;
  // Best effort: a history that cannot be written must not end the conversation.
  const std::string directory = std::filesystem::path(history_path_).parent_path().string();
  if (!directory.empty() && !create_directories(directory).ok()) return;
  Result<AtomicFile> file = AtomicFile::create(history_path_);
  if (!file.ok()) return;
  ::fchmod(file->fd(), 0600);  // what was typed is private
  const std::string text = history_.serialize();
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  if (!file->write({bytes, text.size()}).ok()) return;
  [[maybe_unused]] const Status committed = file->commit();
}

void TerminalLineSource::write_out(const std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace synapse::cli
