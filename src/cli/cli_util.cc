// SPDX-License-Identifier: Apache-2.0
#include "cli/cli_util.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/build_info.h"
#include "cli/commands.h"

namespace synapse::cli {

int fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.to_string().c_str());
  return kExitFailure;
}

nlohmann::ordered_json error_json(const Status& status) {
  nlohmann::ordered_json e;
  e["code"] = std::string(error_code_name(status.code()));
  e["message"] = status.message();
  const ErrorWhere& w = status.where();
  if (w.byte_offset) e["byte_offset"] = *w.byte_offset;
  if (!w.key.empty()) e["key"] = w.key;
  if (!w.tensor.empty()) e["tensor"] = w.tensor;
  if (!w.field.empty()) e["field"] = w.field;
  return e;
}

std::string human_bytes(uint64_t bytes) {
  const auto value = static_cast<double>(bytes);
  if (bytes >= 1'000'000'000) return fmt::format("{:.1f} GB", value / 1e9);
  if (bytes >= 1'000'000) return fmt::format("{:.1f} MB", value / 1e6);
  if (bytes >= 1'000) return fmt::format("{:.1f} kB", value / 1e3);
  return fmt::format("{} B", bytes);
}

double megabytes_per_second(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0;
}

std::string created_by() { return "synapse " + std::string(build_info().version); }

void add_store_option(CLI::App* cmd, std::string& directory) {
  cmd->add_option("--store", directory,
                  "Model store directory (default: $SYNAPSE_STORE, else <state directory>/store)");
}

void StageProgress::update(std::string_view stage, uint64_t done, uint64_t total) {
  if (stage != stage_ || line_ == nullptr) {
    if (line_ != nullptr) line_->finish();
    stage_ = std::string(stage);
    line_ = std::make_unique<ProgressLine>(stage_ + " " + subject_, total);
  }
  line_->update(done);
}

void StageProgress::finish() {
  if (line_ != nullptr) line_->finish();
  line_.reset();
}

}  // namespace synapse::cli
