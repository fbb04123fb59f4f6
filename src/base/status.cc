// SPDX-License-Identifier: Apache-2.0
#include "base/status.h"

namespace synapse {
namespace {
const std::string kEmptyString;
const ErrorWhere kEmptyWhere;
}  // namespace

std::string ErrorWhere::to_string() const {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (!path.empty()) add("file " + path);
  if (byte_offset) add("byte " + std::to_string(*byte_offset));
  if (!key.empty()) add("key '" + key + "'");
  if (!tensor.empty()) add("tensor '" + tensor + "'");
  if (!field.empty()) add("field '" + field + "'");
  return out;
}

Status::Status(ErrorCode code, std::string message, ErrorWhere where) {
  SYN_CHECK(code != ErrorCode::kOk, "an error Status needs a non-OK code");
  state_ = std::make_unique<State>(State{code, std::move(message), std::move(where)});
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  return *this;
}

const std::string& Status::message() const { return state_ ? state_->message : kEmptyString; }
const ErrorWhere& Status::where() const { return state_ ? state_->where : kEmptyWhere; }

Status&& Status::with_path(std::string path) && {
  if (state_ && state_->where.path.empty()) state_->where.path = std::move(path);
  return std::move(*this);
}
Status&& Status::with_key(std::string key) && {
  if (state_ && state_->where.key.empty()) state_->where.key = std::move(key);
  return std::move(*this);
}
Status&& Status::with_tensor(std::string tensor) && {
  if (state_ && state_->where.tensor.empty()) state_->where.tensor = std::move(tensor);
  return std::move(*this);
}
Status&& Status::with_field(std::string field) && {
  if (state_ && state_->where.field.empty()) state_->where.field = std::move(field);
  return std::move(*this);
}

std::string Status::to_string() const {
  if (!state_) return "ok";
  std::string out(error_code_name(state_->code));
  out += ": ";
  out += state_->message;
  if (!state_->where.empty()) out += " (" + state_->where.to_string() + ")";
  return out;
}

}  // namespace synapse
