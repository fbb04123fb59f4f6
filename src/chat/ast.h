// SPDX-License-Identifier: Apache-2.0
// The syntax tree of a compiled template: statements (Node) holding expressions (Expr). Built by
// the parser, read-only afterwards (one compiled template may render on many threads at once).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/lexer.h"
#include "chat/value.h"

namespace synapse::chat {

enum class Op : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kConcat,  // ~
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
  kNotIn,
};

enum class ExprKind : uint8_t {
  kLiteral,     // literal
  kName,        // name
  kList,        // args: items
  kTuple,       // args: items
  kDict,        // args: key, value, key, value, ...
  kGetAttr,     // args[0].name
  kGetItem,     // args[0][args[1]]
  kSlice,       // args[0][args[1]:args[2]:args[3]], missing parts null
  kCall,        // args[0](args[1..], kwargs)
  kFilter,      // args[0] | name(args[1..], kwargs); builtin: filter index
  kTest,        // args[0] is [not] name(args[1..]); builtin: test index
  kNot,         // not args[0]
  kNegate,      // -args[0]
  kPlus,        // +args[0]
  kBinary,      // args[0] op args[1]
  kCompare,     // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
  kAnd,         // args[0] and args[1]
  kOr,          // args[0] or args[1]
  kCondition,   // args[0] if args[1] else args[2] (args[2] may be null)
  kBlockInput,  // the captured body of {% filter %} / {% set x | f %}, fed to a filter chain
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  SourcePos pos;
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  Op op = Op::kAdd;
  std::vector<Op> ops;
  bool negated = false;
  int builtin = -1;
};

enum class NodeKind : uint8_t {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // branches, else_body
  kFor,          // targets, expr (iterable), condition, body, else_body
  kSet,          // targets (or name + attribute for ns.attr) = expr
  kSetBlock,     // {% set name | filters %} body {% endset %}; expr: the filter chain or null
  kMacro,        // name, params, defaults, body
  kFilterBlock,  // {% filter f %} body {% endfilter %}; expr: the filter chain
  kWith,         // targets = values, body
  kBreak,
  kContinue,
  kBlock,  // a transparent body ({% generation %} of HF's AssistantTracker)
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct IfBranch {
  ExprPtr condition;
  std::vector<NodePtr> body;
};

struct Node {
  NodeKind kind = NodeKind::kText;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<IfBranch> branches;
  std::vector<NodePtr> body;
  std::vector<NodePtr> else_body;
  std::vector<std::string> targets;  // one name, or several to unpack
  bool unpack = false;               // targets came as a tuple (`a, b` or `(a,)`)
  std::string name;                  // macro name; set: the namespace for `ns.attr`
  std::string attribute;             // set: `ns.attr`
  std::vector<std::string> params;   // macro parameters
  std::vector<ExprPtr> values;       // macro defaults (null: none), with values
};

struct Program {
  std::vector<NodePtr> body;
};

}  // namespace synapse::chat
