// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_types.h"

#include <array>
#include <utility>

namespace synapse::jobs {
namespace {

// Names are stored in the database and shown by the service: never change them.
constexpr std::array<std::pair<JobClass, std::string_view>, 2> kClassNames = {{
    {JobClass::kBatch, "batch"},
    {JobClass::kBackground, "background"},
}};
constexpr std::array<std::pair<JobState, std::string_view>, 6> kStateNames = {{
    {JobState::kQueued, "queued"},
    {JobState::kRunning, "running"},
    {JobState::kCompleted, "completed"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kExpired, "expired"},
}};
constexpr std::array<std::pair<ItemState, std::string_view>, 3> kItemStateNames = {{
    {ItemState::kPending, "pending"},
    {ItemState::kSucceeded, "succeeded"},
    {ItemState::kFailed, "failed"},
}};

template <typename Enum, size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table,
                         Enum value) {
  for (const auto& [candidate, name] : table) {
    if (candidate == value) return name;
  }
  return "unknown";
}

template <typename Enum, size_t N>
std::optional<Enum> value_of(const std::array<std::pair<Enum, std::string_view>, N>& table,
                             std::string_view name) {
  for (const auto& [value, candidate] : table) {
    if (candidate == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view job_class_name(JobClass job_class) { return name_of(kClassNames, job_class); }
std::optional<JobClass> job_class_from_name(std::string_view name) {
  return value_of(kClassNames, name);
}
std::string_view job_state_name(JobState state) { return name_of(kStateNames, state); }
std::optional<JobState> job_state_from_name(std::string_view name) {
  return value_of(kStateNames, name);
}
std::string_view item_state_name(ItemState state) { return name_of(kItemStateNames, state); }
std::optional<ItemState> item_state_from_name(std::string_view name) {
  return value_of(kItemStateNames, name);
}

bool is_terminal(JobState state) {
  return state != JobState::kQueued && state != JobState::kRunning;
}

}  // namespace synapse::jobs
