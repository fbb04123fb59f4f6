// SPDX-License-Identifier: Apache-2.0
#include "constrain/tool_grammar.h"

namespace synapse::constrain {
namespace {

using Json = nlohmann::ordered_json;

std::string envelope(const ToolCallFormat& format, const std::string& name) {
  return "{\"name\": \"" + name + "\", \"" + format.arguments_key + "\": ";
}

}  // namespace

Result<Grammar> compile_tool_grammar(const ToolCallFormat& format,
                                     const std::vector<ToolFunction>& functions, ToolMode mode,
                                     const Json* content_schema, const JsonSchemaOptions& options) {
  if (functions.empty()) {
    return Status(ErrorCode::kInvalidGrammar, "a tool-call grammar needs at least one function");
  }
  GrammarBuilder b;
  RegexBuilder& rx = b.regex();
  // call ::= envelope(f) ARGS(f) "}"   for each function f
  const NonterminalId call = b.add_nonterminal("call");
  for (size_t i = 0; i < functions.size(); ++i) {
    const ToolFunction& f = functions[i];
    for (const char c : f.name) {
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
        return Status(ErrorCode::kInvalidGrammar,
                      "function name '" + f.name + "' has characters a call cannot spell",
                      ErrorWhere{.field = "tools[" + std::to_string(i) + "].function.name"});
      }
    }
    Result<Symbol> arguments = f.parameters.is_null() ? add_any_json_object(b, options)
                                                      : add_json_schema(b, f.parameters, options);
    if (!arguments.ok()) {
      return under_request_field(arguments.status(),
                                 "tools[" + std::to_string(i) + "].function.parameters");
    }
    b.add_rule(call, {b.literal(envelope(format, f.name)), *arguments, b.literal("}")});
  }
  // calls: one, or (parallel) several, in the family's framing.
  const NonterminalId calls = b.add_nonterminal("calls");
  if (!format.list_open.empty()) {
    // list_open "[" call (", " call)* "]"
    const NonterminalId more = b.add_nonterminal("more_calls");
    b.add_rule(more, {});
    if (format.parallel) {
      b.add_rule(more, {b.literal(", "), Symbol::nonterminal(call), Symbol::nonterminal(more)});
    }
    b.add_rule(calls, {b.literal(format.list_open + "["), Symbol::nonterminal(call),
                       Symbol::nonterminal(more), b.literal("]")});
  } else {
    // open call close (separator open call close)*
    const NonterminalId framed = b.add_nonterminal("framed_call");
    std::vector<Symbol> one;
    if (!format.open.empty()) one.push_back(b.literal(format.open));
    one.push_back(Symbol::nonterminal(call));
    if (!format.close.empty()) one.push_back(b.literal(format.close));
    b.add_rule(framed, one);
    b.add_rule(calls, {Symbol::nonterminal(framed)});
    if (format.parallel) {
      std::vector<Symbol> again = {Symbol::nonterminal(calls)};
      if (!format.separator.empty()) again.push_back(b.literal(format.separator));
      again.push_back(Symbol::nonterminal(framed));
      b.add_rule(calls, again);
    }
  }
  const NonterminalId root = b.add_nonterminal("root");
  if (mode == ToolMode::kRequired) {
    b.add_rule(root, {Symbol::nonterminal(calls)});
    return std::move(b).build(root);
  }
  // auto: a reply that calls nothing, or one that calls.
  if (content_schema != nullptr) {
    Result<Symbol> content = add_json_schema(b, *content_schema, options);
    if (!content.ok()) return std::move(content).take_status();
    b.add_rule(root, {*content});
    b.add_rule(root, {Symbol::nonterminal(calls)});
    return std::move(b).build(root);
  }
  // The trigger is the opener without its trailing white space (a model writes "<tool_call>"
  // as one token, then the newline): written, it commits the reply to a call.
  std::string trigger = format.list_open.empty() ? format.open : format.list_open;
  std::string rest_of_open;
  while (!trigger.empty() && (trigger.back() == '\n' || trigger.back() == ' ')) {
    rest_of_open.insert(rest_of_open.begin(), trigger.back());
    trigger.pop_back();
  }
  b.add_rule(root, {});  // an empty reply
  if (trigger.empty()) {
    // The call opens with its JSON object: free text is any text not starting with "{" or
    // white space (a reply that starts with blanks then "{" is read as a call by the parser,
    // so the grammar does not let text start that way).
    ByteSet first;
    first.add('{');
    first.add(' ');
    first.add('\n');
    first.add('\t');
    first.add('\r');
    const RegexId free_text = rx.concat(rx.bytes(first.complement()), rx.any_bytes());
    b.add_rule(root, {b.token(free_text)});
    b.add_rule(root, {Symbol::nonterminal(calls)});
    return std::move(b).build(root);
  }
  // Free text never contains the trigger; text ending in the trigger opens the calls, whose
  // first `open` it has already written.
  const RegexId has_trigger =
      rx.concat(rx.any_bytes(), rx.concat(rx.literal(trigger), rx.any_bytes()));
  const RegexId free_text = rx.intersect(
      rx.concat(rx.any_bytes(), rx.bytes(ByteSet().complement())), rx.complement(has_trigger));
  b.add_rule(root, {b.token(free_text)});
  const RegexId opening =
      rx.concat(rx.intersect(rx.any_bytes(), rx.complement(has_trigger)), rx.literal(trigger));
  // After the trigger: the rest of the first call, then more calls as usual.
  const NonterminalId rest = b.add_nonterminal("after_trigger");
  if (!format.list_open.empty()) {
    const NonterminalId more = b.add_nonterminal("more_after_trigger");
    b.add_rule(more, {});
    if (format.parallel) {
      b.add_rule(more, {b.literal(", "), Symbol::nonterminal(call), Symbol::nonterminal(more)});
    }
    b.add_rule(rest, {b.literal("["), Symbol::nonterminal(call), Symbol::nonterminal(more),
                      b.literal("]")});
  } else {
    std::vector<Symbol> first_call;
    if (!rest_of_open.empty()) first_call.push_back(b.literal(rest_of_open));
    first_call.push_back(Symbol::nonterminal(call));
    if (!format.close.empty()) first_call.push_back(b.literal(format.close));
    b.add_rule(rest, first_call);
    if (format.parallel) {
      std::vector<Symbol> again = {Symbol::nonterminal(rest)};
      if (!format.separator.empty()) again.push_back(b.literal(format.separator));
      const NonterminalId framed = b.add_nonterminal("framed_after_trigger");
      std::vector<Symbol> one = {b.literal(format.open), Symbol::nonterminal(call)};
      if (!format.close.empty()) one.push_back(b.literal(format.close));
      b.add_rule(framed, one);
      again.push_back(Symbol::nonterminal(framed));
      b.add_rule(rest, again);
    }
  }
  b.add_rule(root, {b.token(opening), Symbol::nonterminal(rest)});
  return std::move(b).build(root);
}

}  // namespace synapse::constrain
