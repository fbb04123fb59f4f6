// SPDX-License-Identifier: Apache-2.0
// The line editor without a terminal: key decoding, buffer edits across multi-byte characters,
// history (bounded, navigation keeping the line being typed), the redraw, and the editor fed
// the bytes a terminal sends.
#include "cli/line_editor.h"

#include <gtest/gtest.h>

namespace synapse::cli {
namespace {

// Every key in `bytes`, decoded as the terminal layer does (the end counts as complete).
std::vector<Key> keys_of(std::string_view bytes) {
  std::vector<Key> keys;
  while (!bytes.empty()) {
    Key key;
    size_t used = decode_key(bytes, false, key);
    if (used == 0) used = decode_key(bytes, true, key);
    EXPECT_GT(used, 0u);
    keys.push_back(key);
    bytes.remove_prefix(used);
  }
  return keys;
}

std::vector<KeyKind> kinds_of(std::string_view bytes) {
  std::vector<KeyKind> kinds;
  for (const Key& k : keys_of(bytes)) kinds.push_back(k.kind);
  return kinds;
}

TEST(KeyDecoder, ControlKeysAndEscapeSequences) {
  using K = KeyKind;
  EXPECT_EQ(kinds_of("\x1b[A\x1b[B\x1b[C\x1b[D"),
            (std::vector{K::kUp, K::kDown, K::kRight, K::kLeft}));
  EXPECT_EQ(kinds_of("\x1bOA\x1bOH\x1bOF\x1b[H\x1b[F"),
            (std::vector{K::kUp, K::kHome, K::kEnd, K::kHome, K::kEnd}));
  EXPECT_EQ(kinds_of("\x1b[1~\x1b[7~\x1b[4~\x1b[8~\x1b[3~"),
            (std::vector{K::kHome, K::kHome, K::kEnd, K::kEnd, K::kDelete}));
  EXPECT_EQ(kinds_of("\x1b[1;5D\x1b[1;5C\x1b"
                     "b\x1b"
                     "f"),
            (std::vector{K::kWordLeft, K::kWordRight, K::kWordLeft, K::kWordRight}));
  EXPECT_EQ(kinds_of("\x01\x05\x02\x06\x7f\x08\x15\x0b\x17\x0c\x04\x03\x10\x0e"),
            (std::vector{K::kHome, K::kEnd, K::kLeft, K::kRight, K::kBackspace, K::kBackspace,
                         K::kKillToStart, K::kKillToEnd, K::kDeleteWordBefore, K::kClearScreen,
                         K::kEndOfInput, K::kInterrupt, K::kUp, K::kDown}));
  EXPECT_EQ(kinds_of("\r\n\r\n"), (std::vector{K::kEnter, K::kEnter}));  // "\r\n" is one
  EXPECT_EQ(kinds_of("\r\r"), (std::vector{K::kEnter, K::kEnter}));
  // Unknown sequences are consumed whole, not typed: F5, a mouse report, Alt-x.
  EXPECT_EQ(kinds_of("\x1b[15~\x1b[<0;3;4Mz\x1bx"),
            (std::vector{K::kIgnored, K::kIgnored, K::kText, K::kIgnored}));
}

TEST(KeyDecoder, PartialSequencesWaitUnlessComplete) {
  Key key;
  for (const char* partial : {"\x1b", "\x1b[", "\x1b[1;5", "\x1bO", "\xc3", "\xe2\x82"}) {
    EXPECT_EQ(decode_key(partial, false, key), 0u) << partial;
    EXPECT_EQ(decode_key(partial, true, key), std::string_view(partial).size()) << partial;
    EXPECT_EQ(key.kind, KeyKind::kIgnored) << partial;  // a lone Escape does nothing
  }
  EXPECT_EQ(decode_key("", true, key), 0u);
}

TEST(KeyDecoder, Utf8CharactersAreOneKey) {
  const std::vector<Key> keys = keys_of("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\t");
  ASSERT_EQ(keys.size(), 5u);
  EXPECT_EQ(keys[1].text, "\xc3\xa9");          // é
  EXPECT_EQ(keys[2].text, "\xe2\x82\xac");      // €
  EXPECT_EQ(keys[3].text, "\xf0\x9f\x98\x80");  // an emoji
  EXPECT_EQ(keys[4].text, "\t");
  for (const Key& k : keys) EXPECT_EQ(k.kind, KeyKind::kText);
  // Invalid bytes are dropped, and what follows them still decodes.
  EXPECT_EQ(kinds_of("\x80\xc0\xaf\xc3x"),
            (std::vector{KeyKind::kIgnored, KeyKind::kIgnored, KeyKind::kIgnored, KeyKind::kIgnored,
                         KeyKind::kText}));
  EXPECT_EQ(keys_of("\xed\xa0\x80z").back().text, "z");  // a surrogate, then z
}

TEST(EditBuffer, CursorMovesByCharacters) {
  EditBuffer b;
  b.insert("h\xc3\xa9llo");  // "héllo": 5 characters, 6 bytes
  EXPECT_EQ(b.cursor(), 6u);
  EXPECT_EQ(b.cursor_chars(), 5u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.left());
  EXPECT_EQ(b.cursor(), 3u);  // after é, not inside it
  ASSERT_TRUE(b.left());
  EXPECT_EQ(b.cursor(), 1u);  // before é
  b.insert("\xe2\x82\xac");   // €
  EXPECT_EQ(b.text(), "h\xe2\x82\xac\xc3\xa9llo");
  b.delete_forward();  // deletes é whole
  EXPECT_EQ(b.text(), "h\xe2\x82\xacllo");
  b.backspace();  // deletes € whole
  EXPECT_EQ(b.text(), "hllo");
  EXPECT_EQ(b.cursor(), 1u);
  b.home();
  EXPECT_FALSE(b.left());
  b.end();
  EXPECT_FALSE(b.right());
  b.backspace();
  EXPECT_EQ(b.text(), "hll");
  b.home();
  b.backspace();  // nothing before the cursor
  EXPECT_EQ(b.text(), "hll");
  b.end();
  b.delete_forward();  // nothing after it
  EXPECT_EQ(b.text(), "hll");
}

TEST(EditBuffer, KillsAndWords) {
  EditBuffer b;
  b.set("one two  three");
  b.delete_word_before();
  EXPECT_EQ(b.text(), "one two  ");
  b.delete_word_before();  // the spaces, then "two"
  EXPECT_EQ(b.text(), "one ");
  b.set("alpha b\xc3\xa9ta gamma");
  b.word_left();
  EXPECT_EQ(b.text().substr(b.cursor()), "gamma");
  b.word_left();
  EXPECT_EQ(b.text().substr(b.cursor()), "b\xc3\xa9ta gamma");
  b.word_right();
  EXPECT_EQ(b.text().substr(b.cursor()), " gamma");
  b.kill_to_end();
  EXPECT_EQ(b.text(), "alpha b\xc3\xa9ta");
  b.left();
  b.left();
  b.kill_to_start();
  EXPECT_EQ(b.text(), "ta");
  EXPECT_EQ(b.cursor(), 0u);
}

TEST(History, BoundedWithoutRepeatsAndRoundTrips) {
  History h(3);
  EXPECT_TRUE(h.add("a"));
  EXPECT_FALSE(h.add("a"));  // the same as the last
  EXPECT_FALSE(h.add(""));
  EXPECT_FALSE(h.add("  "));
  EXPECT_TRUE(h.add("b"));
  EXPECT_TRUE(h.add("c"));
  EXPECT_TRUE(h.add("d"));
  EXPECT_EQ(h.entries(), (std::vector<std::string>{"b", "c", "d"}));
  History loaded(3);
  loaded.parse("x\r\n" + h.serialize() + "\xff\xfe\n\ne");
  EXPECT_EQ(loaded.entries(), (std::vector<std::string>{"c", "d", "e"}));
  EXPECT_EQ(History().entries().size(), 0u);
  History big;
  for (int i = 0; i < 1500; ++i) big.add(std::to_string(i));
  EXPECT_EQ(big.entries().size(), History::kMaxEntries);
  EXPECT_EQ(big.entries().front(), "500");
}

TEST(RenderLine, ScrollsALongLineWithinOneRow) {
  size_t scroll = 0;
  EXPECT_EQ(render_line(">>> ", "abc", 1, 80, scroll), "\r>>> abc\x1b[K\r\x1b[5C");
  EXPECT_EQ(scroll, 0u);
  // 20 columns: the prompt takes 4, one stays free, so 15 characters show.
  const std::string text = "0123456789abcdefghij";  // 20
  std::string out = render_line(">>> ", text, 20, 20, scroll);
  EXPECT_EQ(scroll, 6u);
  EXPECT_EQ(out, "\r>>> 6789abcdefghij\x1b[K\r\x1b[18C");
  out = render_line(">>> ", text, 2, 20, scroll);  // Home-ward: the cursor stays visible
  EXPECT_EQ(scroll, 2u);
  EXPECT_EQ(out, "\r>>> 23456789abcdefg\x1b[K\r\x1b[4C");
  // Multi-byte characters count as one column each; control characters show as spaces.
  scroll = 0;
  EXPECT_EQ(render_line("... ", "\xc3\xa9\tz", 3, 80, scroll), "\r... \xc3\xa9 z\x1b[K\r\x1b[7C");
  EXPECT_EQ(render_line("", "", 0, 80, scroll), "\r\x1b[K\r");
}

// Feeds `bytes` to `editor` as the terminal layer does; the outcome of the last key.
LineEditor::Outcome feed(LineEditor& editor, std::string_view bytes, std::string* out = nullptr,
                         size_t columns = 80) {
  std::string written;
  LineEditor::Outcome outcome = LineEditor::Outcome::kEditing;
  for (const Key& key : keys_of(bytes)) {
    EXPECT_EQ(outcome, LineEditor::Outcome::kEditing) << "keys after the line ended";
    outcome = editor.apply(key, columns, written);
  }
  if (out != nullptr) *out = written;
  return outcome;
}

TEST(LineEditor, EditsALineAndRecordsIt) {
  History history;
  LineEditor editor(history);
  std::string out;
  editor.start(">>> ", out);
  EXPECT_EQ(out, ">>> ");
  // Typing at the end echoes the characters alone, as the terminal would.
  EXPECT_EQ(feed(editor, "helo", &out), LineEditor::Outcome::kEditing);
  EXPECT_EQ(out, "helo");
  // Left, then an insertion: the line is redrawn with the cursor after the new character.
  feed(editor, "\x1b[Dl", &out);
  EXPECT_EQ(editor.line(), "hello");
  EXPECT_EQ(out.substr(out.rfind('\r')), "\r\x1b[8C");
  feed(editor, "\x01\x1b[3~H\x05 w\xc3\xb6rld", &out);
  EXPECT_EQ(editor.line(), "Hello w\xc3\xb6rld");
  EXPECT_EQ(feed(editor, "\r", &out), LineEditor::Outcome::kLine);
  EXPECT_EQ(out, "\n");
  EXPECT_EQ(editor.line(), "Hello w\xc3\xb6rld");
  EXPECT_EQ(history.entries(), (std::vector<std::string>{"Hello w\xc3\xb6rld"}));
  // Kills: Ctrl-W, Ctrl-U, Ctrl-K.
  editor.start(">>> ", out);
  feed(editor, "one two three\x17", &out);
  EXPECT_EQ(editor.line(), "one two ");
  feed(editor, "\x02\x02\x0b", &out);
  EXPECT_EQ(editor.line(), "one tw");
  feed(editor, "\x15", &out);
  EXPECT_EQ(editor.line(), "");
  EXPECT_EQ(feed(editor, "\n"), LineEditor::Outcome::kLine);
  EXPECT_EQ(history.entries().size(), 1u);  // an empty line is not recorded
}

TEST(LineEditor, HistoryNavigationKeepsTheLineBeingTyped) {
  History history;
  history.add("first");
  history.add("second");
  LineEditor editor(history);
  std::string out;
  editor.start(">>> ", out);
  feed(editor, "draft");
  feed(editor, "\x1b[A");
  EXPECT_EQ(editor.line(), "second");
  feed(editor, "!");  // an edit to a recalled line stays while navigating
  feed(editor, "\x1b[A");
  EXPECT_EQ(editor.line(), "first");
  feed(editor, "\x1b[A");  // nothing older
  EXPECT_EQ(editor.line(), "first");
  feed(editor, "\x1b[B");
  EXPECT_EQ(editor.line(), "second!");
  feed(editor, "\x1b[B");
  EXPECT_EQ(editor.line(), "draft");
  feed(editor, "\x1b[B");  // nothing newer
  EXPECT_EQ(editor.line(), "draft");
  feed(editor, "\x10\x10");  // Ctrl-P twice
  EXPECT_EQ(editor.line(), "first");
  EXPECT_EQ(feed(editor, "\r"), LineEditor::Outcome::kLine);
  // The recalled line is entered again; the history itself was not edited.
  EXPECT_EQ(history.entries(), (std::vector<std::string>{"first", "second", "first"}));
  editor.start(">>> ", out);
  feed(editor, "\x1b[A\x1b[A");
  EXPECT_EQ(editor.line(), "second");
}

TEST(LineEditor, CtrlCClearsALineAndCtrlDEndsAnEmptyOne) {
  History history;
  LineEditor editor(history);
  std::string out;
  editor.start(">>> ", out);
  EXPECT_EQ(feed(editor, "half typed\x03", &out), LineEditor::Outcome::kEditing);
  EXPECT_EQ(editor.line(), "");
  EXPECT_EQ(out, "half typed^C\n>>> ");
  EXPECT_TRUE(history.entries().empty());
  EXPECT_EQ(feed(editor, "\x03"), LineEditor::Outcome::kInterrupted);
  editor.start(">>> ", out);
  feed(editor, "ab\x01\x04");  // Ctrl-D on a line with text deletes forward
  EXPECT_EQ(editor.line(), "b");
  feed(editor, "\x04");
  EXPECT_EQ(feed(editor, "\x04"), LineEditor::Outcome::kEndOfInput);
  feed(editor, "x\x0c", &out);  // Ctrl-L: clear, then the line again
  EXPECT_EQ(out, "x\x1b[H\x1b[2J\r>>> x\x1b[K\r\x1b[5C");
}

TEST(LineEditor, LongLinesRedrawInsteadOfEchoing) {
  History history;
  LineEditor editor(history);
  std::string out;
  editor.start(">>> ", out);
  // 16 columns: the prompt takes 4 and one stays free, so 10 characters echo as typed and the
  // 11th scrolls the line.
  feed(editor, "0123456789", &out, 16);
  EXPECT_EQ(out, "0123456789");
  feed(editor, "a", &out, 16);
  EXPECT_EQ(out, "\r>>> 123456789a\x1b[K\r\x1b[14C");
  feed(editor, "\x01", &out, 16);
  EXPECT_EQ(out, "\r>>> 0123456789a\x1b[K\r\x1b[4C");
  EXPECT_EQ(editor.line(), "0123456789a");
}

}  // namespace
}  // namespace synapse::cli
