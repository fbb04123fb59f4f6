// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of chat_template_fuzz: every built-in chat template plus short
// templates that reach each statement, filter and method family.
//   make_chat_template_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "chat/chat_template.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int n = 0;
  auto write = [&](const std::string& name, std::string_view text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
    ++n;
  };
  for (std::string_view name : synapse::chat::builtin_template_names()) {
    write("builtin_" + std::string(name), *synapse::chat::builtin_template(name));
  }
  // One template per line: split literals would read as missing commas (-Wstring-concatenation).
  // clang-format off
  const char* const snippets[] = {
      "{% set ns = namespace(a=1) %}{% for m in messages if m.content %}{% set ns.a = ns.a * 2 %}\
{{ loop.index }}{{ m.role | upper }}{% endfor %}{{ ns.a }}",
      "{% macro f(x, y='d') -%} {{ x ~ y }} {%- endmacro %}{{ f(1) }}{{ f(2, y=3) }}",
      "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(', ') }}",
      "{{ tools | tojson(indent=2) }}{{ messages[2].tool_calls[0].function.arguments | items | list }}",
      "{{ 'a,b'.split(',') }}{{ '  x '.strip() }}{{ 'abc'[::-1] }}{{ messages[-1]['content'][1:3] }}",
      "{% if x is not defined and 1 < 2 <= 3 %}{{ (1, 2) + (3,) }}{% elif y %}{% else %}{% endif %}",
      "{%- for i in range(3) %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor -%}",
      "{% set c %}{{ bos_token }}{% endset %}{% filter trim %} {{ c }} {% endfilter %}{# c #}",
      "{{ raise_exception('no') }}",
      "{{ strftime_now('%d %b %Y') }}{{ dict(a=1) }}{{ 7 // 2 }}{{ 2 ** 10 }}{{ 'x' * 3 }}",
  };
  // clang-format on

  int i = 0;
  for (const char* s : snippets) write("snippet_" + std::to_string(i++), s);
  std::printf("make_chat_template_seeds: %d seeds\n", n);
  return 0;
}
