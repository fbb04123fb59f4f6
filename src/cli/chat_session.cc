// SPDX-License-Identifier: Apache-2.0
#include "cli/chat_session.h"

#include <charconv>
#include <chrono>

namespace synapse::cli {
namespace {

using Json = nlohmann::json;

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  size_t p = 0;
  while (p < text.size()) {
    while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
    size_t end = p;
    while (end < text.size() && text[end] != ' ' && text[end] != '\t') ++end;
    if (end > p) words.emplace_back(text.substr(p, end - p));
    p = end;
  }
  return words;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Text after the command word `prefix` (which must end the word), else nullopt.
std::optional<std::string_view> argument_of(std::string_view line, std::string_view prefix) {
  if (!line.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = line.substr(prefix.size());
  if (!rest.empty() && rest.front() != ' ' && rest.front() != '\t') return std::nullopt;
  return trim(rest);
}

Status bad_parameter(std::string_view name, std::string_view why) {
  return Status(ErrorCode::kInvalidValue,
                "parameter " + std::string(name) + ": " + std::string(why),
                ErrorWhere{.field = std::string(name)});
}

Result<double> parse_number(std::string_view name, const std::string& text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return bad_parameter(name, "'" + text + "' is not a number");
  }
  return value;
}

Result<int64_t> parse_integer(std::string_view name, const std::string& text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return bad_parameter(name, "'" + text + "' is not an integer");
  }
  return value;
}

constexpr const char* kHelp =
    "Available commands:\n"
    "  /set system TEXT            Set the system message\n"
    "  /set parameter NAME VALUE   Set a parameter: temperature, top_p, top_k, min_p, seed,\n"
    "                              num_predict, repeat_penalty, stop (one or more strings)\n"
    "  /set verbose | quiet        Show or hide token counts and speed after each answer\n"
    "  /show info                  Show the model: kind, context length, chat template\n"
    "  /show parameters            Show the parameters set\n"
    "  /show system                Show the system message\n"
    "  /clear                      Forget the conversation\n"
    "  /bye                        Exit (also Ctrl-D)\n"
    "  /?, /help                   This help\n"
    "\n"
    "Use \"\"\" to begin and end a message of several lines; a line ending in \\ continues.\n"
    "Ctrl-C stops an answer.\n"
    "\n"
    "On a terminal: Left/Right, Home/End (Ctrl-A/Ctrl-E), Alt-B/Alt-F by words,\n"
    "Backspace/Delete, Ctrl-U/Ctrl-K delete to the start/end, Ctrl-W the word before,\n"
    "Ctrl-L clears the screen, Up/Down recall earlier lines, Ctrl-C clears the line.\n";

}  // namespace

Status ChatSession::set_parameter(std::string_view name, const std::vector<std::string>& values) {
  if (values.empty()) return bad_parameter(name, "needs a value");
  if (name == "stop") {
    parameters_["stop"] = values;
    return ok_status();
  }
  if (values.size() != 1) return bad_parameter(name, "takes one value");
  const std::string& v = values.front();
  if (name == "temperature" || name == "top_p" || name == "min_p" || name == "repeat_penalty") {
    SYN_ASSIGN_OR_RETURN(const double x, parse_number(name, v));
    parameters_[std::string(name)] = x;
  } else if (name == "top_k" || name == "seed") {
    SYN_ASSIGN_OR_RETURN(const int64_t x, parse_integer(name, v));
    parameters_[std::string(name)] = x;
  } else if (name == "num_predict") {
    SYN_ASSIGN_OR_RETURN(const int64_t x, parse_integer(name, v));
    if (x < 0) {
      parameters_.erase("max_tokens");
    } else {
      parameters_["max_tokens"] = x;
    }
  } else {
    return bad_parameter(name,
                         "unknown (temperature, top_p, top_k, min_p, seed, num_predict, "
                         "repeat_penalty, stop)");
  }
  return ok_status();
}

Json ChatSession::request_body(const std::string& message) const {
  Json messages = Json::array();
  if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
  for (const Json& m : history_) messages.push_back(m);
  messages.push_back({{"role", "user"}, {"content", message}});
  Json body = parameters_;
  body["model"] = model_;
  body["messages"] = std::move(messages);
  return body;
}

Status ChatSession::ask(const std::string& message, const std::function<bool()>& stop) {
  using Clock = std::chrono::steady_clock;
  bool wrote = false;
  bool ends_line = true;
  std::optional<Clock::time_point> first_text;
  const auto on_text = [&](std::string_view text) {
    if (!first_text) first_text = Clock::now();
    std::fwrite(text.data(), 1, text.size(), out_);
    std::fflush(out_);
    wrote = true;
    ends_line = text.back() == '\n';
  };
  const Clock::time_point start = Clock::now();
  Result<ChatReply> reply = backend_.complete(request_body(message), on_text, stop);
  if (wrote && !ends_line) std::fputc('\n', out_);
  std::fflush(out_);
  if (!reply.ok()) return reply.status();
  history_.push_back({{"role", "user"}, {"content", message}});
  history_.push_back({{"role", "assistant"}, {"content", reply->text}});
  if (verbose_) {
    const double total_s = std::chrono::duration<double>(Clock::now() - start).count();
    const double gen_s =
        first_text ? std::chrono::duration<double>(Clock::now() - *first_text).count() : 0.0;
    const int64_t generated = reply->completion_tokens.value_or(-1);
    std::fprintf(err_, "prompt tokens: %lld, generated tokens: %lld, %.1f tokens/s, %.2f s\n",
                 static_cast<long long>(reply->prompt_tokens.value_or(-1)),
                 static_cast<long long>(generated),
                 gen_s > 0.0 && generated > 1 ? static_cast<double>(generated - 1) / gen_s : 0.0,
                 total_s);
    std::fflush(err_);
  }
  return ok_status();
}

ChatSession::Action ChatSession::command(std::string_view line) {
  line = trim(line);
  if (line == "/bye" || line == "/exit") return Action::kExit;
  if (line == "/?" || line == "/help") {
    help();
  } else if (line == "/clear") {
    clear();
    std::fprintf(out_, "Cleared session context\n");
  } else if (auto arg = argument_of(line, "/show")) {
    show(*arg);
  } else if (auto system = argument_of(line, "/set system")) {
    std::string_view text = *system;
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
      text = text.substr(1, text.size() - 2);
    }
    set_system(std::string(text));
    std::fprintf(out_, "Set system message.\n");
  } else if (auto param = argument_of(line, "/set parameter")) {
    std::vector<std::string> words = split_words(*param);
    if (words.empty()) {
      std::fprintf(err_, "Usage: /set parameter NAME VALUE\n");
    } else {
      const std::string name = words.front();
      words.erase(words.begin());
      const Status s = set_parameter(name, words);
      if (s.ok()) {
        std::fprintf(out_, "Set parameter '%s' to '%s'\n", name.c_str(),
                     words.size() == 1 ? words.front().c_str() : Json(words).dump().c_str());
      } else {
        std::fprintf(err_, "%s\n", s.message().c_str());
      }
    }
  } else if (line == "/set verbose" || line == "/set quiet") {
    set_verbose(line == "/set verbose");
    std::fprintf(out_, "Set '%s' mode.\n", line == "/set verbose" ? "verbose" : "quiet");
  } else if (argument_of(line, "/set")) {
    std::fprintf(out_,
                 "Usage: /set system TEXT | /set parameter NAME VALUE | /set verbose | "
                 "/set quiet\n");
  } else {
    const std::string word(line.substr(0, line.find(' ')));
    std::fprintf(err_, "Unknown command '%s'. Type /? for help\n", word.c_str());
  }
  std::fflush(out_);
  std::fflush(err_);
  return Action::kContinue;
}

void ChatSession::show(std::string_view what) const {
  if (what != "info" && what != "parameters" && what != "system" && !what.empty()) {
    std::fprintf(err_, "Usage: /show [info|parameters|system]\n");
    return;
  }
  if (what.empty() || what == "info") show_info();
  if (what.empty() || what == "parameters") {
    std::fprintf(out_, "  parameters\n");
    if (parameters_.empty()) std::fprintf(out_, "    (defaults)\n");
    for (const auto& [field, value] : parameters_.items()) {
      // Shown by the names /set parameter takes.
      const std::string name = field == "max_tokens" ? "num_predict" : field;
      std::fprintf(out_, "    %-16s%s\n", name.c_str(),
                   value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
    }
  }
  if (what.empty() || what == "system") {
    std::fprintf(out_, "  system\n    %s\n", system_.empty() ? "(none)" : system_.c_str());
  }
}

void ChatSession::show_info() const {
  const auto row = [this](const char* name, const std::string& value) {
    std::fprintf(out_, "    %-16s%s\n", name, value.c_str());
  };
  const auto yes_no = [](std::optional<bool> b) -> std::string {
    return b ? (*b ? "yes" : "no") : "-";
  };
  const Result<ModelFacts> facts = backend_.describe(model_);
  std::fprintf(out_, "  model\n");
  row("name", facts.ok() ? facts->name : model_);
  if (facts.ok()) {
    row("kind", facts->kind.empty() ? "-" : facts->kind);
    row("loaded", yes_no(facts->loaded));
    row("context length", facts->context_tokens ? std::to_string(*facts->context_tokens) : "-");
    row("chat template", yes_no(facts->chat_template));
  }
  row("runs on", backend_.where());
  row("turns", std::to_string(turns()));
  if (!facts.ok())
    std::fprintf(err_, "cannot describe the model: %s\n", facts.status().message().c_str());
}

void ChatSession::help() const { std::fputs(kHelp, out_); }

}  // namespace synapse::cli
