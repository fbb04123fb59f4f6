// SPDX-License-Identifier: Apache-2.0
// The values a chat template computes with: a small variant with Python's semantics (what Jinja
// templates are written against): undefined, none, bool, int, float, string, list (or tuple),
// dict (insertion-ordered, string keys), namespace and callable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"

namespace synapse::chat {

class Value;

struct ValueList {
  std::vector<Value> items;
  bool tuple = false;   // prints as (a, b) and never equals a list, as in Python
  uint64_t weight = 0;  // see value_weight()
  uint32_t depth = 1;   // see value_depth()
};

// Keys are unique and kept in insertion order (what Python dicts and HF's tojson do).
struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);  // replaces an existing key in place
  uint64_t weight = 0;                     // see value_weight(); Value::dict() fills it
  uint32_t depth = 1;                      // see value_depth(); Value::dict() fills it
};

// `namespace()` objects: the one mutable value, shared by reference like a Python object.
struct Namespace {
  ValueDict attributes;
};

// Functions, macros and bound methods; the interpreter defines the kinds.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual std::string_view name() const = 0;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable,
  };

  Value() = default;                         // undefined
  static Value undefined(std::string hint);  // hint: the name that was missing, for messages
  static Value none();
  Value(bool b);                                        // NOLINT(google-explicit-constructor)
  Value(int64_t i);                                     // NOLINT(google-explicit-constructor)
  Value(int i) : Value(static_cast<int64_t>(i)) {}      // NOLINT(google-explicit-constructor)
  Value(double d);                                      // NOLINT(google-explicit-constructor)
  Value(std::string s);                                 // NOLINT(google-explicit-constructor)
  Value(std::string_view s) : Value(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Value(const char* s) : Value(std::string(s)) {}       // NOLINT(google-explicit-constructor)
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(ValueDict dict);
  static Value make_namespace(ValueDict attributes);
  static Value callable(std::shared_ptr<const Callable> callable);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // bool is an int
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;    // bool or int
  double as_double() const;  // bool, int or float
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const ValueList& as_list() const { return *std::get<std::shared_ptr<const ValueList>>(data_); }
  const ValueDict& as_dict() const { return *std::get<std::shared_ptr<const ValueDict>>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  std::shared_ptr<const Callable> callable_ptr() const {
    return std::get<std::shared_ptr<const Callable>>(data_);
  }
  // The missing name an undefined value stands for ("" when unknown).
  const std::string& undefined_hint() const { return std::get<std::string>(data_); }

  // Python's type name: "str", "int", "list", "dict", "NoneType", "Undefined", ...
  std::string_view type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  std::variant<std::string, bool, int64_t, double, std::shared_ptr<const ValueList>,
               std::shared_ptr<const ValueDict>, std::shared_ptr<Namespace>,
               std::shared_ptr<const Callable>>
      data_;
};

// A bound on the work any recursive operation (printing, comparing, JSON) does on a value: one
// per value plus the bytes of its strings, containers summed (saturating). Containers may share
// elements, so a hostile template could build a small value with an exponential tree; the
// interpreter refuses values heavier than its limit when it makes them.
uint64_t value_weight(const Value& value);
// Nesting of lists and dicts (0 for scalars). Printing, comparing, JSON and destruction recurse
// over it, so the interpreter bounds it too (a loop can wrap a list in a list many times).
uint32_t value_depth(const Value& value);
// Whether a namespace() object is reachable from the value (storing one in a namespace would
// make a reference cycle, which the interpreter refuses).
bool contains_namespace(const Value& value);

// Python's bool(x).
bool truthy(const Value& value);
// Python's ==, deep (1 == 1.0 == True; a list never equals a tuple).
bool values_equal(const Value& a, const Value& b);
// Python's ordering (<): numbers, strings (code points), lists element-wise; other pairs fail.
Result<bool> value_less(const Value& a, const Value& b);
// Python's str(x): None -> "None", True -> "True", floats as repr, containers as repr; an
// undefined value prints as "".
std::string to_str(const Value& value);
// Python's repr(x): strings quoted, containers recursively.
std::string repr(const Value& value);

}  // namespace synapse::chat
