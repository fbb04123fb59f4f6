// SPDX-License-Identifier: Apache-2.0
// Runs a compiled template over a set of variables with Jinja's semantics (HF's sandboxed,
// non-strict environment: missing names are undefined, printing as ""). Every render is bounded:
// output size, value size, loop iterations, macro call depth and evaluation steps, so a hostile
// template fails with limit_exceeded instead of exhausting memory, stack or time.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/value.h"

namespace synapse::chat {

struct RenderLimits {
  uint64_t max_output_bytes = 4u << 20;     // the rendered prompt, and every string or list built
  uint64_t max_loop_iterations = 1u << 20;  // summed over all loops of one render
  uint64_t max_steps = 20'000'000;          // expression and statement evaluations
  int max_call_depth = 32;                  // nested macro calls
};

struct RenderContext {
  ValueDict variables;  // the template's globals (messages, bos_token, ...)
  RenderLimits limits;
  std::optional<std::time_t> now;  // strftime_now's clock; nullopt: the system clock
};

// Errors: template_error (a type error, a bad call, attribute of undefined, ...),
// template_raised (raise_exception), limit_exceeded; messages name the line and column.
Result<std::string> render_program(const Program& program, const RenderContext& context);

}  // namespace synapse::chat
