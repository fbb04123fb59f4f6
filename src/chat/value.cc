// SPDX-License-Identifier: Apache-2.0
#include "chat/value.h"

#include <algorithm>

#include "chat/py_text.h"

namespace synapse::chat {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ValueDict::set(std::string key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.data_ = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), data_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), data_(i) {}
Value::Value(double d) : kind_(Kind::kFloat), data_(d) {}
Value::Value(std::string s) : kind_(Kind::kString), data_(std::move(s)) {}

namespace {
uint64_t saturating_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }
}  // namespace

Value Value::list(std::vector<Value> items, bool tuple) {
  uint64_t weight = 1;
  uint32_t depth = 1;
  for (const Value& item : items) {
    weight = saturating_add(weight, value_weight(item));
    depth = std::max(depth, value_depth(item) + 1);
  }
  Value v;
  v.kind_ = Kind::kList;
  v.data_ = std::make_shared<const ValueList>(ValueList{std::move(items), tuple, weight, depth});
  return v;
}

Value Value::dict(ValueDict dict) {
  uint64_t weight = 1;
  uint32_t depth = 1;
  for (const auto& [key, item] : dict.items) {
    weight = saturating_add(weight, saturating_add(key.size(), value_weight(item)));
    depth = std::max(depth, value_depth(item) + 1);
  }
  dict.weight = weight;
  dict.depth = depth;
  Value v;
  v.kind_ = Kind::kDict;
  v.data_ = std::make_shared<const ValueDict>(std::move(dict));
  return v;
}

uint64_t value_weight(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kString:
      return 1 + value.as_string().size();
    case Value::Kind::kList:
      return value.as_list().weight;
    case Value::Kind::kDict:
      return value.as_dict().weight;
    default:
      return 1;
  }
}

uint32_t value_depth(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kList:
      return value.as_list().depth;
    case Value::Kind::kDict:
      return value.as_dict().depth;
    default:
      return 0;
  }
}

bool contains_namespace(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNamespace:
      return true;
    case Value::Kind::kList:
      return std::any_of(value.as_list().items.begin(), value.as_list().items.end(),
                         [](const Value& item) { return contains_namespace(item); });
    case Value::Kind::kDict:
      return std::any_of(value.as_dict().items.begin(), value.as_dict().items.end(),
                         [](const auto& entry) { return contains_namespace(entry.second); });
    default:
      return false;
  }
}

Value Value::make_namespace(ValueDict attributes) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.data_ = std::make_shared<Namespace>(Namespace{std::move(attributes)});
  return v;
}

Value Value::callable(std::shared_ptr<const Callable> callable) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.data_ = std::move(callable);
  return v;
}

int64_t Value::as_int() const {
  if (kind_ == Kind::kBool) return std::get<bool>(data_) ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (kind_ == Kind::kFloat) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return as_list().tuple ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

bool truthy(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return value.as_bool();
    case Value::Kind::kInt:
      return value.as_int() != 0;
    case Value::Kind::kFloat:
      return value.as_double() != 0.0;
    case Value::Kind::kString:
      return !value.as_string().empty();
    case Value::Kind::kList:
      return !value.as_list().items.empty();
    case Value::Kind::kDict:
      return !value.as_dict().items.empty();
    case Value::Kind::kNamespace:
    case Value::Kind::kCallable:
      return true;
  }
  return false;
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const ValueList& x = a.as_list();
      const ValueList& y = b.as_list();
      if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!values_equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const ValueDict& x = a.as_dict();
      const ValueDict& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [key, value] : x.items) {
        const Value* other = y.find(key);
        if (other == nullptr || !values_equal(value, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace:
      return &a.as_namespace() == &b.as_namespace();
    case Value::Kind::kCallable:
      return &a.as_callable() == &b.as_callable();
    default:
      return false;
  }
}

Result<bool> value_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return value_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return Status(ErrorCode::kTemplateError, "'<' not supported between instances of '" +
                                               std::string(a.type_name()) + "' and '" +
                                               std::string(b.type_name()) + "'");
}

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kString:
      return value.as_string();
    default:
      return repr(value);
  }
}

std::string repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(value.as_int());
    case Value::Kind::kFloat:
      return py_float_repr(value.as_double());
    case Value::Kind::kString:
      return py_string_repr(value.as_string());
    case Value::Kind::kList: {
      const ValueList& list = value.as_list();
      std::string out(1, list.tuple ? '(' : '[');
      for (size_t i = 0; i < list.items.size(); ++i) {
        if (i > 0) out += ", ";
        out += repr(list.items[i]);
      }
      if (list.tuple && list.items.size() == 1) out += ',';
      out += list.tuple ? ')' : ']';
      return out;
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : value.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += py_string_repr(key);
        out += ": ";
        out += repr(item);
      }
      return out + "}";
    }
    case Value::Kind::kNamespace:
      return "<Namespace>";
    case Value::Kind::kCallable:
      return "<function " + std::string(value.as_callable().name()) + ">";
  }
  return "";
}

}  // namespace synapse::chat
