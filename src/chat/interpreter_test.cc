// SPDX-License-Identifier: Apache-2.0
// The interpreter on small templates: Jinja semantics, whitespace control and limits.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace synapse::chat {
namespace {

Result<std::string> run(std::string_view source, const nlohmann::ordered_json& vars = {},
                        RenderLimits limits = {}) {
  SYN_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize_template(source));
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, parse_template(std::move(tokens)));
  RenderContext context;
  context.limits = limits;
  if (vars.is_object()) {
    for (const auto& [key, item] : vars.items()) context.variables.set(key, value_from_json(item));
  }
  return render_program(*program, context);
}

std::string ok(std::string_view source, const nlohmann::ordered_json& vars = {}) {
  auto r = run(source, vars);
  EXPECT_TRUE(r.ok()) << source << ": " << r.status().to_string();
  return r.ok() ? *r : std::string();
}

TEST(Interpreter, Literals) {
  EXPECT_EQ(ok("{{ 1/2 }} {{ 3//2 }} {{ 7 % 3 }} {{ 2**10 }} {{ 'a' * 3 }} {{ 1 ~ 2 }}"),
            "0.5 1 1 1024 aaa 12");
  EXPECT_EQ(ok("{{ none }} {{ true }} {{ [1, 'a', none] }} {{ {'k': 1.0} }} {{ (1,) }}"),
            "None True [1, 'a', None] {'k': 1.0} (1,)");
  EXPECT_EQ(ok("{{ -7 // 2 }} {{ -7 % 3 }} {{ 1e20 }} {{ 0.1 + 0.2 }}"),
            "-4 2 1e+20 0.30000000000000004");
}

TEST(Interpreter, ScopesFollowJinja) {
  EXPECT_EQ(
      ok("{% set y = 0 %}{% for x in [1,2,3] %}{{ y }}{% set y = x %}{{ y }}|{% endfor %}{{ y }}"),
      "01|02|03|0");
  EXPECT_EQ(ok("{% set ns = namespace(n=0) %}{% for x in [1,2,3] %}{% set ns.n = ns.n + x %}"
               "{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(ok("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ g }}{% endmacro %}{% set g = 7 %}"
               "{{ m(1) }}{{ m(1, b=3) }}"),
            "127137");
}

TEST(Interpreter, LoopVariables) {
  EXPECT_EQ(ok("{% for x in 'abc' %}{{ loop.index }}{{ loop.first }}{{ loop.last }}"
               "{{ loop.revindex0 }}{% if not loop.last %},{% endif %}{% endfor %}"),
            "1TrueFalse2,2FalseFalse1,3FalseTrue0");
  EXPECT_EQ(ok("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% else %}none"
               "{% endfor %}"),
            "2242");
  EXPECT_EQ(ok("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(
      ok("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}),
      "b=1;a=2;");
  EXPECT_EQ(ok("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{% if x == 1 %}"
               "{% continue %}{% endif %}{{ x }}{% endfor %}"),
            "02");
}

TEST(Interpreter, WhitespaceControl) {
  // trim_blocks and lstrip_blocks, as Hugging Face sets them.
  EXPECT_EQ(ok("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(ok("a  {{- ' b ' -}}  c"), "a b c");
  EXPECT_EQ(ok("a\n{#- comment -#}\nb"), "ab");
  EXPECT_EQ(ok("x\n"), "x");
  EXPECT_EQ(ok("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
}

TEST(Interpreter, StringsAndFilters) {
  EXPECT_EQ(ok("{{ '  hi  '.strip() }}|{{ 'a,b,c'.split(',') }}|{{ 'abc'.startswith('ab') }}"
               "|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'AbC'.lower() }}{{ 'x' | upper }}"),
            "hi|['a', 'b', 'c']|True|True|abcX");
  EXPECT_EQ(ok("{{ 'abcdef'[1:4] }}{{ 'abc'[::-1] }}{{ [1,2,3][-1] }}{{ 'héllo' | length }}"),
            "bcdcba35");
  EXPECT_EQ(
      ok("{{ x | default('d') }}{{ '' | default('e', true) }}{{ [3,1,2] | sort | join('-') }}"),
      "de1-2-3");
  EXPECT_EQ(ok("{{ m | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}",
               {{"m", {{{"role", "user"}, {"c", 1}}, {{"role", "bot"}, {"c", 2}}}}}),
            "[1]");
  EXPECT_EQ(ok("{{ {'b': [1, 2.5, none, true], 'a': 'é\"'} | tojson }}"),
            "{\"b\": [1, 2.5, null, true], \"a\": \"é\\\"\"}");
  EXPECT_EQ(ok("{{ {'a': 1} | tojson(indent=2) }}"), "{\n  \"a\": 1\n}");
  EXPECT_EQ(ok("{% set x %}in{{ 1 }}{% endset %}{{ x }}{% filter upper %}up{% endfilter %}"),
            "in1UP");
}

TEST(Interpreter, UndefinedSemantics) {
  EXPECT_EQ(ok("[{{ missing }}]{{ missing is defined }}{{ d.nope is defined }}",
               {{"d", nlohmann::ordered_json::object()}}),
            "[]FalseFalse");
  auto r = run("{{ missing.attr }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kTemplateError);
  EXPECT_NE(r.status().message().find("line 1, column"), std::string::npos) << r.status().message();
}

TEST(Interpreter, ErrorsCarryPositions) {
  auto syntax = run("hello\n{% if %}");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.status().code(), ErrorCode::kTemplateSyntax);
  EXPECT_NE(syntax.status().message().find("line 2"), std::string::npos);
  auto type = run("{{ 'a' + 1 }}");
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.status().code(), ErrorCode::kTemplateError);
  auto raised = run("{{ raise_exception('nope') }}");
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), ErrorCode::kTemplateRaised);
  EXPECT_EQ(raised.status().message(), "nope");
  EXPECT_EQ(run("{% endfor %}").status().code(), ErrorCode::kTemplateSyntax);
  EXPECT_EQ(run("{{ x | nosuchfilter }}").status().code(), ErrorCode::kTemplateSyntax);
  EXPECT_EQ(run("{% include 'x' %}").status().code(), ErrorCode::kTemplateSyntax);
}

TEST(Interpreter, LimitsStopHostileTemplates) {
  RenderLimits limits;
  limits.max_output_bytes = 1000;
  limits.max_loop_iterations = 500;
  EXPECT_EQ(
      run("{% for i in range(100) %}{% for j in range(100) %}x{% endfor %}{% endfor %}", {}, limits)
          .status()
          .code(),
      ErrorCode::kLimitExceeded);
  EXPECT_EQ(run("{{ 'x' * 100000 }}", {}, limits).status().code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(run("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", {}, limits).status().code(),
            ErrorCode::kLimitExceeded);
  EXPECT_EQ(
      run("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
          "{% endfor %}",
          {}, limits)
          .status()
          .code(),
      ErrorCode::kLimitExceeded);
  EXPECT_EQ(run("{{ range(1000000000) }}").status().code(), ErrorCode::kLimitExceeded);
  // Nesting built in a loop is bounded, and a namespace cannot hold itself (a cycle).
  EXPECT_EQ(run("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
                "{% endfor %}{{ ns.x }}")
                .status()
                .code(),
            ErrorCode::kLimitExceeded);
  EXPECT_EQ(run("{% set ns = namespace() %}{% set ns.self = [ns] %}").status().code(),
            ErrorCode::kTemplateError);
  std::string deep(200, '(');
  EXPECT_EQ(run("{{ " + deep + "1" + std::string(200, ')') + " }}").status().code(),
            ErrorCode::kTemplateSyntax);
}

}  // namespace
}  // namespace synapse::chat
