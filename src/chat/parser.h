// SPDX-License-Identifier: Apache-2.0
// Jinja's grammar (the subset chat templates use) from tokens to a syntax tree, with Jinja's
// operator precedence. Unknown filters and tests, unsupported tags (include, extends, call,
// recursive loops) and `break` outside a loop are syntax errors, found when a template is
// compiled rather than when a request renders it.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/lexer.h"

namespace synapse::chat {

// Deeper nesting of expressions or blocks is refused, so that parsing (and evaluating, which
// follows the tree) cannot exhaust the stack.
inline constexpr int kMaxParseDepth = 64;

Result<std::unique_ptr<Program>> parse_template(std::vector<Token> tokens);

}  // namespace synapse::chat
