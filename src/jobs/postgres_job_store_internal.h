// SPDX-License-Identifier: Apache-2.0
// Shared by the parts of PostgresJobStore (postgres_job_store*.cc): text and array parameters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace synapse::jobs {

// `text` as a PostgreSQL text value: a UTF8 database refuses invalid UTF-8 and libpq's text
// parameters end at a NUL byte, so each invalid byte and each NUL becomes U+FFFD. Valid text (all
// that the parsers produce) passes unchanged.
std::string pg_text(std::string_view text);

// Array literals for `= ANY($n::bigint[])` and `unnest($n::text[])`: one round trip for a page's
// items instead of one per item. Text elements are quoted and escaped; nullopt is NULL.
std::string pg_bigint_array(const std::vector<int64_t>& values);
std::string pg_text_array(const std::vector<std::optional<std::string>>& values);

}  // namespace synapse::jobs
