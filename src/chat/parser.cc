// SPDX-License-Identifier: Apache-2.0
// The template parser: one recursive-descent class whose statement and expression halves call
// into each other at every level (blocks hold expressions, expressions hold macro calls with
// bodies). It stays one file of ~820 lines on purpose: splitting it would mean exposing the class
// and its token cursor in a header only to share them between two files.
#include "chat/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include "chat/builtins.h"

namespace synapse::chat {
namespace {

using Enders = std::initializer_list<std::string_view>;

ExprPtr make_expr(ExprKind kind, SourcePos pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<std::unique_ptr<Program>> run() {
    auto program = std::make_unique<Program>();
    std::string found;
    SYN_ASSIGN_OR_RETURN(program->body, parse_body({}, found));
    return program;
  }

 private:
  // RAII depth accounting for recursion.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser& parser) : parser_(parser) { ++parser_.depth_; }
    ~DepthGuard() { --parser_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& parser_;
  };

  Status check_depth() const {
    if (depth_ > kMaxParseDepth) {
      return error(peek(), "nesting deeper than " + std::to_string(kMaxParseDepth) + " levels");
    }
    return ok_status();
  }

  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(index_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& token = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return token;
  }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOperator && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  static std::string describe_token(const Token& token) {
    switch (token.kind) {
      case TokenKind::kText:
        return "text";
      case TokenKind::kVariableBegin:
        return "'{{'";
      case TokenKind::kVariableEnd:
        return "'}}'";
      case TokenKind::kBlockBegin:
        return "'{%'";
      case TokenKind::kBlockEnd:
        return "'%}'";
      case TokenKind::kName:
        return "'" + token.text + "'";
      case TokenKind::kString:
        return "a string";
      case TokenKind::kInteger:
      case TokenKind::kFloat:
        return "a number";
      case TokenKind::kOperator:
        return "'" + token.text + "'";
      case TokenKind::kEnd:
        return "the end of the template";
    }
    return "a token";
  }

  Status error(const Token& at, const std::string& message) const {
    return Status(ErrorCode::kTemplateSyntax, message + " (" + describe(at.pos) + ")");
  }

  Status expect_op(std::string_view op) {
    if (skip_op(op)) return ok_status();
    return error(peek(), "expected '" + std::string(op) + "', found " + describe_token(peek()));
  }
  Status expect_kind(TokenKind kind, std::string_view what) {
    if (peek().kind == kind) {
      next();
      return ok_status();
    }
    return error(peek(), "expected " + std::string(what) + ", found " + describe_token(peek()));
  }
  Status expect_block_end() { return expect_kind(TokenKind::kBlockEnd, "'%}'"); }
  Result<std::string> expect_name() {
    if (peek().kind != TokenKind::kName) {
      return error(peek(), "expected a name, found " + describe_token(peek()));
    }
    return next().text;
  }

  // Statements up to `{% <ender> ...`; the ender's name is consumed and returned in `found`.
  Result<std::vector<NodePtr>> parse_body(Enders enders, std::string& found) {
    DepthGuard guard(*this);
    SYN_RETURN_IF_ERROR(check_depth());
    std::vector<NodePtr> body;
    while (true) {
      const Token& token = peek();
      switch (token.kind) {
        case TokenKind::kText: {
          auto node = std::make_unique<Node>();
          node->kind = NodeKind::kText;
          node->pos = token.pos;
          node->text = next().text;
          body.push_back(std::move(node));
          break;
        }
        case TokenKind::kVariableBegin: {
          auto node = std::make_unique<Node>();
          node->kind = NodeKind::kOutput;
          node->pos = next().pos;
          SYN_ASSIGN_OR_RETURN(node->expr, parse_tuple(true, false, {}));
          SYN_RETURN_IF_ERROR(expect_kind(TokenKind::kVariableEnd, "'}}'"));
          body.push_back(std::move(node));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = peek(1);
          if (name.kind == TokenKind::kName &&
              std::find(enders.begin(), enders.end(), name.text) != enders.end()) {
            next();
            found = next().text;
            return body;
          }
          next();
          SYN_ASSIGN_OR_RETURN(NodePtr node, parse_statement());
          body.push_back(std::move(node));
          break;
        }
        case TokenKind::kEnd:
          if (enders.size() > 0) {
            return error(token, "unexpected end of template, expected '" +
                                    std::string(*(enders.end() - 1)) + "'");
          }
          return body;
        default:
          return error(token, "unexpected " + describe_token(token));
      }
    }
  }

  Result<NodePtr> parse_statement() {
    const Token& token = peek();
    if (token.kind != TokenKind::kName) {
      return error(token, "expected a tag name, found " + describe_token(token));
    }
    const std::string name = token.text;
    auto node = std::make_unique<Node>();
    node->pos = token.pos;
    next();
    if (name == "if") return parse_if(std::move(node));
    if (name == "for") return parse_for(std::move(node));
    if (name == "set") return parse_set(std::move(node));
    if (name == "macro") return parse_macro(std::move(node));
    if (name == "filter") return parse_filter_block(std::move(node));
    if (name == "with") return parse_with(std::move(node));
    if (name == "generation") {
      node->kind = NodeKind::kBlock;
      SYN_RETURN_IF_ERROR(expect_block_end());
      return parse_closing(std::move(node), "endgeneration");
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return error(token, "'" + name + "' outside a loop");
      node->kind = name == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      SYN_RETURN_IF_ERROR(expect_block_end());
      return node;
    }
    if (name == "include" || name == "import" || name == "from" || name == "extends" ||
        name == "block" || name == "call" || name == "do" || name == "autoescape") {
      return error(token, "the '" + name + "' tag is not supported in chat templates");
    }
    return error(token, "unknown tag '" + name + "'");
  }

  Result<NodePtr> parse_closing(NodePtr node, std::string_view ender) {
    std::string found;
    SYN_ASSIGN_OR_RETURN(node->body, parse_body({ender}, found));
    SYN_RETURN_IF_ERROR(expect_block_end());
    return node;
  }

  Result<NodePtr> parse_if(NodePtr node) {
    node->kind = NodeKind::kIf;
    while (true) {
      IfBranch branch;
      SYN_ASSIGN_OR_RETURN(branch.condition, parse_tuple(false, false, {}));
      SYN_RETURN_IF_ERROR(expect_block_end());
      std::string found;
      SYN_ASSIGN_OR_RETURN(branch.body, parse_body({"elif", "else", "endif"}, found));
      node->branches.push_back(std::move(branch));
      if (found == "elif") continue;
      SYN_RETURN_IF_ERROR(expect_block_end());
      if (found == "else") {
        SYN_ASSIGN_OR_RETURN(node->else_body, parse_body({"endif"}, found));
        SYN_RETURN_IF_ERROR(expect_block_end());
      }
      return node;
    }
  }

  // Assignment targets: `name`, `a, b` or `(a, b)`.
  Status parse_targets(Node& node, std::string_view end_name) {
    const bool parenthesized = skip_op("(");
    while (true) {
      SYN_ASSIGN_OR_RETURN(std::string target, expect_name());
      node.targets.push_back(std::move(target));
      if (!skip_op(",")) break;
      node.unpack = true;
      if ((parenthesized && is_op(")")) || (!end_name.empty() && is_name(end_name)) || is_op("=")) {
        break;
      }
    }
    if (parenthesized) {
      node.unpack = true;
      SYN_RETURN_IF_ERROR(expect_op(")"));
    }
    return ok_status();
  }

  Result<NodePtr> parse_for(NodePtr node) {
    node->kind = NodeKind::kFor;
    SYN_RETURN_IF_ERROR(parse_targets(*node, "in"));
    if (!skip_name("in")) return error(peek(), "expected 'in' in a for loop");
    SYN_ASSIGN_OR_RETURN(node->expr, parse_tuple(false, false, {"recursive"}));
    if (skip_name("if")) {
      SYN_ASSIGN_OR_RETURN(node->condition, parse_expression(true));
    }
    if (is_name("recursive")) return error(peek(), "recursive loops are not supported");
    SYN_RETURN_IF_ERROR(expect_block_end());
    ++loop_depth_;
    std::string found;
    auto body = parse_body({"endfor", "else"}, found);
    --loop_depth_;
    if (!body.ok()) return std::move(body).take_status();
    node->body = std::move(body).value();
    SYN_RETURN_IF_ERROR(expect_block_end());
    if (found == "else") {
      SYN_ASSIGN_OR_RETURN(node->else_body, parse_body({"endfor"}, found));
      SYN_RETURN_IF_ERROR(expect_block_end());
    }
    return node;
  }

  Result<NodePtr> parse_set(NodePtr node) {
    if (peek().kind == TokenKind::kName && is_op(".", 1)) {
      node->kind = NodeKind::kSet;
      node->name = next().text;
      next();
      SYN_ASSIGN_OR_RETURN(node->attribute, expect_name());
      SYN_RETURN_IF_ERROR(expect_op("="));
      SYN_ASSIGN_OR_RETURN(node->expr, parse_tuple(true, false, {}));
      SYN_RETURN_IF_ERROR(expect_block_end());
      return node;
    }
    SYN_RETURN_IF_ERROR(parse_targets(*node, ""));
    if (skip_op("=")) {
      node->kind = NodeKind::kSet;
      SYN_ASSIGN_OR_RETURN(node->expr, parse_tuple(true, false, {}));
      SYN_RETURN_IF_ERROR(expect_block_end());
      return node;
    }
    if (node->unpack) return error(peek(), "a block set assigns one name");
    node->kind = NodeKind::kSetBlock;
    if (is_op("|")) {
      SYN_ASSIGN_OR_RETURN(node->expr,
                           parse_filters(make_expr(ExprKind::kBlockInput, peek().pos), false));
    }
    SYN_RETURN_IF_ERROR(expect_block_end());
    return parse_closing(std::move(node), "endset");
  }

  Result<NodePtr> parse_macro(NodePtr node) {
    node->kind = NodeKind::kMacro;
    SYN_ASSIGN_OR_RETURN(node->name, expect_name());
    SYN_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      if (!node->params.empty()) SYN_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
      SYN_ASSIGN_OR_RETURN(std::string param, expect_name());
      ExprPtr default_value;
      if (skip_op("=")) {
        SYN_ASSIGN_OR_RETURN(default_value, parse_expression(true));
      } else if (!node->values.empty() && node->values.back() != nullptr) {
        return error(peek(), "a parameter without a default follows one with a default");
      }
      node->params.push_back(std::move(param));
      node->values.push_back(std::move(default_value));
    }
    next();
    SYN_RETURN_IF_ERROR(expect_block_end());
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;  // `break` inside a macro cannot leave a loop outside it
    auto result = parse_closing(std::move(node), "endmacro");
    loop_depth_ = saved_loop_depth;
    return result;
  }

  Result<NodePtr> parse_filter_block(NodePtr node) {
    node->kind = NodeKind::kFilterBlock;
    SYN_ASSIGN_OR_RETURN(node->expr,
                         parse_filters(make_expr(ExprKind::kBlockInput, peek().pos), true));
    SYN_RETURN_IF_ERROR(expect_block_end());
    return parse_closing(std::move(node), "endfilter");
  }

  Result<NodePtr> parse_with(NodePtr node) {
    node->kind = NodeKind::kWith;
    while (!(peek().kind == TokenKind::kBlockEnd)) {
      if (!node->targets.empty()) SYN_RETURN_IF_ERROR(expect_op(","));
      SYN_ASSIGN_OR_RETURN(std::string target, expect_name());
      SYN_RETURN_IF_ERROR(expect_op("="));
      SYN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
      node->targets.push_back(std::move(target));
      node->values.push_back(std::move(value));
    }
    next();
    return parse_closing(std::move(node), "endwith");
  }

  // ---- Expressions, lowest precedence first (Jinja's parser.py) ----

  bool at_tuple_end(Enders extra) const {
    const Token& token = peek();
    if (token.kind == TokenKind::kVariableEnd || token.kind == TokenKind::kBlockEnd ||
        token.kind == TokenKind::kEnd || is_op(")")) {
      return true;
    }
    return token.kind == TokenKind::kName &&
           std::find(extra.begin(), extra.end(), token.text) != extra.end();
  }

  Result<ExprPtr> parse_tuple(bool with_condition, bool explicit_parens, Enders extra) {
    const SourcePos pos = peek().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) SYN_RETURN_IF_ERROR(expect_op(","));
      if (at_tuple_end(extra)) break;
      SYN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condition));
      items.push_back(std::move(item));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) {
        return error(peek(), "expected an expression, found " + describe_token(peek()));
      }
    }
    auto tuple = make_expr(ExprKind::kTuple, pos);
    tuple->args = std::move(items);
    return tuple;
  }

  Result<ExprPtr> parse_expression(bool with_condition) {
    return with_condition ? parse_condition() : parse_or();
  }

  Result<ExprPtr> parse_condition() {
    DepthGuard guard(*this);
    SYN_RETURN_IF_ERROR(check_depth());
    SYN_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
    while (is_name("if")) {
      auto cond = make_expr(ExprKind::kCondition, next().pos);
      SYN_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
      ExprPtr otherwise;
      if (skip_name("else")) {
        SYN_ASSIGN_OR_RETURN(otherwise, parse_condition());
      }
      cond->args.push_back(std::move(expr));
      cond->args.push_back(std::move(test));
      cond->args.push_back(std::move(otherwise));
      expr = std::move(cond);
    }
    return expr;
  }

  Result<ExprPtr> parse_or() {
    SYN_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (is_name("or")) {
      auto node = make_expr(ExprKind::kOr, next().pos);
      SYN_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
      node->args.push_back(std::move(left));
      node->args.push_back(std::move(right));
      left = std::move(node);
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    SYN_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (is_name("and")) {
      auto node = make_expr(ExprKind::kAnd, next().pos);
      SYN_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
      node->args.push_back(std::move(left));
      node->args.push_back(std::move(right));
      left = std::move(node);
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (!is_name("not")) return parse_compare();
    DepthGuard guard(*this);
    SYN_RETURN_IF_ERROR(check_depth());
    auto node = make_expr(ExprKind::kNot, next().pos);
    SYN_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    node->args.push_back(std::move(operand));
    return node;
  }

  Result<ExprPtr> parse_compare() {
    const SourcePos pos = peek().pos;
    SYN_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    auto node = make_expr(ExprKind::kCompare, pos);
    node->args.push_back(std::move(first));
    while (true) {
      Op op;
      if (is_op("==")) {
        op = Op::kEq;
      } else if (is_op("!=")) {
        op = Op::kNe;
      } else if (is_op("<")) {
        op = Op::kLt;
      } else if (is_op("<=")) {
        op = Op::kLe;
      } else if (is_op(">")) {
        op = Op::kGt;
      } else if (is_op(">=")) {
        op = Op::kGe;
      } else if (is_name("in")) {
        op = Op::kIn;
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        op = Op::kNotIn;
      } else {
        break;
      }
      next();
      SYN_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
      node->ops.push_back(op);
      node->args.push_back(std::move(operand));
    }
    if (node->ops.empty()) return std::move(node->args[0]);
    return node;
  }

  ExprPtr binary(Op op, SourcePos pos, ExprPtr left, ExprPtr right) {
    auto node = make_expr(ExprKind::kBinary, pos);
    node->op = op;
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    return node;
  }

  Result<ExprPtr> parse_math1() {
    SYN_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
    while (is_op("+") || is_op("-")) {
      const Token& token = next();
      const Op op = token.text == "+" ? Op::kAdd : Op::kSub;
      SYN_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
      left = binary(op, token.pos, std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_concat() {
    SYN_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
    while (is_op("~")) {
      const SourcePos pos = next().pos;
      SYN_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
      left = binary(Op::kConcat, pos, std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
    SYN_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& token = next();
      const Op op = token.text == "*"    ? Op::kMul
                    : token.text == "/"  ? Op::kDiv
                    : token.text == "//" ? Op::kFloorDiv
                                         : Op::kMod;
      SYN_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
      left = binary(op, token.pos, std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_pow() {
    SYN_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
      const SourcePos pos = next().pos;
      SYN_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
      left = binary(Op::kPow, pos, std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    SYN_RETURN_IF_ERROR(check_depth());
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token& token = next();
      node = make_expr(token.text == "-" ? ExprKind::kNegate : ExprKind::kPlus, token.pos);
      SYN_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node->args.push_back(std::move(operand));
    } else {
      SYN_ASSIGN_OR_RETURN(node, parse_primary());
    }
    SYN_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (with_filter) return parse_filter_expr(std::move(node));
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& token = peek();
    const SourcePos pos = token.pos;
    switch (token.kind) {
      case TokenKind::kName: {
        auto node = make_expr(ExprKind::kLiteral, pos);
        const std::string& name = token.text;
        if (name == "true" || name == "True") {
          node->literal = Value(true);
        } else if (name == "false" || name == "False") {
          node->literal = Value(false);
        } else if (name == "none" || name == "None") {
          node->literal = Value::none();
        } else {
          node->kind = ExprKind::kName;
          node->name = name;
        }
        next();
        return node;
      }
      case TokenKind::kString: {
        std::string text;
        while (peek().kind == TokenKind::kString) text += next().text;  // adjacent literals join
        auto node = make_expr(ExprKind::kLiteral, pos);
        node->literal = Value(std::move(text));
        return node;
      }
      case TokenKind::kInteger:
      case TokenKind::kFloat: {
        auto node = make_expr(ExprKind::kLiteral, pos);
        node->literal =
            token.kind == TokenKind::kInteger ? Value(token.int_value) : Value(token.float_value);
        next();
        return node;
      }
      default:
        break;
    }
    if (skip_op("(")) {
      SYN_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true, true, {}));
      SYN_RETURN_IF_ERROR(expect_op(")"));
      return inner;
    }
    if (skip_op("[")) {
      auto node = make_expr(ExprKind::kList, pos);
      while (!is_op("]")) {
        if (!node->args.empty()) SYN_RETURN_IF_ERROR(expect_op(","));
        if (is_op("]")) break;
        SYN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
        node->args.push_back(std::move(item));
      }
      next();
      return node;
    }
    if (skip_op("{")) {
      auto node = make_expr(ExprKind::kDict, pos);
      while (!is_op("}")) {
        if (!node->args.empty()) SYN_RETURN_IF_ERROR(expect_op(","));
        if (is_op("}")) break;
        SYN_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
        SYN_RETURN_IF_ERROR(expect_op(":"));
        SYN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        node->args.push_back(std::move(key));
        node->args.push_back(std::move(value));
      }
      next();
      return node;
    }
    return error(token, "unexpected " + describe_token(token));
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const SourcePos pos = next().pos;
        const Token& attr = peek();
        if (attr.kind == TokenKind::kName) {
          auto get = make_expr(ExprKind::kGetAttr, pos);
          get->name = next().text;
          get->args.push_back(std::move(node));
          node = std::move(get);
        } else if (attr.kind == TokenKind::kInteger) {
          auto get = make_expr(ExprKind::kGetItem, pos);
          auto index = make_expr(ExprKind::kLiteral, attr.pos);
          index->literal = Value(next().int_value);
          get->args.push_back(std::move(node));
          get->args.push_back(std::move(index));
          node = std::move(get);
        } else {
          return error(attr, "expected an attribute name after '.'");
        }
      } else if (is_op("[")) {
        SYN_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
      } else if (is_op("(")) {
        SYN_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr target) {
    DepthGuard guard(*this);
    SYN_RETURN_IF_ERROR(check_depth());
    const SourcePos pos = next().pos;  // '['
    std::vector<ExprPtr> parts;        // start, stop, step; or a single index
    bool is_slice = false;
    for (int part = 0; part < 3; ++part) {
      if (part > 0) {
        if (!skip_op(":")) break;
        is_slice = true;
      }
      if (is_op(":") || is_op("]")) {
        parts.push_back(nullptr);
        continue;
      }
      SYN_ASSIGN_OR_RETURN(ExprPtr e, parse_expression(true));
      parts.push_back(std::move(e));
    }
    if (is_op(",")) return error(peek(), "tuple subscripts are not supported");
    SYN_RETURN_IF_ERROR(expect_op("]"));
    if (!is_slice) {
      if (parts.empty() || parts[0] == nullptr) return error(peek(), "expected an index");
      auto get = make_expr(ExprKind::kGetItem, pos);
      get->args.push_back(std::move(target));
      get->args.push_back(std::move(parts[0]));
      return get;
    }
    auto slice = make_expr(ExprKind::kSlice, pos);
    slice->args.push_back(std::move(target));
    parts.resize(3);
    for (auto& p : parts) slice->args.push_back(std::move(p));
    return slice;
  }

  // `(args, key=value)` after a callee, a filter or a test, appended to `node`.
  Status parse_call_args(Expr& node) {
    SYN_RETURN_IF_ERROR(expect_op("("));
    bool need_comma = false;
    while (!is_op(")")) {
      if (need_comma) {
        SYN_RETURN_IF_ERROR(expect_op(","));
        if (is_op(")")) break;
      }
      if (is_op("*") || is_op("**")) return error(peek(), "*args and **kwargs are not supported");
      if (peek().kind == TokenKind::kName && is_op("=", 1)) {
        std::string key = next().text;
        next();
        SYN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        node.kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!node.kwargs.empty()) {
          return error(peek(), "a positional argument follows a keyword argument");
        }
        SYN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        node.args.push_back(std::move(value));
      }
      need_comma = true;
    }
    next();
    return ok_status();
  }

  Result<ExprPtr> parse_call(ExprPtr callee) {
    DepthGuard guard(*this);
    SYN_RETURN_IF_ERROR(check_depth());
    auto call = make_expr(ExprKind::kCall, peek().pos);
    call->args.push_back(std::move(callee));
    SYN_RETURN_IF_ERROR(parse_call_args(*call));
    return call;
  }

  Result<std::string> dotted_name() {
    SYN_ASSIGN_OR_RETURN(std::string name, expect_name());
    while (is_op(".") && peek(1).kind == TokenKind::kName) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  // `| f | g(x)`; `inline_first`: the first filter has no leading bar ({% filter f %}).
  Result<ExprPtr> parse_filters(ExprPtr node, bool inline_first) {
    while (inline_first || is_op("|")) {
      if (!inline_first) next();
      inline_first = false;
      const Token& token = peek();
      SYN_ASSIGN_OR_RETURN(std::string name, dotted_name());
      auto filter = make_expr(ExprKind::kFilter, token.pos);
      filter->builtin = find_filter(name);
      if (filter->builtin < 0) return error(token, "unknown filter '" + name + "'");
      filter->name = std::move(name);
      filter->args.push_back(std::move(node));
      if (is_op("(")) {
        DepthGuard guard(*this);
        SYN_RETURN_IF_ERROR(check_depth());
        SYN_RETURN_IF_ERROR(parse_call_args(*filter));
      }
      node = std::move(filter);
    }
    return node;
  }

  Result<ExprPtr> parse_test(ExprPtr node) {
    const SourcePos pos = next().pos;  // 'is'
    const bool negated = skip_name("not");
    const Token& token = peek();
    SYN_ASSIGN_OR_RETURN(std::string name, dotted_name());
    auto test = make_expr(ExprKind::kTest, pos);
    test->builtin = find_test(name);
    if (test->builtin < 0) return error(token, "unknown test '" + name + "'");
    test->name = std::move(name);
    test->negated = negated;
    test->args.push_back(std::move(node));
    if (is_op("(")) {
      DepthGuard guard(*this);
      SYN_RETURN_IF_ERROR(check_depth());
      SYN_RETURN_IF_ERROR(parse_call_args(*test));
    } else {
      const Token& arg = peek();
      const bool starts_argument = arg.kind == TokenKind::kName || arg.kind == TokenKind::kString ||
                                   arg.kind == TokenKind::kInteger ||
                                   arg.kind == TokenKind::kFloat || is_op("(") || is_op("[") ||
                                   is_op("{");
      if (starts_argument && !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) return error(arg, "tests cannot be chained with 'is'");
        DepthGuard guard(*this);
        SYN_RETURN_IF_ERROR(check_depth());
        SYN_ASSIGN_OR_RETURN(ExprPtr value, parse_primary());
        SYN_ASSIGN_OR_RETURN(value, parse_postfix(std::move(value)));
        test->args.push_back(std::move(value));
      }
    }
    return test;
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        SYN_ASSIGN_OR_RETURN(node, parse_filters(std::move(node), false));
      } else if (is_name("is")) {
        SYN_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
      } else if (is_op("(")) {
        SYN_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t index_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<std::unique_ptr<Program>> parse_template(std::vector<Token> tokens) {
  if (tokens.empty() || tokens.back().kind != TokenKind::kEnd) {
    tokens.push_back(Token{TokenKind::kEnd, "", 0, 0.0, {}});
  }
  return Parser(std::move(tokens)).run();
}

}  // namespace synapse::chat
