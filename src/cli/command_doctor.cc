// SPDX-License-Identifier: Apache-2.0
// `synapse doctor`: can this machine run Synapse? CPU features, the kernel level in use and its
// self-check against the reference kernels, memory, a writable state directory, and a SQLite
// write / reopen / read cycle (SQLite holds durable state).
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/cpu_info.h"
#include "base/paths.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "kernels/kernel_selection.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Check {
  std::string name;
  bool ok;
  std::string detail;
};

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB",
                static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

Check check_cpu(const CpuInfo& cpu) {
  std::string features;
  for (const std::string& f : cpu.features.names()) features += (features.empty() ? "" : " ") + f;
  auto kib = [](size_t bytes) { return std::to_string(bytes / 1024) + " KiB"; };
  return {"cpu", true,
          cpu.model + " | " + std::to_string(cpu.physical_cores) + " cores, " +
              std::to_string(cpu.logical_cores) + " threads | L1d " + kib(cpu.l1d_cache_bytes) +
              ", L2 " + kib(cpu.l2_cache_bytes) + ", L3 " + kib(cpu.l3_cache_bytes) + " | " +
              features};
}

struct FamilyCount {
  std::string family;
  int checked = 0;
  int passed = 0;
};

// Self-check results grouped by kernel family, in first-seen order.
std::vector<FamilyCount> family_counts(const KernelSelection& s) {
  std::vector<FamilyCount> out;
  for (const KernelCheck& c : s.checks) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const FamilyCount& f) { return f.family == c.family; });
    if (it == out.end()) it = out.insert(out.end(), FamilyCount{c.family});
    ++it->checked;
    it->passed += c.ok ? 1 : 0;
  }
  return out;
}

// The kernel level in use and the start-up self-check of its kernels against the references.
Check check_kernels(const KernelSelection& s) {
  std::string detail = std::string(s.table.variant) +
                       " selected (best this CPU runs: " + std::string(isa_level_name(s.best)) +
                       ")";
  if (!s.override_note.empty()) detail += "; " + s.override_note;
  if (s.checks.empty()) {
    detail += "; scalar reference kernels, nothing to self-check";
  } else {
    detail += "; self-check vs the references, each level up to it:";
    for (const FamilyCount& f : family_counts(s)) {
      detail += " " + f.family + " " + std::to_string(f.passed) + "/" + std::to_string(f.checked);
    }
  }
  for (const Status& e : s.errors) detail += "; " + e.to_string();
  return {"kernels", s.errors.empty(), detail};
}

Check check_memory(const CpuInfo& cpu) {
  const bool ok = cpu.memory_total_bytes > 0;
  return {
      "memory", ok,
      gib(cpu.memory_total_bytes) + " total, " + gib(cpu.memory_available_bytes) + " available"};
}

Check check_state_directory(std::string& directory) {
  Result<std::string> dir = state_directory();
  if (!dir.ok()) return {"state directory", false, dir.status().to_string()};
  directory = *dir;
  if (Status made = create_directories(directory); !made.ok()) {
    return {"state directory", false, made.to_string()};
  }
  const std::string probe = directory + "/.doctor-probe-" + std::to_string(::getpid());
  {
    std::ofstream out(probe, std::ios::binary);
    out << "synapse";
    if (!out.flush()) return {"state directory", false, directory + " is not writable"};
  }
  std::ifstream in(probe, std::ios::binary);
  std::string back;
  in >> back;
  std::filesystem::remove(probe);
  if (back != "synapse") return {"state directory", false, "read back differs in " + directory};
  return {"state directory", true, directory + " is writable"};
}

Check check_sqlite(const std::string& directory) {
  const std::string path = directory + "/.doctor-" + std::to_string(::getpid()) + ".sqlite";
  auto fail = [&path](sqlite3* db, const std::string& what) {
    std::string detail = what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    return Check{"sqlite", false, detail};
  };
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return fail(db, "open");
  const char* write_sql =
      "PRAGMA journal_mode=WAL; CREATE TABLE probe(value TEXT); "
      "INSERT INTO probe VALUES('synapse');";
  if (sqlite3_exec(db, write_sql, nullptr, nullptr, nullptr) != SQLITE_OK) return fail(db, "write");
  sqlite3_close(db);
  db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return fail(db, "reopen");
  }
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT value FROM probe", -1, &statement, nullptr) != SQLITE_OK) {
    return fail(db, "read");
  }
  std::string value;
  if (sqlite3_step(statement) == SQLITE_ROW) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  if (value != "synapse") return fail(db, "read back '" + value + "'");
  sqlite3_close(db);
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return {"sqlite", true,
          std::string("SQLite ") + sqlite3_libversion() + ": write, reopen, read ok"};
}

}  // namespace

void add_doctor_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("doctor", "Check that this machine can run Synapse");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([json, &exit_code] {
    const CpuInfo cpu = CpuInfo::detect();
    const KernelSelection& kernels = kernel_selection();
    std::vector<Check> checks;
    checks.push_back(check_cpu(cpu));
    checks.push_back(check_kernels(kernels));
    checks.push_back(check_memory(cpu));
    std::string directory;
    checks.push_back(check_state_directory(directory));
    if (checks.back().ok) {
      checks.push_back(check_sqlite(directory));
    } else {
      checks.push_back({"sqlite", false, "skipped: no writable state directory"});
    }
    bool all_ok = true;
    for (const Check& c : checks) all_ok = all_ok && c.ok;
    const BuildInfo& b = build_info();
    if (*json) {
      Json out;
      out["ok"] = all_ok;
      out["version"] = std::string(b.version);
      out["git_commit"] = std::string(b.git_commit);
      Json list = Json::array();
      for (const Check& c : checks)
        list.push_back({{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
      out["checks"] = list;
      Json families = Json::object();
      for (const FamilyCount& f : family_counts(kernels)) {
        families[f.family] = {{"checked", f.checked}, {"passed", f.passed}};
      }
      Json errors = Json::array();
      for (const Status& e : kernels.errors) errors.push_back(e.to_string());
      out["kernels"] = {{"selected", kernels.table.variant},
                        {"best_level", std::string(isa_level_name(kernels.best))},
                        {"self_check", families},
                        {"disabled", errors}};
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::printf("synapse %s (commit %s)\n", std::string(b.version).c_str(),
                  std::string(b.git_commit).c_str());
      for (const Check& c : checks) {
        std::printf("  %-4s %-16s %s\n", c.ok ? "ok" : "FAIL", c.name.c_str(), c.detail.c_str());
      }
      std::printf("%s\n", all_ok ? "all checks passed" : "some checks failed");
    }
    exit_code = all_ok ? kExitOk : kExitFailure;
  });
}

}  // namespace synapse::cli
