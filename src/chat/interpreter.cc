// SPDX-License-Identifier: Apache-2.0
#include "chat/interpreter.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "chat/builtins.h"
#include "chat/py_text.h"

namespace synapse::chat {
namespace {

// Callables the interpreter makes: macros, global functions and bound methods.
class MacroCallable final : public Callable {
 public:
  explicit MacroCallable(const Node* node) : node_(node) {}
  std::string_view name() const override { return node_->name; }
  const Node* node() const { return node_; }

 private:
  const Node* node_;
};

class GlobalCallable final : public Callable {
 public:
  explicit GlobalCallable(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }

 private:
  std::string name_;
};

class MethodCallable final : public Callable {
 public:
  MethodCallable(Value receiver, std::string method)
      : receiver_(std::move(receiver)), method_(std::move(method)) {}
  std::string_view name() const override { return method_; }
  const Value& receiver() const { return receiver_; }

 private:
  Value receiver_;
  std::string method_;
};

// Variables of one scope; lookups walk out to the parent. Jinja gives each loop iteration and
// each macro call its own scope (assignments there do not leak out); `if` does not.
struct Scope {
  const Scope* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      for (auto it = s->vars.rbegin(); it != s->vars.rend(); ++it) {
        if (it->first == name) return &it->second;
      }
    }
    return nullptr;
  }
  void set(const std::string& name, Value value) {
    for (auto& [k, v] : vars) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    vars.emplace_back(name, std::move(value));
  }
};

enum class Flow : uint8_t { kNormal, kBreak, kContinue };

Status at(SourcePos pos, Status status) {
  if (status.ok() || status.code() == ErrorCode::kTemplateRaised ||
      status.message().find(" (line ") != std::string::npos) {
    return status;
  }
  return Status(status.code(), status.message() + " (" + describe(pos) + ")", status.where());
}

Status type_error(const std::string& message) { return Status(ErrorCode::kTemplateError, message); }

std::string operand_types(const Value& a, const Value& b) {
  return "'" + std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'";
}

// Python's slice indices for a sequence of length n.
struct SliceSpec {
  int64_t start, stop, step;
};
Result<SliceSpec> slice_indices(const Value& start, const Value& stop, const Value& step,
                                int64_t n) {
  auto int_or = [](const Value& v, int64_t fallback) -> Result<int64_t> {
    if (v.is_undefined() || v.is_none()) return fallback;
    if (!v.is_integral()) return type_error("slice indices must be integers or None");
    return v.as_int();
  };
  SYN_ASSIGN_OR_RETURN(const int64_t s, int_or(step, 1));
  if (s == 0) return type_error("slice step cannot be zero");
  const int64_t lower = s < 0 ? -1 : 0;
  const int64_t upper = s < 0 ? n - 1 : n;
  auto clamp = [&](int64_t i) {
    if (i < 0) {
      i += n;
      return i < lower ? lower : i;
    }
    return i > upper ? upper : i;
  };
  SYN_ASSIGN_OR_RETURN(int64_t b, int_or(start, s < 0 ? upper : lower));
  SYN_ASSIGN_OR_RETURN(int64_t e, int_or(stop, s < 0 ? lower : upper));
  if (!(start.is_undefined() || start.is_none())) b = clamp(b);
  if (!(stop.is_undefined() || stop.is_none())) e = clamp(e);
  return SliceSpec{b, e, s};
}

class Interpreter {
 public:
  explicit Interpreter(const RenderContext& context) : limits_(context.limits) {
    env_.max_value_bytes = limits_.max_output_bytes;
    env_.now = context.now;
    for (const auto& [key, value] : context.variables.items) root_.set(key, value);
  }

  Result<std::string> run(const Program& program) {
    std::string out;
    SYN_ASSIGN_OR_RETURN(const Flow flow, exec_body(program.body, root_, out));
    (void)flow;
    return out;
  }

 private:
  Status step(SourcePos pos) {
    if (++steps_ > limits_.max_steps) {
      return Status(ErrorCode::kLimitExceeded, "template ran more than " +
                                                   std::to_string(limits_.max_steps) + " steps (" +
                                                   describe(pos) + ")");
    }
    return ok_status();
  }

  Status append(std::string& out, std::string_view text, SourcePos pos) const {
    if (out.size() + text.size() > limits_.max_output_bytes) {
      return Status(ErrorCode::kLimitExceeded, "template output exceeds " +
                                                   std::to_string(limits_.max_output_bytes) +
                                                   " bytes (" + describe(pos) + ")");
    }
    out.append(text);
    return ok_status();
  }

  // ---- Statements ----

  Result<Flow> exec_body(const std::vector<NodePtr>& body, Scope& scope, std::string& out) {
    for (const NodePtr& node : body) {
      SYN_ASSIGN_OR_RETURN(const Flow flow, exec(*node, scope, out));
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Result<Flow> exec(const Node& node, Scope& scope, std::string& out) {
    SYN_RETURN_IF_ERROR(step(node.pos));
    switch (node.kind) {
      case NodeKind::kText:
        SYN_RETURN_IF_ERROR(append(out, node.text, node.pos));
        break;
      case NodeKind::kOutput: {
        SYN_ASSIGN_OR_RETURN(const Value value, eval(*node.expr, scope));
        if (value.is_callable() || value.is_namespace()) {
          SYN_RETURN_IF_ERROR(append(out, repr(value), node.pos));
        } else {
          SYN_RETURN_IF_ERROR(append(out, to_str(value), node.pos));
        }
        break;
      }
      case NodeKind::kIf:
        for (const IfBranch& branch : node.branches) {
          SYN_ASSIGN_OR_RETURN(const Value cond, eval(*branch.condition, scope));
          if (truthy(cond)) return exec_body(branch.body, scope, out);
        }
        return exec_body(node.else_body, scope, out);
      case NodeKind::kFor:
        return exec_for(node, scope, out);
      case NodeKind::kSet:
        SYN_RETURN_IF_ERROR(at(node.pos, exec_set(node, scope)));
        break;
      case NodeKind::kSetBlock: {
        std::string captured;
        SYN_ASSIGN_OR_RETURN(const Flow flow, exec_body(node.body, scope, captured));
        (void)flow;
        Value value(std::move(captured));
        if (node.expr != nullptr) {
          block_input_ = value;
          SYN_ASSIGN_OR_RETURN(value, eval(*node.expr, scope));
        }
        scope.set(node.targets[0], std::move(value));
        break;
      }
      case NodeKind::kMacro:
        scope.set(node.name, Value::callable(std::make_shared<MacroCallable>(&node)));
        break;
      case NodeKind::kFilterBlock: {
        std::string captured;
        SYN_ASSIGN_OR_RETURN(const Flow flow, exec_body(node.body, scope, captured));
        block_input_ = Value(std::move(captured));
        SYN_ASSIGN_OR_RETURN(const Value value, eval(*node.expr, scope));
        SYN_RETURN_IF_ERROR(append(out, to_str(value), node.pos));
        return flow;
      }
      case NodeKind::kWith: {
        Scope inner{&scope, {}};
        for (size_t i = 0; i < node.targets.size(); ++i) {
          SYN_ASSIGN_OR_RETURN(Value value, eval(*node.values[i], scope));
          inner.set(node.targets[i], std::move(value));
        }
        return exec_body(node.body, inner, out);
      }
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
      case NodeKind::kBlock:
        return exec_body(node.body, scope, out);
    }
    return Flow::kNormal;
  }

  Status bind_targets(const Node& node, const Value& value, Scope& scope) {
    if (!node.unpack) {
      scope.set(node.targets[0], value);
      return ok_status();
    }
    if (!value.is_list()) {
      return type_error("cannot unpack a '" + std::string(value.type_name()) + "'");
    }
    const auto& items = value.as_list().items;
    if (items.size() != node.targets.size()) {
      return type_error("expected " + std::to_string(node.targets.size()) +
                        " values to unpack, got " + std::to_string(items.size()));
    }
    for (size_t i = 0; i < items.size(); ++i) scope.set(node.targets[i], items[i]);
    return ok_status();
  }

  Status exec_set(const Node& node, Scope& scope) {
    SYN_ASSIGN_OR_RETURN(Value value, eval(*node.expr, scope));
    if (node.attribute.empty()) return bind_targets(node, value, scope);
    const Value* target = scope.find(node.name);
    if (target == nullptr || !target->is_namespace()) {
      return type_error("cannot assign attribute on non-namespace object '" + node.name + "'");
    }
    SYN_RETURN_IF_ERROR(check_weight(env_, value));
    if (contains_namespace(value)) {
      return type_error("a namespace cannot be stored inside a namespace");
    }
    target->as_namespace().attributes.set(node.attribute, std::move(value));
    return ok_status();
  }

  Result<Flow> exec_for(const Node& node, Scope& scope, std::string& out) {
    SYN_ASSIGN_OR_RETURN(const Value iterable, eval(*node.expr, scope));
    auto items_or = iterate(iterable);
    if (!items_or.ok()) return at(node.expr->pos, std::move(items_or).take_status());
    std::vector<Value> items = std::move(items_or).value();
    if (node.condition != nullptr) {  // `for x in xs if cond`: filtered before loop.* counts
      std::vector<Value> kept;
      for (Value& item : items) {
        SYN_RETURN_IF_ERROR(count_iteration(node.pos));
        Scope probe{&scope, {}};
        SYN_RETURN_IF_ERROR(at(node.pos, bind_targets(node, item, probe)));
        SYN_ASSIGN_OR_RETURN(const Value keep, eval(*node.condition, probe));
        if (truthy(keep)) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(node.else_body, scope, out);
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      SYN_RETURN_IF_ERROR(count_iteration(node.pos));
      Scope iteration{&scope, {}};
      SYN_RETURN_IF_ERROR(
          at(node.pos, bind_targets(node, items[static_cast<size_t>(i)], iteration)));
      ValueDict loop;
      loop.set("index", Value(i + 1));
      loop.set("index0", Value(i));
      loop.set("revindex", Value(length - i));
      loop.set("revindex0", Value(length - i - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == length - 1));
      loop.set("length", Value(length));
      loop.set("depth", Value(1));
      loop.set("depth0", Value(0));
      if (i > 0) loop.set("previtem", items[static_cast<size_t>(i - 1)]);
      if (i + 1 < length) loop.set("nextitem", items[static_cast<size_t>(i + 1)]);
      iteration.set("loop", Value::dict(std::move(loop)));
      SYN_ASSIGN_OR_RETURN(const Flow flow, exec_body(node.body, iteration, out));
      if (flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Status count_iteration(SourcePos pos) {
    if (++iterations_ > limits_.max_loop_iterations) {
      return Status(ErrorCode::kLimitExceeded, "template loops ran more than " +
                                                   std::to_string(limits_.max_loop_iterations) +
                                                   " iterations (" + describe(pos) + ")");
    }
    return ok_status();
  }

  // ---- Expressions ----

  Result<Value> eval(const Expr& e, const Scope& scope) {
    SYN_RETURN_IF_ERROR(step(e.pos));
    auto result = eval_inner(e, scope);
    if (!result.ok()) return at(e.pos, std::move(result).take_status());
    SYN_RETURN_IF_ERROR(at(e.pos, check_weight(env_, *result)));
    return result;
  }

  Result<Value> eval_inner(const Expr& e, const Scope& scope) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kName: {
        if (const Value* v = scope.find(e.name)) return *v;
        if (is_global_function(e.name)) {
          return Value::callable(std::make_shared<GlobalCallable>(e.name));
        }
        return Value::undefined(e.name);
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        for (const ExprPtr& arg : e.args) {
          SYN_ASSIGN_OR_RETURN(Value v, eval(*arg, scope));
          items.push_back(std::move(v));
        }
        return Value::list(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        ValueDict dict;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          SYN_ASSIGN_OR_RETURN(const Value key, eval(*e.args[i], scope));
          if (!key.is_string()) return type_error("dict keys must be strings in chat templates");
          SYN_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1], scope));
          dict.set(key.as_string(), std::move(v));
        }
        return Value::dict(std::move(dict));
      }
      case ExprKind::kGetAttr: {
        SYN_ASSIGN_OR_RETURN(const Value base, eval(*e.args[0], scope));
        return get_attr(base, e.name, *e.args[0]);
      }
      case ExprKind::kGetItem: {
        SYN_ASSIGN_OR_RETURN(const Value base, eval(*e.args[0], scope));
        SYN_ASSIGN_OR_RETURN(const Value index, eval(*e.args[1], scope));
        return get_item(base, index, *e.args[0]);
      }
      case ExprKind::kSlice:
        return eval_slice(e, scope);
      case ExprKind::kCall:
        return eval_call(e, scope);
      case ExprKind::kFilter: {
        SYN_ASSIGN_OR_RETURN(const Value input, eval(*e.args[0], scope));
        SYN_ASSIGN_OR_RETURN(const CallArgs args, eval_args(e, 1, scope));
        return filter_at(e.builtin)(env_, input, args);
      }
      case ExprKind::kTest: {
        SYN_ASSIGN_OR_RETURN(const Value input, eval(*e.args[0], scope));
        SYN_ASSIGN_OR_RETURN(const CallArgs args, eval_args(e, 1, scope));
        SYN_ASSIGN_OR_RETURN(const bool passed, test_at(e.builtin)(env_, input, args));
        return Value(passed != e.negated);
      }
      case ExprKind::kNot: {
        SYN_ASSIGN_OR_RETURN(const Value v, eval(*e.args[0], scope));
        return Value(!truthy(v));
      }
      case ExprKind::kNegate:
      case ExprKind::kPlus: {
        SYN_ASSIGN_OR_RETURN(const Value v, eval(*e.args[0], scope));
        if (v.is_float())
          return Value(e.kind == ExprKind::kNegate ? -v.as_double() : v.as_double());
        if (v.is_integral()) {
          if (e.kind == ExprKind::kPlus) return Value(v.as_int());
          if (v.as_int() == INT64_MIN) return type_error("integer overflow");
          return Value(-v.as_int());
        }
        return type_error("bad operand type for unary -/+: '" + std::string(v.type_name()) + "'");
      }
      case ExprKind::kBinary: {
        SYN_ASSIGN_OR_RETURN(const Value a, eval(*e.args[0], scope));
        SYN_ASSIGN_OR_RETURN(const Value b, eval(*e.args[1], scope));
        return binary(e.op, a, b, *e.args[0], *e.args[1]);
      }
      case ExprKind::kCompare: {
        SYN_ASSIGN_OR_RETURN(Value left, eval(*e.args[0], scope));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          SYN_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1], scope));
          SYN_ASSIGN_OR_RETURN(const bool ok, compare(e.ops[i], left, right));
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        SYN_ASSIGN_OR_RETURN(Value a, eval(*e.args[0], scope));
        if (truthy(a) == (e.kind == ExprKind::kOr)) return a;
        return eval(*e.args[1], scope);
      }
      case ExprKind::kCondition: {
        SYN_ASSIGN_OR_RETURN(const Value cond, eval(*e.args[1], scope));
        if (truthy(cond)) return eval(*e.args[0], scope);
        if (e.args[2] == nullptr) return Value::undefined("");
        return eval(*e.args[2], scope);
      }
      case ExprKind::kBlockInput:
        return block_input_;
    }
    return type_error("unknown expression");
  }

  static std::string describe_expr(const Expr& e) {
    if (e.kind == ExprKind::kName) return "'" + e.name + "'";
    if (e.kind == ExprKind::kGetAttr) return describe_expr(*e.args[0]) + "." + e.name;
    return "a value";
  }

  static Status undefined_error(const Value& base, const Expr& base_expr) {
    std::string name = base.undefined_hint().empty() ? describe_expr(base_expr)
                                                     : "'" + base.undefined_hint() + "'";
    return type_error(name + " is undefined");
  }

  Result<Value> get_attr(const Value& base, const std::string& name, const Expr& base_expr) {
    if (base.is_undefined()) return undefined_error(base, base_expr);
    if (!name.empty() && name[0] == '_') return Value::undefined(name);  // the sandbox hides these
    if (has_method(base, name)) {
      return Value::callable(std::make_shared<MethodCallable>(base, name));
    }
    if (base.is_dict()) {
      const Value* found = base.as_dict().find(name);
      return found != nullptr ? *found : Value::undefined(name);
    }
    if (base.is_namespace()) {
      const Value* found = base.as_namespace().attributes.find(name);
      return found != nullptr ? *found : Value::undefined(name);
    }
    return Value::undefined(name);
  }

  Result<Value> get_item(const Value& base, const Value& index, const Expr& base_expr) {
    if (base.is_undefined()) return undefined_error(base, base_expr);
    if (index.is_string()) {
      if (base.is_dict()) {
        const Value* found = base.as_dict().find(index.as_string());
        if (found != nullptr) return *found;
      }
      return get_attr(base, index.as_string(), base_expr);  // Jinja falls back to getattr
    }
    if (!index.is_integral()) return Value::undefined("");
    int64_t i = index.as_int();
    if (base.is_list()) {
      const auto& items = base.as_list().items;
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      return i >= 0 && i < n ? items[static_cast<size_t>(i)] : Value::undefined("");
    }
    if (base.is_string()) {
      const std::vector<size_t> offsets = utf8_offsets(base.as_string());
      const auto n = static_cast<int64_t>(offsets.size() - 1);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("");
      const size_t b = offsets[static_cast<size_t>(i)];
      return Value(base.as_string().substr(b, offsets[static_cast<size_t>(i) + 1] - b));
    }
    return Value::undefined("");
  }

  Result<Value> eval_slice(const Expr& e, const Scope& scope) {
    SYN_ASSIGN_OR_RETURN(const Value base, eval(*e.args[0], scope));
    Value parts[3];
    for (int k = 0; k < 3; ++k) {
      if (e.args[static_cast<size_t>(k) + 1] != nullptr) {
        SYN_ASSIGN_OR_RETURN(parts[k], eval(*e.args[static_cast<size_t>(k) + 1], scope));
      }
    }
    if (base.is_undefined()) return undefined_error(base, *e.args[0]);
    std::vector<Value> items;
    if (base.is_list() || base.is_string()) {
      SYN_ASSIGN_OR_RETURN(items, iterate(base));
    } else {
      return type_error("'" + std::string(base.type_name()) + "' object is not subscriptable");
    }
    SYN_ASSIGN_OR_RETURN(const SliceSpec s, slice_indices(parts[0], parts[1], parts[2],
                                                          static_cast<int64_t>(items.size())));
    std::vector<Value> out;
    for (int64_t i = s.start; s.step > 0 ? i < s.stop : i > s.stop; i += s.step) {
      out.push_back(items[static_cast<size_t>(i)]);
    }
    if (base.is_string()) {
      std::string text;
      for (const Value& c : out) text += c.as_string();
      return Value(std::move(text));
    }
    return Value::list(std::move(out), base.as_list().tuple);
  }

  Result<CallArgs> eval_args(const Expr& e, size_t first, const Scope& scope) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) {
      SYN_ASSIGN_OR_RETURN(Value v, eval(*e.args[i], scope));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [key, expr] : e.kwargs) {
      SYN_ASSIGN_OR_RETURN(Value v, eval(*expr, scope));
      args.keyword.emplace_back(key, std::move(v));
    }
    return args;
  }

  Result<Value> eval_call(const Expr& e, const Scope& scope) {
    SYN_ASSIGN_OR_RETURN(const Value callee, eval(*e.args[0], scope));
    SYN_ASSIGN_OR_RETURN(const CallArgs args, eval_args(e, 1, scope));
    if (!callee.is_callable()) {
      if (callee.is_undefined()) return undefined_error(callee, *e.args[0]);
      return type_error("'" + std::string(callee.type_name()) + "' object is not callable");
    }
    const Callable& c = callee.as_callable();
    if (const auto* m = dynamic_cast<const MethodCallable*>(&c)) {
      return call_method(env_, m->receiver(), m->name(), args);
    }
    if (dynamic_cast<const GlobalCallable*>(&c) != nullptr) {
      return call_global(env_, c.name(), args);
    }
    if (const auto* macro = dynamic_cast<const MacroCallable*>(&c)) {
      return call_macro(*macro->node(), args);
    }
    return type_error("object is not callable");
  }

  Result<Value> call_macro(const Node& macro, const CallArgs& args) {
    if (call_depth_ >= limits_.max_call_depth) {
      return Status(ErrorCode::kLimitExceeded,
                    "macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
    }
    if (args.positional.size() > macro.params.size()) {
      return type_error("macro '" + macro.name + "' takes " + std::to_string(macro.params.size()) +
                        " arguments");
    }
    Scope frame{&root_, {}};
    std::vector<bool> bound(macro.params.size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      frame.set(macro.params[i], args.positional[i]);
      bound[i] = true;
    }
    for (const auto& [key, value] : args.keyword) {
      const auto it = std::find(macro.params.begin(), macro.params.end(), key);
      if (it == macro.params.end()) {
        return type_error("macro '" + macro.name + "' has no parameter '" + key + "'");
      }
      frame.set(key, value);
      bound[static_cast<size_t>(it - macro.params.begin())] = true;
    }
    for (size_t i = 0; i < macro.params.size(); ++i) {
      if (bound[i]) continue;
      if (macro.values[i] != nullptr) {
        SYN_ASSIGN_OR_RETURN(Value v, eval(*macro.values[i], frame));
        frame.set(macro.params[i], std::move(v));
      } else {
        frame.set(macro.params[i], Value::undefined(macro.params[i]));
      }
    }
    ++call_depth_;
    std::string out;
    auto flow = exec_body(macro.body, frame, out);
    --call_depth_;
    if (!flow.ok()) return std::move(flow).take_status();
    return Value(std::move(out));
  }

  Result<bool> compare(Op op, const Value& a, const Value& b) {
    switch (op) {
      case Op::kEq:
        return values_equal(a, b);
      case Op::kNe:
        return !values_equal(a, b);
      case Op::kLt:
        return value_less(a, b);
      case Op::kGt:
        return value_less(b, a);
      case Op::kLe: {
        SYN_ASSIGN_OR_RETURN(const bool gt, value_less(b, a));
        return !gt;
      }
      case Op::kGe: {
        SYN_ASSIGN_OR_RETURN(const bool lt, value_less(a, b));
        return !lt;
      }
      case Op::kIn:
        return value_contains(b, a);
      case Op::kNotIn: {
        SYN_ASSIGN_OR_RETURN(const bool in, value_contains(b, a));
        return !in;
      }
      default:
        return type_error("not a comparison");
    }
  }

  Result<Value> repeat(const Value& seq, int64_t times) {
    if (times <= 0) return seq.is_string() ? Value(std::string()) : Value::list({});
    const uint64_t unit = value_weight(seq);
    if (unit > 0 && static_cast<uint64_t>(times) > limits_.max_output_bytes / unit) {
      return Status(
          ErrorCode::kLimitExceeded,
          "a repeated value grew past " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    if (seq.is_string()) {
      std::string out;
      for (int64_t i = 0; i < times; ++i) out += seq.as_string();
      return Value(std::move(out));
    }
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) {
      out.insert(out.end(), seq.as_list().items.begin(), seq.as_list().items.end());
    }
    return Value::list(std::move(out), seq.as_list().tuple);
  }

  Result<Value> binary(Op op, const Value& a, const Value& b, const Expr& ea, const Expr& eb) {
    if (op == Op::kConcat) return Value(to_str(a) + to_str(b));
    if (a.is_undefined()) return undefined_error(a, ea);
    if (b.is_undefined()) return undefined_error(b, eb);
    const bool numbers = a.is_number() && b.is_number();
    const bool floats = numbers && (a.is_float() || b.is_float());
    switch (op) {
      case Op::kAdd:
        if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
        if (a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
          std::vector<Value> items = a.as_list().items;
          items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
          return Value::list(std::move(items), a.as_list().tuple);
        }
        if (floats) return Value(a.as_double() + b.as_double());
        if (numbers) return checked_int(__builtin_add_overflow(a.as_int(), b.as_int(), &int_tmp_));
        break;
      case Op::kSub:
        if (floats) return Value(a.as_double() - b.as_double());
        if (numbers) return checked_int(__builtin_sub_overflow(a.as_int(), b.as_int(), &int_tmp_));
        break;
      case Op::kMul:
        if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(a, b.as_int());
        if ((b.is_string() || b.is_list()) && a.is_integral()) return repeat(b, a.as_int());
        if (floats) return Value(a.as_double() * b.as_double());
        if (numbers) return checked_int(__builtin_mul_overflow(a.as_int(), b.as_int(), &int_tmp_));
        break;
      case Op::kDiv:
        if (numbers) {
          if (b.as_double() == 0.0) return type_error("division by zero");
          return Value(a.as_double() / b.as_double());
        }
        break;
      case Op::kFloorDiv:
      case Op::kMod:
        if (numbers) {
          if (b.as_double() == 0.0) return type_error("integer division or modulo by zero");
          if (floats) {
            const double x = a.as_double();
            const double y = b.as_double();
            const double q = std::floor(x / y);
            return op == Op::kFloorDiv ? Value(q) : Value(x - q * y);
          }
          const int64_t x = a.as_int();
          const int64_t y = b.as_int();
          if (x == INT64_MIN && y == -1) return type_error("integer overflow");
          int64_t q = x / y;
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          return op == Op::kFloorDiv ? Value(q) : Value(x - q * y);
        }
        if (a.is_string()) return type_error("printf-style '%' formatting is not supported");
        break;
      case Op::kPow:
        if (numbers) {
          if (!floats && b.as_int() >= 0) {
            int64_t result = 1;
            int64_t base = a.as_int();
            int64_t exp = b.as_int();
            while (exp > 0) {
              if ((exp & 1) != 0 && __builtin_mul_overflow(result, base, &result)) {
                return type_error("integer overflow");
              }
              exp >>= 1;
              if (exp > 0 && __builtin_mul_overflow(base, base, &base)) {
                return type_error("integer overflow");
              }
            }
            return Value(result);
          }
          return Value(std::pow(a.as_double(), b.as_double()));
        }
        break;
      default:
        break;
    }
    return type_error("unsupported operand types " + operand_types(a, b));
  }

  Result<Value> checked_int(bool overflow) const {
    if (overflow) return type_error("integer overflow");
    return Value(int_tmp_);
  }

  RenderLimits limits_;
  BuiltinEnv env_;
  Scope root_;
  Value block_input_;
  uint64_t steps_ = 0;
  uint64_t iterations_ = 0;
  int call_depth_ = 0;
  int64_t int_tmp_ = 0;
};

}  // namespace

Result<std::string> render_program(const Program& program, const RenderContext& context) {
  Interpreter interpreter(context);
  return interpreter.run(program);
}

}  // namespace synapse::chat
