// SPDX-License-Identifier: Apache-2.0
// Jinja's filters and tests, Python's str/dict methods and the global functions templates call
// (range, namespace, dict, raise_exception, strftime_now), with the signatures and results of
// Jinja 3.1 as Hugging Face configures it (its `tojson`, an immutable sandbox: no list.append).
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/value.h"

namespace synapse::chat {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// What builtins may know about the render in progress.
struct BuiltinEnv {
  uint64_t max_value_bytes = 0;    // no string or container may weigh more
  std::optional<std::time_t> now;  // strftime_now's clock; nullopt: the system clock
};

// Filters and tests are looked up by name when a template is compiled (an unknown one is a
// syntax error there) and called by index.
using FilterFn = Result<Value> (*)(const BuiltinEnv&, const Value& input, const CallArgs& args);
using TestFn = Result<bool> (*)(const BuiltinEnv&, const Value& input, const CallArgs& args);
int find_filter(std::string_view name);  // -1 when unknown
int find_test(std::string_view name);
FilterFn filter_at(int index);
TestFn test_at(int index);

// Python methods reachable as attributes: `s.startswith('x')`, `d.items()`.
bool has_method(const Value& receiver, std::string_view name);
Result<Value> call_method(const BuiltinEnv& env, const Value& receiver, std::string_view name,
                          const CallArgs& args);

// Global functions (range, namespace, dict, raise_exception, strftime_now). A failing
// raise_exception() returns template_raised with the template's message.
bool is_global_function(std::string_view name);
Result<Value> call_global(const BuiltinEnv& env, std::string_view name, const CallArgs& args);

// Binds call arguments to named parameters as Python does (positional first, then keywords);
// status() says what was wrong (too many, unknown or repeated keywords).
class ArgReader {
 public:
  ArgReader(std::string_view function, const CallArgs& args,
            std::initializer_list<std::string_view> params, bool extra_positional = false);
  const Status& status() const { return status_; }
  // The argument for parameter `index`, or nullptr when it was not given.
  const Value* get(size_t index) const {
    return index < bound_.size() && bound_[index] != nullptr ? bound_[index] : nullptr;
  }
  bool has(size_t index) const { return get(index) != nullptr; }
  // Positional arguments beyond the named parameters (only with extra_positional).
  const std::vector<const Value*>& extra() const { return extra_; }

 private:
  std::vector<const Value*> bound_;
  std::vector<const Value*> extra_;
  Status status_;
};

// Lists and dicts nest at most this deep (JSON from requests is bounded the same way).
inline constexpr uint32_t kMaxValueDepth = 128;

// A template_error Status: "<what>" with the function it came from.
Status builtin_error(std::string_view function, const std::string& message);
// Fails with limit_exceeded when a computed value is heavier or deeper than the render allows.
Status check_weight(const BuiltinEnv& env, const Value& value);
// Python's `item in container` (substring, element, dict key); undefined contains nothing.
Result<bool> value_contains(const Value& container, const Value& item);
// Iterating a value as Jinja does: lists (items), strings (code points), dicts (keys),
// undefined (nothing); other kinds fail.
Result<std::vector<Value>> iterate(const Value& value);

}  // namespace synapse::chat
