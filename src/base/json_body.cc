// SPDX-License-Identifier: Apache-2.0
#include "base/json_body.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "base/echo.h"

namespace synapse {
namespace {

// nlohmann's parser drives this handler without recursion (its own state stack); returning false
// stops the parse at the first problem, which is kept in `error`.
class Validator {
 public:
  using Json = nlohmann::json;

  Validator(const JsonLimits& limits, std::string_view what) : limits_(limits), what_(what) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(Json::number_integer_t) { return value(); }
  bool number_unsigned(Json::number_unsigned_t) { return value(); }
  bool number_float(Json::number_float_t, const Json::string_t& text) {
    if (!value()) return false;
    // The lexer reads an integer literal beyond int64/uint64 as a double, silently rounding it:
    // refuse instead, as the literal cannot mean what the caller wrote.
    if (text.find_first_of(".eE") == std::string::npos) {
      return fail("the integer " + clip_for_echo(text) + " is out of range", path());
    }
    return true;
  }
  bool string(Json::string_t&) { return value(); }
  bool binary(Json::binary_t&) { return value(); }

  bool start_object(size_t) {
    if (!value()) return false;
    return open(/*object=*/true);
  }
  bool key(Json::string_t& key) {
    Frame& frame = frames_.back();
    frame.key = key;
    if (!frame.keys.insert(key).second) {
      return fail("has the key '" + clip_for_echo(key) + "' more than once", path());
    }
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    if (!value()) return false;
    return open(/*object=*/false);
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }

  bool parse_error(size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    if (ex.id == 406) {  // out_of_range.406: a number that overflows a double (1e400)
      value();           // the number is the value being read: name its place
      return fail("the number " + clip_for_echo(last_token) + " is out of range", path());
    }
    return fail("is not valid JSON (syntax error at byte " + std::to_string(position) + ")", "");
  }

  const Status& error() const { return error_; }
  bool saw_root_object() const { return root_object_; }

 private:
  struct Frame {
    bool object = false;
    std::string key;                       // object: the current member's key
    int64_t index = -1;                    // array: the current element's index
    std::unordered_set<std::string> keys;  // object: keys seen so far
  };

  // Called as each value (scalar or container) begins: advances the enclosing array's index.
  bool value() {
    if (!frames_.empty() && !frames_.back().object) {
      ++frames_.back().index;
    }
    return true;
  }

  bool open(bool object) {
    if (frames_.empty()) root_object_ = object;
    if (static_cast<int>(frames_.size()) >= limits_.max_depth) {
      // Named by the top-level member only: a path 64 levels long tells a reader nothing more.
      const bool in_member = frames_.front().object;
      return fail("nests deeper than " + std::to_string(limits_.max_depth) + " levels",
                  in_member ? clip_for_echo(frames_.front().key) : "");
    }
    frames_.push_back(Frame{.object = object});
    return true;
  }

  // "messages[2].content", as the request parsers name fields.
  std::string path() const {
    std::string out;
    for (const Frame& frame : frames_) {
      if (frame.object) {
        if (!out.empty()) out += '.';
        out += clip_for_echo(frame.key);
      } else if (frame.index >= 0) {
        out += "[" + std::to_string(frame.index) + "]";
      }
    }
    return out;
  }

  bool fail(const std::string& message, const std::string& field) {
    std::string text = std::string(what_) + " " + message;
    if (!field.empty()) text += " (at '" + field + "')";
    error_ = Status(ErrorCode::kInvalidJson, std::move(text), ErrorWhere{.field = field});
    return false;
  }

  const JsonLimits& limits_;
  std::string_view what_;
  std::vector<Frame> frames_;
  Status error_;
  bool root_object_ = false;
};

}  // namespace

Status validate_json_text(std::string_view text, const JsonLimits& limits, JsonShape shape,
                          std::string_view what) {
  if (text.size() > limits.max_bytes) {
    return Status(ErrorCode::kRequestTooLarge,
                  std::string(what) + " of " + std::to_string(text.size()) +
                      " bytes exceeds the limit of " + std::to_string(limits.max_bytes));
  }
  Validator validator(limits, what);
  const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &validator,
                                            nlohmann::json::input_format_t::json,
                                            /*strict=*/true);
  if (!ok) {
    if (!validator.error().ok()) return validator.error();
    return Status(ErrorCode::kInvalidJson, std::string(what) + " is not valid JSON");
  }
  if (shape == JsonShape::kObject && !validator.saw_root_object()) {
    return Status(ErrorCode::kInvalidJson, std::string(what) + " must be a JSON object");
  }
  return ok_status();
}

}  // namespace synapse
