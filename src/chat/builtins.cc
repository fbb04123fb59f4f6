// SPDX-License-Identifier: Apache-2.0
// Jinja's filters (tests are in builtin_tests.cc; Python methods and global functions in
// methods.cc).
#include "chat/builtins.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "chat/py_text.h"

namespace synapse::chat {

Status builtin_error(std::string_view function, const std::string& message) {
  return Status(ErrorCode::kTemplateError, std::string(function) + ": " + message);
}

Status check_weight(const BuiltinEnv& env, const Value& value) {
  if (env.max_value_bytes != 0 && value_weight(value) > env.max_value_bytes) {
    return Status(ErrorCode::kLimitExceeded,
                  "a template value grew past " + std::to_string(env.max_value_bytes) + " bytes");
  }
  if (value_depth(value) > kMaxValueDepth) {
    return Status(ErrorCode::kLimitExceeded, "a template value nests deeper than " +
                                                 std::to_string(kMaxValueDepth) + " levels");
  }
  return ok_status();
}

Result<std::vector<Value>> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return std::vector<Value>{};
    case Value::Kind::kList:
      return value.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [key, item] : value.as_dict().items) keys.emplace_back(key);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& text = value.as_string();
      size_t pos = 0;
      while (pos < text.size()) {
        const size_t start = pos;
        utf8_decode(text, pos);
        chars.emplace_back(text.substr(start, pos - start));
      }
      return chars;
    }
    default:
      return Status(ErrorCode::kTemplateError,
                    "'" + std::string(value.type_name()) + "' object is not iterable");
  }
}

ArgReader::ArgReader(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> params, bool extra_positional)
    : bound_(params.size(), nullptr) {
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params.size()) {
      bound_[i] = &args.positional[i];
    } else if (extra_positional) {
      extra_.push_back(&args.positional[i]);
    } else {
      status_ = builtin_error(function, "takes at most " + std::to_string(params.size()) +
                                            " arguments (" +
                                            std::to_string(args.positional.size()) + " given)");
      return;
    }
  }
  for (const auto& [key, value] : args.keyword) {
    const auto it = std::find(params.begin(), params.end(), key);
    if (it == params.end()) {
      status_ = builtin_error(function, "unexpected keyword argument '" + key + "'");
      return;
    }
    const auto index = static_cast<size_t>(it - params.begin());
    if (bound_[index] != nullptr) {
      status_ = builtin_error(function, "got multiple values for argument '" + key + "'");
      return;
    }
    bound_[index] = &value;
  }
}

namespace {

Result<int64_t> need_int(std::string_view function, const Value* value, int64_t fallback) {
  if (value == nullptr) return fallback;
  if (!value->is_integral()) {
    return builtin_error(function,
                         "expected an integer, got '" + std::string(value->type_name()) + "'");
  }
  return value->as_int();
}

bool flag(const Value* value, bool fallback) {
  return value == nullptr ? fallback : truthy(*value);
}

// Jinja's attribute path lookup for `attribute=` arguments ("a.b" and integer parts).
Value lookup_attribute(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    const std::string part = path.substr(start, dot - start);
    if (current.is_dict()) {
      const Value* found = current.as_dict().find(part);
      current = found != nullptr ? *found : Value::undefined(part);
    } else if (current.is_namespace()) {
      const Value* found = current.as_namespace().attributes.find(part);
      current = found != nullptr ? *found : Value::undefined(part);
    } else if (current.is_list() && !part.empty() &&
               std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const size_t index = std::stoul(part);
      const auto& items = current.as_list().items;
      current = index < items.size() ? items[index] : Value::undefined(part);
    } else {
      return Value::undefined(part);
    }
    start = dot + 1;
  }
  return current;
}

// ---- Filters ----

Result<Value> f_abs(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("abs", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  if (in.is_float()) return Value(std::fabs(in.as_double()));
  if (in.is_integral()) {
    if (in.as_int() == INT64_MIN) return builtin_error("abs", "integer overflow");
    return Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
  }
  return builtin_error("abs", "bad operand type '" + std::string(in.type_name()) + "'");
}

Result<Value> f_attr(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("attr", args, {"name"});
  SYN_RETURN_IF_ERROR(a.status());
  if (!a.has(0) || !a.get(0)->is_string()) return builtin_error("attr", "needs a name");
  if (in.is_namespace()) {
    const Value* found = in.as_namespace().attributes.find(a.get(0)->as_string());
    if (found != nullptr) return *found;
  }
  return Value::undefined(a.get(0)->as_string());
}

Result<Value> f_capitalize(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("capitalize", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return Value(py_capitalize(to_str(in)));
}

Result<Value> f_default(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("default", args, {"default_value", "boolean"});
  SYN_RETURN_IF_ERROR(a.status());
  const bool use_default = in.is_undefined() || (flag(a.get(1), false) && !truthy(in));
  if (!use_default) return in;
  return a.has(0) ? *a.get(0) : Value(std::string());
}

Result<Value> f_dictsort(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("dictsort", args, {"case_sensitive", "by", "reverse"});
  SYN_RETURN_IF_ERROR(a.status());
  if (!in.is_dict()) return builtin_error("dictsort", "expected a dict");
  const bool case_sensitive = flag(a.get(0), false);
  const bool by_value = a.has(1) && a.get(1)->is_string() && a.get(1)->as_string() == "value";
  std::vector<Value> pairs;
  for (const auto& [key, item] : in.as_dict().items) {
    pairs.push_back(Value::list({Value(key), item}, true));
  }
  Status failure;
  auto sort_key = [&](const Value& pair) {
    const Value& v = pair.as_list().items[by_value ? 1 : 0];
    return v.is_string() && !case_sensitive ? Value(ascii_lower(v.as_string())) : v;
  };
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    auto less = value_less(sort_key(x), sort_key(y));
    if (!less.ok()) {
      failure = less.status();
      return false;
    }
    return *less;
  });
  SYN_RETURN_IF_ERROR(failure);
  if (flag(a.get(2), false)) std::reverse(pairs.begin(), pairs.end());
  return Value::list(std::move(pairs));
}

Result<Value> f_escape(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("escape", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  std::string out;
  for (char c : to_str(in)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value(std::move(out));
}

Result<Value> f_first(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("first", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  return items.empty() ? Value::undefined("first") : items.front();
}

Result<Value> f_last(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("last", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  return items.empty() ? Value::undefined("last") : items.back();
}

Result<Value> f_float(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("float", args, {"default"});
  SYN_RETURN_IF_ERROR(a.status());
  const Value fallback = a.has(0) ? *a.get(0) : Value(0.0);
  if (in.is_number()) return Value(in.as_double());
  if (in.is_string()) {
    const std::string text = py_strip(in.as_string(), std::nullopt, StripSide::kBoth);
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return Value(d);
  }
  return fallback;
}

Result<Value> f_int(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("int", args, {"default", "base"});
  SYN_RETURN_IF_ERROR(a.status());
  const Value fallback = a.has(0) ? *a.get(0) : Value(0);
  if (in.is_integral()) return Value(in.as_int());
  if (in.is_float()) {
    const double d = in.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value(static_cast<int64_t>(d));
  }
  if (in.is_string()) {
    const std::string text = py_strip(in.as_string(), std::nullopt, StripSide::kBoth);
    SYN_ASSIGN_OR_RETURN(const int64_t base, need_int("int", a.get(1), 10));
    if (base < 2 || base > 36) return fallback;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, static_cast<int>(base));
    if (!text.empty() && errno == 0 && end == text.c_str() + text.size()) {
      return Value(static_cast<int64_t>(v));
    }
    const double d = std::strtod(text.c_str(), &end);  // Jinja falls back to int(float(s))
    if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(d) &&
        std::fabs(d) < 9.2e18) {
      return Value(static_cast<int64_t>(d));
    }
  }
  return fallback;
}

Result<Value> f_indent(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  ArgReader a("indent", args, {"width", "first", "blank"});
  SYN_RETURN_IF_ERROR(a.status());
  std::string unit;
  if (a.has(0) && a.get(0)->is_string()) {
    unit = a.get(0)->as_string();
  } else {
    SYN_ASSIGN_OR_RETURN(const int64_t width, need_int("indent", a.get(0), 4));
    if (width < 0 || static_cast<uint64_t>(width) > env.max_value_bytes) {
      return builtin_error("indent", "width out of range");
    }
    unit.assign(static_cast<size_t>(width), ' ');
  }
  const bool first = flag(a.get(1), false);
  const bool blank = flag(a.get(2), false);
  std::string text = to_str(in);
  text += '\n';  // Jinja appends a newline, splits lines, then drops it again
  const std::vector<std::string> lines = py_splitlines(text);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    const bool indent_this = i == 0 ? first : (blank || !lines[i].empty());
    if (indent_this) out += unit;
    out += lines[i];
    if (env.max_value_bytes != 0 && out.size() > env.max_value_bytes) {
      return check_weight(env, Value(out));
    }
  }
  return Value(std::move(out));
}

Result<Value> f_items(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("items", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  if (in.is_undefined()) return Value::list({});
  if (!in.is_dict()) return builtin_error("items", "expected a dict");
  std::vector<Value> pairs;
  for (const auto& [key, item] : in.as_dict().items) {
    pairs.push_back(Value::list({Value(key), item}, true));
  }
  return Value::list(std::move(pairs));
}

Result<Value> f_join(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  ArgReader a("join", args, {"d", "attribute"});
  SYN_RETURN_IF_ERROR(a.status());
  const std::string separator = a.has(0) ? to_str(*a.get(0)) : std::string();
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += a.has(1) ? to_str(lookup_attribute(items[i], to_str(*a.get(1)))) : to_str(items[i]);
    if (env.max_value_bytes != 0 && out.size() > env.max_value_bytes) {
      return check_weight(env, Value(out));
    }
  }
  return Value(std::move(out));
}

Result<Value> f_length(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("length", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  switch (in.kind()) {
    case Value::Kind::kUndefined:
      return Value(0);
    case Value::Kind::kString:
      return Value(static_cast<int64_t>(utf8_length(in.as_string())));
    case Value::Kind::kList:
      return Value(static_cast<int64_t>(in.as_list().items.size()));
    case Value::Kind::kDict:
      return Value(static_cast<int64_t>(in.as_dict().items.size()));
    default:
      return builtin_error("length",
                           "object of type '" + std::string(in.type_name()) + "' has no len()");
  }
}

Result<Value> f_list(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("list", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  return Value::list(std::move(items));
}

Result<Value> f_lower(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("lower", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return Value(ascii_lower(to_str(in)));
}

Result<Value> f_upper(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("upper", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return Value(ascii_upper(to_str(in)));
}

Result<Value> f_title(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("title", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return Value(py_title(to_str(in)));
}

Result<Value> f_map(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [key, value] : args.keyword) {
    if (key == "attribute") {
      attribute = &value;
    } else if (key == "default") {
      fallback = &value;
    } else if (attribute != nullptr || args.positional.empty()) {
      return builtin_error("map", "unexpected keyword argument '" + key + "'");
    }
  }
  if (attribute != nullptr) {
    for (const Value& item : items) {
      Value v = lookup_attribute(item, to_str(*attribute));
      if (v.is_undefined() && fallback != nullptr) v = *fallback;
      out.push_back(std::move(v));
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return builtin_error("map", "needs a filter name or attribute=");
  }
  const int index = find_filter(args.positional[0].as_string());
  if (index < 0)
    return builtin_error("map", "no filter named '" + args.positional[0].as_string() + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    SYN_ASSIGN_OR_RETURN(Value v, filter_at(index)(env, item, rest));
    out.push_back(std::move(v));
  }
  return Value::list(std::move(out));
}

Result<Value> min_max(std::string_view name, const Value& in, const CallArgs& args, bool max) {
  ArgReader a(name, args, {"case_sensitive", "attribute"});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  if (items.empty()) return Value::undefined(std::string(name));
  const bool case_sensitive = flag(a.get(0), false);
  auto key = [&](const Value& v) {
    Value k = a.has(1) ? lookup_attribute(v, to_str(*a.get(1))) : v;
    return k.is_string() && !case_sensitive ? Value(ascii_lower(k.as_string())) : k;
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    SYN_ASSIGN_OR_RETURN(const bool less, max ? value_less(key(items[best]), key(items[i]))
                                              : value_less(key(items[i]), key(items[best])));
    if (less) best = i;
  }
  return items[best];
}

Result<Value> f_max(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  return min_max("max", in, args, true);
}
Result<Value> f_min(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  return min_max("min", in, args, false);
}

// select / reject / selectattr / rejectattr
Result<Value> select_impl(const BuiltinEnv& env, std::string_view name, const Value& in,
                          const CallArgs& args, bool by_attribute, bool keep) {
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) return builtin_error(name, "needs an attribute name");
    attribute = to_str(args.positional[0]);
    next = 1;
  }
  int test = -1;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string())
      return builtin_error(name, "test name must be a string");
    test = find_test(args.positional[next].as_string());
    if (test < 0)
      return builtin_error(name, "no test named '" + args.positional[next].as_string() + "'");
    ++next;
  }
  if (!args.keyword.empty()) return builtin_error(name, "takes no keyword arguments");
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next),
                              args.positional.end());
  std::vector<Value> out;
  for (const Value& item : items) {
    const Value subject = by_attribute ? lookup_attribute(item, attribute) : item;
    bool passed = false;
    if (test < 0) {
      passed = truthy(subject);
    } else {
      SYN_ASSIGN_OR_RETURN(passed, test_at(test)(env, subject, test_args));
    }
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_select(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  return select_impl(env, "select", in, args, false, true);
}
Result<Value> f_reject(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  return select_impl(env, "reject", in, args, false, false);
}
Result<Value> f_selectattr(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  return select_impl(env, "selectattr", in, args, true, true);
}
Result<Value> f_rejectattr(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  return select_impl(env, "rejectattr", in, args, true, false);
}

Result<Value> f_replace(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  ArgReader a("replace", args, {"old", "new", "count"});
  SYN_RETURN_IF_ERROR(a.status());
  if (!a.has(0) || !a.has(1)) return builtin_error("replace", "needs old and new");
  SYN_ASSIGN_OR_RETURN(const int64_t count, need_int("replace", a.get(2), -1));
  const std::string text = to_str(in);
  const std::string from = to_str(*a.get(0));
  const std::string to = to_str(*a.get(1));
  // Bound the result before building it.
  const uint64_t pieces = from.empty() ? utf8_length(text) + 1 : text.size() / from.size() + 1;
  if (env.max_value_bytes != 0 && to.size() > from.size() &&
      pieces * (to.size() - from.size()) + text.size() > env.max_value_bytes) {
    return check_weight(env, Value(std::string(env.max_value_bytes + 1, ' ')));
  }
  return Value(py_replace(text, from, to, count));
}

Result<Value> f_reverse(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("reverse", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  std::reverse(items.begin(), items.end());
  if (in.is_string()) {
    std::string out;
    for (const Value& c : items) out += c.as_string();
    return Value(std::move(out));
  }
  return Value::list(std::move(items));
}

Result<Value> f_round(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("round", args, {"precision", "method"});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(const int64_t precision, need_int("round", a.get(0), 0));
  if (!in.is_number()) return builtin_error("round", "expected a number");
  if (precision < -300 || precision > 300) return builtin_error("round", "precision out of range");
  const std::string method = a.has(1) ? to_str(*a.get(1)) : "common";
  const double scale = std::pow(10.0, static_cast<double>(precision));
  double v = in.as_double() * scale;
  if (method == "common") {
    v = std::round(v);
  } else if (method == "ceil") {
    v = std::ceil(v);
  } else if (method == "floor") {
    v = std::floor(v);
  } else {
    return builtin_error("round", "method must be common, ceil or floor");
  }
  return Value(v / scale);
}

Result<Value> f_safe(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("safe", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return in;
}

Result<Value> f_sort(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("sort", args, {"reverse", "case_sensitive", "attribute"});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  const bool reverse = flag(a.get(0), false);
  const bool case_sensitive = flag(a.get(1), false);
  auto key = [&](const Value& v) {
    Value k = a.has(2) ? lookup_attribute(v, to_str(*a.get(2))) : v;
    return k.is_string() && !case_sensitive ? Value(ascii_lower(k.as_string())) : k;
  };
  Status failure;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    auto less = reverse ? value_less(key(y), key(x)) : value_less(key(x), key(y));
    if (!less.ok()) {
      failure = less.status();
      return false;
    }
    return *less;
  });
  SYN_RETURN_IF_ERROR(failure);
  return Value::list(std::move(items));
}

Result<Value> f_string(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("string", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return Value(to_str(in));
}

Result<Value> f_sum(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("sum", args, {"attribute", "start"});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  Value total = a.has(1) ? *a.get(1) : Value(0);
  for (const Value& item : items) {
    const Value v = a.has(0) ? lookup_attribute(item, to_str(*a.get(0))) : item;
    if (!v.is_number() || !total.is_number()) return builtin_error("sum", "expected numbers");
    if (v.is_float() || total.is_float()) {
      total = Value(total.as_double() + v.as_double());
    } else {
      int64_t r = 0;
      if (__builtin_add_overflow(total.as_int(), v.as_int(), &r)) {
        return builtin_error("sum", "integer overflow");
      }
      total = Value(r);
    }
  }
  return total;
}

Result<Value> f_tojson(const BuiltinEnv& env, const Value& in, const CallArgs& args) {
  // Hugging Face's tojson: json.dumps(x, ensure_ascii, indent, separators, sort_keys).
  ArgReader a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  SYN_RETURN_IF_ERROR(a.status());
  JsonDumpOptions options;
  options.ensure_ascii = flag(a.get(0), false);
  if (a.has(1) && !a.get(1)->is_none()) {
    if (a.get(1)->is_string()) {
      options.indent = a.get(1)->as_string();
    } else {
      SYN_ASSIGN_OR_RETURN(const int64_t width, need_int("tojson", a.get(1), 0));
      if (width < 0 || width > 64) return builtin_error("tojson", "indent out of range");
      options.indent = std::string(static_cast<size_t>(width), ' ');
    }
  }
  if (a.has(2) && !a.get(2)->is_none()) {
    const Value& sep = *a.get(2);
    if (!sep.is_list() || sep.as_list().items.size() != 2 || !sep.as_list().items[0].is_string() ||
        !sep.as_list().items[1].is_string()) {
      return builtin_error("tojson", "separators must be a pair of strings");
    }
    options.item_separator = sep.as_list().items[0].as_string();
    options.key_separator = sep.as_list().items[1].as_string();
  }
  options.sort_keys = flag(a.get(3), false);
  SYN_ASSIGN_OR_RETURN(std::string json, py_json_dumps(in, options, env.max_value_bytes));
  return Value(std::move(json));
}

Result<Value> f_trim(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("trim", args, {"chars"});
  SYN_RETURN_IF_ERROR(a.status());
  std::optional<std::string> chars;
  if (a.has(0) && !a.get(0)->is_none()) chars = to_str(*a.get(0));
  return Value(py_strip(to_str(in), chars, StripSide::kBoth));
}

Result<Value> f_unique(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("unique", args, {"case_sensitive", "attribute"});
  SYN_RETURN_IF_ERROR(a.status());
  SYN_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(in));
  const bool case_sensitive = flag(a.get(0), false);
  std::vector<Value> out;
  std::vector<Value> seen;
  for (const Value& item : items) {
    Value k = a.has(1) ? lookup_attribute(item, to_str(*a.get(1))) : item;
    if (k.is_string() && !case_sensitive) k = Value(ascii_lower(k.as_string()));
    const bool dup =
        std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, k); });
    if (dup) continue;
    seen.push_back(std::move(k));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_wordcount(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  ArgReader a("wordcount", args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return Value(static_cast<int64_t>(py_split(to_str(in), std::nullopt, -1).size()));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr std::array kFilters = {
    FilterEntry{"abs", f_abs},
    FilterEntry{"attr", f_attr},
    FilterEntry{"capitalize", f_capitalize},
    FilterEntry{"count", f_length},
    FilterEntry{"d", f_default},
    FilterEntry{"default", f_default},
    FilterEntry{"dictsort", f_dictsort},
    FilterEntry{"e", f_escape},
    FilterEntry{"escape", f_escape},
    FilterEntry{"first", f_first},
    FilterEntry{"float", f_float},
    FilterEntry{"forceescape", f_escape},
    FilterEntry{"indent", f_indent},
    FilterEntry{"int", f_int},
    FilterEntry{"items", f_items},
    FilterEntry{"join", f_join},
    FilterEntry{"last", f_last},
    FilterEntry{"length", f_length},
    FilterEntry{"list", f_list},
    FilterEntry{"lower", f_lower},
    FilterEntry{"map", f_map},
    FilterEntry{"max", f_max},
    FilterEntry{"min", f_min},
    FilterEntry{"reject", f_reject},
    FilterEntry{"rejectattr", f_rejectattr},
    FilterEntry{"replace", f_replace},
    FilterEntry{"reverse", f_reverse},
    FilterEntry{"round", f_round},
    FilterEntry{"safe", f_safe},
    FilterEntry{"select", f_select},
    FilterEntry{"selectattr", f_selectattr},
    FilterEntry{"sort", f_sort},
    FilterEntry{"string", f_string},
    FilterEntry{"sum", f_sum},
    FilterEntry{"title", f_title},
    FilterEntry{"tojson", f_tojson},
    FilterEntry{"trim", f_trim},
    FilterEntry{"unique", f_unique},
    FilterEntry{"upper", f_upper},
    FilterEntry{"wordcount", f_wordcount},
};

}  // namespace

Result<bool> value_contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string()) {
        return builtin_error("in", "'in <string>' requires string as left operand, not " +
                                       std::string(item.type_name()));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list().items) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    default:
      return builtin_error(
          "in", "argument of type '" + std::string(container.type_name()) + "' is not iterable");
  }
}

int find_filter(std::string_view name) {
  for (size_t i = 0; i < kFilters.size(); ++i) {
    if (kFilters[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

FilterFn filter_at(int index) { return kFilters[static_cast<size_t>(index)].fn; }

}  // namespace synapse::chat
