// SPDX-License-Identifier: Apache-2.0
// Status and Result<T>: errors that cross a module boundary are values with a stable code, a
// message and where it happened (file, byte offset, metadata key, tensor name, request field).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/error_code.h"

namespace synapse {

// Where an error was found. Every field is optional; fill what is known.
struct ErrorWhere {
  std::string path;                     // file the error is about
  std::optional<uint64_t> byte_offset;  // offset in that file
  std::string key;                      // metadata key
  std::string tensor;                   // tensor name
  std::string field;                    // request field, CLI option, ...

  bool empty() const {
    return path.empty() && !byte_offset && key.empty() && tensor.empty() && field.empty();
  }
  std::string to_string() const;  // "file x.gguf, byte 24, key 'general.name'"
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message, ErrorWhere where = {});

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status ok_status() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  ErrorCode code() const { return state_ ? state_->code : ErrorCode::kOk; }
  const std::string& message() const;
  const ErrorWhere& where() const;
  bool is_transient() const { return error_code_info(code()).retry == Retry::kTransient; }

  // Adds location details to an error; fields already set are kept (the innermost wins).
  Status&& with_path(std::string path) &&;
  Status&& with_key(std::string key) &&;
  Status&& with_tensor(std::string tensor) &&;
  Status&& with_field(std::string field) &&;

  // "file_truncated: tensor info ends early (file m.gguf, byte 812)"
  std::string to_string() const;

 private:
  struct State {
    ErrorCode code;
    std::string message;
    ErrorWhere where;
  };
  std::unique_ptr<State> state_;
};

inline Status ok_status() { return Status(); }

// Result<T> holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : value_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    SYN_CHECK(!std::get<Status>(value_).ok(), "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }
  // Moves the error out; only valid when !ok().
  Status take_status() && { return std::move(std::get<Status>(value_)); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->checked(); }
  T&& operator*() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }

 private:
  T& checked() {
    SYN_CHECK(ok(), "value() of a failed Result: " + std::get<Status>(value_).to_string());
    return std::get<T>(value_);
  }
  std::variant<T, Status> value_;
};

}  // namespace synapse

#define SYN_CONCAT_INNER_(a, b) a##b
#define SYN_CONCAT_(a, b) SYN_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not OK.
#define SYN_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::synapse::Status syn_status_ = (expr);    \
    if (!syn_status_.ok()) return syn_status_; \
  } while (false)

// `SYN_ASSIGN_OR_RETURN(auto x, f());` binds the value of a Result or returns its Status.
#define SYN_ASSIGN_OR_RETURN(lhs, expr) \
  SYN_ASSIGN_OR_RETURN_IMPL_(SYN_CONCAT_(syn_result_, __LINE__), lhs, expr)
#define SYN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)    \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()
