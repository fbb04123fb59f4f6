// SPDX-License-Identifier: Apache-2.0
// Jinja's tests (`x is defined`, `n is divisibleby 3`, ...): the test table and its lookup.
#include <array>
#include <cmath>

#include "chat/builtins.h"
#include "chat/py_text.h"

namespace synapse::chat {
namespace {

Result<bool> no_args(std::string_view name, const CallArgs& args) {
  ArgReader a(name, args, {});
  SYN_RETURN_IF_ERROR(a.status());
  return true;
}

#define SYN_SIMPLE_TEST(fn, name, expr)                                       \
  Result<bool> fn(const BuiltinEnv&, const Value& in, const CallArgs& args) { \
    SYN_RETURN_IF_ERROR(no_args(name, args).status());                        \
    return (expr);                                                            \
  }

SYN_SIMPLE_TEST(t_defined, "defined", !in.is_undefined())
SYN_SIMPLE_TEST(t_undefined, "undefined", in.is_undefined())
SYN_SIMPLE_TEST(t_none, "none", in.is_none())
SYN_SIMPLE_TEST(t_string, "string", in.is_string())
SYN_SIMPLE_TEST(t_number, "number", in.is_number())
SYN_SIMPLE_TEST(t_integer, "integer", in.is_int())
SYN_SIMPLE_TEST(t_float, "float", in.is_float())
SYN_SIMPLE_TEST(t_boolean, "boolean", in.is_bool())
SYN_SIMPLE_TEST(t_true, "true", in.is_bool() && in.as_bool())
SYN_SIMPLE_TEST(t_false, "false", in.is_bool() && !in.as_bool())
SYN_SIMPLE_TEST(t_mapping, "mapping", in.is_dict())
SYN_SIMPLE_TEST(t_sequence, "sequence", in.is_list() || in.is_string() || in.is_dict())
SYN_SIMPLE_TEST(t_iterable, "iterable",
                in.is_list() || in.is_string() || in.is_dict() || in.is_undefined())
SYN_SIMPLE_TEST(t_callable, "callable", in.is_callable())
SYN_SIMPLE_TEST(t_lower, "lower", in.is_string() && ascii_lower(in.as_string()) == in.as_string())
SYN_SIMPLE_TEST(t_upper, "upper", in.is_string() && ascii_upper(in.as_string()) == in.as_string())
#undef SYN_SIMPLE_TEST

Result<const Value*> one_arg(std::string_view name, const CallArgs& args) {
  ArgReader a(name, args, {"other"});
  SYN_RETURN_IF_ERROR(a.status());
  if (!a.has(0)) return builtin_error(name, "needs one argument");
  return a.get(0);
}

Result<bool> t_odd(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_RETURN_IF_ERROR(no_args("odd", args).status());
  if (!in.is_integral()) return builtin_error("odd", "expected an integer");
  return in.as_int() % 2 != 0;
}
Result<bool> t_even(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_RETURN_IF_ERROR(no_args("even", args).status());
  if (!in.is_integral()) return builtin_error("even", "expected an integer");
  return in.as_int() % 2 == 0;
}
Result<bool> t_divisibleby(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("divisibleby", args));
  if (!in.is_integral() || !other->is_integral() || other->as_int() == 0) {
    return builtin_error("divisibleby", "expected integers, the divisor not zero");
  }
  if (other->as_int() == -1) return true;
  return in.as_int() % other->as_int() == 0;
}
Result<bool> t_eq(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("eq", args));
  return values_equal(in, *other);
}
Result<bool> t_ne(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("ne", args));
  return !values_equal(in, *other);
}
Result<bool> t_lt(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("lt", args));
  return value_less(in, *other);
}
Result<bool> t_gt(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("gt", args));
  return value_less(*other, in);
}
Result<bool> t_le(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("le", args));
  SYN_ASSIGN_OR_RETURN(const bool greater, value_less(*other, in));
  return !greater;
}
Result<bool> t_ge(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("ge", args));
  SYN_ASSIGN_OR_RETURN(const bool less, value_less(in, *other));
  return !less;
}
Result<bool> t_in(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("in", args));
  return value_contains(*other, in);
}
Result<bool> t_sameas(const BuiltinEnv&, const Value& in, const CallArgs& args) {
  SYN_ASSIGN_OR_RETURN(const Value* other, one_arg("sameas", args));
  if (in.is_none() || in.is_bool()) return in.kind() == other->kind() && values_equal(in, *other);
  return false;
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr std::array kTests = {
    TestEntry{"!=", t_ne},
    TestEntry{"<", t_lt},
    TestEntry{"<=", t_le},
    TestEntry{"==", t_eq},
    TestEntry{">", t_gt},
    TestEntry{">=", t_ge},
    TestEntry{"boolean", t_boolean},
    TestEntry{"callable", t_callable},
    TestEntry{"defined", t_defined},
    TestEntry{"divisibleby", t_divisibleby},
    TestEntry{"eq", t_eq},
    TestEntry{"equalto", t_eq},
    TestEntry{"even", t_even},
    TestEntry{"false", t_false},
    TestEntry{"float", t_float},
    TestEntry{"ge", t_ge},
    TestEntry{"greaterthan", t_gt},
    TestEntry{"gt", t_gt},
    TestEntry{"in", t_in},
    TestEntry{"integer", t_integer},
    TestEntry{"iterable", t_iterable},
    TestEntry{"le", t_le},
    TestEntry{"lessthan", t_lt},
    TestEntry{"lower", t_lower},
    TestEntry{"lt", t_lt},
    TestEntry{"mapping", t_mapping},
    TestEntry{"ne", t_ne},
    TestEntry{"none", t_none},
    TestEntry{"number", t_number},
    TestEntry{"odd", t_odd},
    TestEntry{"sameas", t_sameas},
    TestEntry{"sequence", t_sequence},
    TestEntry{"string", t_string},
    TestEntry{"true", t_true},
    TestEntry{"undefined", t_undefined},
    TestEntry{"upper", t_upper},
};

}  // namespace

int find_test(std::string_view name) {
  for (size_t i = 0; i < kTests.size(); ++i) {
    if (kTests[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

TestFn test_at(int index) { return kTests[static_cast<size_t>(index)].fn; }

}  // namespace synapse::chat
