// SPDX-License-Identifier: Apache-2.0
// Small pieces the commands share: error output, JSON for errors, byte counts for humans,
// progress lines that follow the stages of a long operation, and the --store option.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/progress.h"
#include "base/status.h"

namespace synapse::cli {

// Prints "error: <status>" to stderr; returns kExitFailure.
int fail(const Status& status);
// {"code", "message", and the where fields that are set}.
nlohmann::ordered_json error_json(const Status& status);
// "1.5 GB", "12.3 MB", "512 B" (decimal units, as disks count).
std::string human_bytes(uint64_t bytes);
// Bytes per second as MB/s with one decimal.
double megabytes_per_second(uint64_t bytes, double seconds);
// "synapse <version>", as recorded in packages.
std::string created_by();

// `--store DIR`: the model store's directory (default $SYNAPSE_STORE, else the state directory's
// store/).
void add_store_option(CLI::App* cmd, std::string& directory);

// A ProgressLine per stage ("hashing", "converting", ...): a new stage ends the previous line.
class StageProgress {
 public:
  explicit StageProgress(std::string subject) : subject_(std::move(subject)) {}
  void update(std::string_view stage, uint64_t done, uint64_t total);
  void finish();

 private:
  std::string subject_;
  std::string stage_;
  std::unique_ptr<ProgressLine> line_;
};

}  // namespace synapse::cli
