// SPDX-License-Identifier: Apache-2.0
// One `synapse run` conversation: its history, system message and sampling parameters, the
// slash commands that change them (Ollama's: /set, /show, /clear, /bye, /?), and a turn sent
// through a ChatBackend with the answer streamed to the terminal. Knows nothing of terminals,
// signals or input lines (command_run.cc and chat_input.h do).
#pragma once

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cli/chat_backend.h"

namespace synapse::cli {

class ChatSession {
 public:
  // Answers go to `out`, messages about the session (stats, errors) to `err`.
  ChatSession(std::string model, ChatBackend& backend, std::FILE* out, std::FILE* err)
      : model_(std::move(model)), backend_(backend), out_(out), err_(err) {}

  enum class Action { kContinue, kExit };
  // A line that starts with '/'. Unknown commands and bad arguments print why and continue.
  Action command(std::string_view line);

  // One turn: the message and the history go to the model, the answer streams to `out` and
  // ends with a newline. The turn joins the history only when the answer completed: an answer
  // stopped by `stop` (kCancelled) or failed leaves the history as it was, so roles keep
  // alternating as every template expects.
  Status ask(const std::string& message, const std::function<bool()>& stop);

  // Ollama's parameter names mapped to the chat body's fields: temperature, top_p, top_k, min_p,
  // seed, num_predict (max_tokens; negative: until the model stops), repeat_penalty, stop (one
  // or more strings). invalid_value names what is wrong.
  Status set_parameter(std::string_view name, const std::vector<std::string>& values);
  void set_system(std::string text) { system_ = std::move(text); }
  void set_verbose(bool verbose) { verbose_ = verbose; }
  void clear() { history_.clear(); }

  // The chat body of a turn asking `message` (no "stream": the backend adds it).
  nlohmann::json request_body(const std::string& message) const;
  size_t turns() const { return history_.size() / 2; }

 private:
  void show(std::string_view what) const;
  void show_info() const;
  void help() const;

  std::string model_;
  ChatBackend& backend_;
  std::FILE* out_;
  std::FILE* err_;
  std::string system_;
  nlohmann::json parameters_ = nlohmann::json::object();  // chat body fields
  nlohmann::json history_ = nlohmann::json::array();      // user/assistant messages
  bool verbose_ = false;
};

}  // namespace synapse::cli
