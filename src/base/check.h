// SPDX-License-Identifier: Apache-2.0
// SYN_CHECK for programmer errors only: conditions no user input can violate. Input errors are
// Status values, never checks.
#pragma once

#include <string_view>

namespace synapse::internal {
[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               std::string_view message);
}  // namespace synapse::internal

#define SYN_CHECK(condition, message)                                               \
  do {                                                                              \
    if (!(condition)) [[unlikely]] {                                                \
      ::synapse::internal::check_failed(__FILE__, __LINE__, #condition, (message)); \
    }                                                                               \
  } while (false)

#ifdef NDEBUG
#define SYN_DCHECK(condition, message) \
  do {                                 \
  } while (false && (condition))
#else
#define SYN_DCHECK(condition, message) SYN_CHECK(condition, message)
#endif
