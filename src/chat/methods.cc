// SPDX-License-Identifier: Apache-2.0
// Python methods of str and dict that chat templates call, and the global functions.
#include <algorithm>
#include <array>
#include <ctime>

#include "chat/builtins.h"
#include "chat/py_text.h"

namespace synapse::chat {
namespace {

constexpr std::array<std::string_view, 24> kStringMethods = {
    "capitalize", "count",   "endswith",   "find",       "isalnum", "isalpha", "isdigit", "islower",
    "isspace",    "isupper", "join",       "lower",      "lstrip",  "replace", "rfind",   "rsplit",
    "rstrip",     "split",   "splitlines", "startswith", "strip",   "title",   "upper",   "format"};
constexpr std::array<std::string_view, 4> kDictMethods = {"get", "items", "keys", "values"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<std::string> optional_chars(const ArgReader& a, size_t index) {
  if (!a.has(index) || a.get(index)->is_none()) return std::nullopt;
  return to_str(*a.get(index));
}

// Python's slice-normalized start/end (code points) to byte offsets.
struct ByteRange {
  size_t begin;
  size_t end;
};
Result<ByteRange> sub_range(std::string_view fn, const std::string& text, const Value* start,
                            const Value* end) {
  const std::vector<size_t> offsets = utf8_offsets(text);
  const auto n = static_cast<int64_t>(offsets.size() - 1);
  auto norm = [&](const Value* v, int64_t fallback) -> Result<int64_t> {
    if (v == nullptr || v->is_none()) return fallback;
    if (!v->is_integral()) return builtin_error(fn, "slice indices must be integers");
    int64_t i = v->as_int();
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return std::min(i, n);
  };
  SYN_ASSIGN_OR_RETURN(const int64_t b, norm(start, 0));
  SYN_ASSIGN_OR_RETURN(const int64_t e, norm(end, n));
  if (e < b) return ByteRange{offsets[static_cast<size_t>(b)], offsets[static_cast<size_t>(b)]};
  return ByteRange{offsets[static_cast<size_t>(b)], offsets[static_cast<size_t>(e)]};
}

Result<Value> affix_check(std::string_view fn, const std::string& text, const CallArgs& args,
                          bool prefix) {
  ArgReader a(fn, args, {"affix", "start", "end"});
  SYN_RETURN_IF_ERROR(a.status());
  if (!a.has(0)) return builtin_error(fn, "takes at least 1 argument");
  SYN_ASSIGN_OR_RETURN(const ByteRange range, sub_range(fn, text, a.get(1), a.get(2)));
  const std::string_view part = std::string_view(text).substr(range.begin, range.end - range.begin);
  std::vector<Value> candidates;
  if (a.get(0)->is_list() && a.get(0)->as_list().tuple) {
    candidates = a.get(0)->as_list().items;
  } else {
    candidates.push_back(*a.get(0));
  }
  for (const Value& c : candidates) {
    if (!c.is_string()) return builtin_error(fn, "argument must be str or a tuple of str");
    const std::string& s = c.as_string();
    if (s.size() <= part.size() &&
        (prefix ? part.substr(0, s.size()) == s : part.substr(part.size() - s.size()) == s)) {
      return Value(true);
    }
  }
  return Value(false);
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.emplace_back(std::move(p));
  return Value::list(std::move(items));
}

template <typename Pred>
Value all_code_points(const std::string& text, Pred pred) {
  if (text.empty()) return Value(false);
  const std::vector<uint32_t> cps = utf8_code_points(text);
  return Value(std::all_of(cps.begin(), cps.end(), pred));
}

Result<Value> string_method(const BuiltinEnv& env, const std::string& text, std::string_view name,
                            const CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgReader a(name, args, {"chars"});
    SYN_RETURN_IF_ERROR(a.status());
    const StripSide side = name == "strip"    ? StripSide::kBoth
                           : name == "lstrip" ? StripSide::kLeft
                                              : StripSide::kRight;
    return Value(py_strip(text, optional_chars(a, 0), side));
  }
  if (name == "startswith") return affix_check(name, text, args, true);
  if (name == "endswith") return affix_check(name, text, args, false);
  if (name == "split" || name == "rsplit") {
    ArgReader a(name, args, {"sep", "maxsplit"});
    SYN_RETURN_IF_ERROR(a.status());
    const std::optional<std::string> sep = optional_chars(a, 0);
    if (sep && sep->empty()) return builtin_error(name, "empty separator");
    int64_t max_split = -1;
    if (a.has(1)) {
      if (!a.get(1)->is_integral()) return builtin_error(name, "maxsplit must be an integer");
      max_split = a.get(1)->as_int();
    }
    return string_list(name == "split" ? py_split(text, sep, max_split)
                                       : py_rsplit(text, sep, max_split));
  }
  if (name == "splitlines") {
    ArgReader a(name, args, {});
    SYN_RETURN_IF_ERROR(a.status());
    return string_list(py_splitlines(text));
  }
  if (name == "replace") {
    ArgReader a(name, args, {"old", "new", "count"});
    SYN_RETURN_IF_ERROR(a.status());
    if (!a.has(0) || !a.has(1) || !a.get(0)->is_string() || !a.get(1)->is_string()) {
      return builtin_error(name, "needs two strings");
    }
    CallArgs forwarded;
    forwarded.positional = {*a.get(0), *a.get(1)};
    if (a.has(2)) forwarded.positional.push_back(*a.get(2));
    return filter_at(find_filter("replace"))(env, Value(text), forwarded);
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    ArgReader a(name, args, {});
    SYN_RETURN_IF_ERROR(a.status());
    if (name == "upper") return Value(ascii_upper(text));
    if (name == "lower") return Value(ascii_lower(text));
    if (name == "title") return Value(py_title(text));
    return Value(py_capitalize(text));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    ArgReader a(name, args, {"sub", "start", "end"});
    SYN_RETURN_IF_ERROR(a.status());
    if (!a.has(0) || !a.get(0)->is_string()) return builtin_error(name, "needs a string");
    SYN_ASSIGN_OR_RETURN(const ByteRange range, sub_range(name, text, a.get(1), a.get(2)));
    const std::string_view part =
        std::string_view(text).substr(range.begin, range.end - range.begin);
    const std::string& sub = a.get(0)->as_string();
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(part) + 1));
      int64_t n = 0;
      for (size_t p = part.find(sub); p != std::string_view::npos;
           p = part.find(sub, p + sub.size())) {
        ++n;
      }
      return Value(n);
    }
    const size_t found = name == "find" ? part.find(sub) : part.rfind(sub);
    if (found == std::string_view::npos) return Value(-1);
    return Value(static_cast<int64_t>(utf8_length(text.substr(0, range.begin + found))));
  }
  if (name == "join") {
    ArgReader a(name, args, {"iterable"});
    SYN_RETURN_IF_ERROR(a.status());
    if (!a.has(0)) return builtin_error(name, "takes exactly one argument");
    SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(*a.get(0)));
    for (const Value& item : items) {
      if (!item.is_string()) return builtin_error(name, "expected str instances");
    }
    CallArgs forwarded;
    forwarded.positional = {Value(text)};
    return filter_at(find_filter("join"))(env, Value::list(std::move(items)), forwarded);
  }
  if (name.substr(0, 2) == "is") {
    ArgReader a(name, args, {});
    SYN_RETURN_IF_ERROR(a.status());
    auto ascii_digit = [](uint32_t c) { return c >= '0' && c <= '9'; };
    auto ascii_alpha = [](uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (name == "isdigit") return all_code_points(text, ascii_digit);
    if (name == "isalpha") return all_code_points(text, ascii_alpha);
    if (name == "isalnum") {
      return all_code_points(text, [&](uint32_t c) { return ascii_digit(c) || ascii_alpha(c); });
    }
    if (name == "isspace") return all_code_points(text, py_is_space);
    const bool has_cased = std::any_of(text.begin(), text.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    });
    if (name == "isupper") return Value(has_cased && ascii_upper(text) == text);
    if (name == "islower") return Value(has_cased && ascii_lower(text) == text);
  }
  return builtin_error(name, "str." + std::string(name) + "() is not supported in chat templates");
}

Result<Value> dict_method(const ValueDict& dict, std::string_view name, const CallArgs& args) {
  if (name == "get") {
    ArgReader a(name, args, {"key", "default"});
    SYN_RETURN_IF_ERROR(a.status());
    if (!a.has(0)) return builtin_error(name, "takes at least 1 argument");
    if (a.get(0)->is_string()) {
      if (const Value* found = dict.find(a.get(0)->as_string())) return *found;
    }
    return a.has(1) ? *a.get(1) : Value::none();
  }
  ArgReader a(name, args, {});
  SYN_RETURN_IF_ERROR(a.status());
  std::vector<Value> out;
  for (const auto& [key, item] : dict.items) {
    if (name == "items") {
      out.push_back(Value::list({Value(key), item}, true));
    } else if (name == "keys") {
      out.emplace_back(key);
    } else {
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

// Keyword arguments (and, for dict(), one mapping) as a dict.
Result<ValueDict> keyword_dict(std::string_view fn, const CallArgs& args) {
  ValueDict out;
  if (args.positional.size() > 1) return builtin_error(fn, "takes at most one positional argument");
  if (args.positional.size() == 1) {
    if (!args.positional[0].is_dict()) return builtin_error(fn, "expected a mapping");
    out = args.positional[0].as_dict();
  }
  for (const auto& [key, value] : args.keyword) out.set(key, value);
  return out;
}

// The sandbox's bound on range() (Jinja's MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Result<Value> global_range(const CallArgs& args) {
  if (!args.keyword.empty()) return builtin_error("range", "takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3) {
    return builtin_error("range", "expected 1 to 3 arguments");
  }
  for (const Value& v : args.positional) {
    if (!v.is_integral()) return builtin_error("range", "arguments must be integers");
  }
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  }
  if (step == 0) return builtin_error("range", "arg 3 must not be zero");
  const long double span = (static_cast<long double>(stop) - static_cast<long double>(start)) /
                           static_cast<long double>(step);
  if (span > kMaxRange) {
    return Status(ErrorCode::kLimitExceeded,
                  "range: a range longer than " + std::to_string(kMaxRange) + " items");
  }
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.emplace_back(i);
  return Value::list(std::move(items));
}

Result<Value> global_strftime_now(const BuiltinEnv& env, const CallArgs& args) {
  ArgReader a("strftime_now", args, {"format"});
  SYN_RETURN_IF_ERROR(a.status());
  if (!a.has(0) || !a.get(0)->is_string()) return builtin_error("strftime_now", "needs a format");
  const std::string& format = a.get(0)->as_string();
  if (format.size() > 256) return builtin_error("strftime_now", "format too long");
  const std::time_t now = env.now.value_or(std::time(nullptr));
  std::tm local{};
  if (env.now) {
    gmtime_r(&now, &local);  // a fixed clock (tests) is UTC
  } else {
    localtime_r(&now, &local);
  }
  char buf[1024];
  // The format comes from the template, as Python's strftime takes it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  const size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &local);
#pragma GCC diagnostic pop
  return Value(std::string(buf, n));
}

}  // namespace

bool has_method(const Value& receiver, std::string_view name) {
  if (receiver.is_string()) return contains(kStringMethods, name);
  if (receiver.is_dict()) return contains(kDictMethods, name);
  return false;
}

Result<Value> call_method(const BuiltinEnv& env, const Value& receiver, std::string_view name,
                          const CallArgs& args) {
  if (receiver.is_string()) return string_method(env, receiver.as_string(), name, args);
  if (receiver.is_dict()) return dict_method(receiver.as_dict(), name, args);
  return builtin_error(name, "'" + std::string(receiver.type_name()) + "' has no method '" +
                                 std::string(name) + "'");
}

bool is_global_function(std::string_view name) {
  return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" ||
         name == "strftime_now";
}

Result<Value> call_global(const BuiltinEnv& env, std::string_view name, const CallArgs& args) {
  if (name == "range") return global_range(args);
  if (name == "namespace") {
    SYN_ASSIGN_OR_RETURN(ValueDict attributes, keyword_dict(name, args));
    return Value::make_namespace(std::move(attributes));
  }
  if (name == "dict") {
    SYN_ASSIGN_OR_RETURN(ValueDict items, keyword_dict(name, args));
    return Value::dict(std::move(items));
  }
  if (name == "raise_exception") {
    ArgReader a(name, args, {"message"});
    SYN_RETURN_IF_ERROR(a.status());
    return Status(ErrorCode::kTemplateRaised, a.has(0) ? to_str(*a.get(0)) : "raise_exception()");
  }
  if (name == "strftime_now") return global_strftime_now(env, args);
  return builtin_error(name, "no such function");
}

}  // namespace synapse::chat
