// SPDX-License-Identifier: Apache-2.0
// The built-in templates' text, generated at build time from templates/*.jinja
// (CMakeLists.txt writes builtin_templates.cc), so the files stay the one source.
#pragma once

#include <span>
#include <string_view>

namespace synapse::chat {

struct BuiltinTemplate {
  std::string_view name;
  std::string_view source;
};

std::span<const BuiltinTemplate> builtin_template_table();

}  // namespace synapse::chat
