// SPDX-License-Identifier: Apache-2.0
// `synapse ps`: the models a running `synapse serve` has loaded (Ollama's `ps`): name, kind,
// size, its details (family, parameter size, quantization: from /api/ps, read from the model
// file's metadata), busy or idle, and when its keep-alive unloads it. Reads /api/ps (Ollama's
// shape) when the server has it, else /v1/models; a field the server does not report shows as "-".
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/server_client.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;
constexpr std::chrono::milliseconds kTimeout{5000};
// Ollama writes a model kept forever as expiring in a far future year.
constexpr int64_t kForeverAfterS = int64_t{100} * 365 * 24 * 3600;

struct Options {
  std::string host;
  bool json = false;
};

struct Row {
  std::string name;
  std::string kind;
  std::optional<uint64_t> bytes;
  std::optional<int64_t> requests;
  std::optional<double> idle_s;
  bool expiry_known = false;
  std::optional<int64_t> expires_at;  // known and none: never
  // Ollama's details, as /api/ps gives them; empty when the server does not.
  std::string family;
  std::string parameter_size;
  std::string quantization_level;
  // With `synapse serve --isolate`: its worker process.
  std::optional<int64_t> worker_pid;
  std::string worker_state;
  std::optional<int64_t> worker_crashes;
  std::optional<int64_t> worker_restarts;
  std::optional<int64_t> quarantined;
};

void read_worker(const Json& m, Row& row) {
  const Json w = m.value("worker", Json());
  if (!w.is_object()) return;
  if (w.value("pid", Json()).is_number_integer()) row.worker_pid = w["pid"].get<int64_t>();
  if (w.value("state", Json()).is_string()) row.worker_state = w["state"].get<std::string>();
  if (w.value("crashes", Json()).is_number_integer()) {
    row.worker_crashes = w["crashes"].get<int64_t>();
  }
  if (w.value("restarts", Json()).is_number_integer()) {
    row.worker_restarts = w["restarts"].get<int64_t>();
  }
  if (w.value("quarantined", Json()).is_number_integer()) {
    row.quarantined = w["quarantined"].get<int64_t>();
  }
}

// "pid 4242", "pid 4242, 2 crashes, 1 quarantined", "in process" or "-" (not reported).
std::string worker_of(const Row& r) {
  if (r.worker_state.empty()) return "-";
  std::string out =
      r.worker_pid && *r.worker_pid > 0 ? "pid " + std::to_string(*r.worker_pid) : "no pid";
  if (r.worker_crashes && *r.worker_crashes > 0) {
    out += ", " + std::to_string(*r.worker_crashes) + " crashes";
  }
  if (r.quarantined && *r.quarantined > 0) {
    out += ", " + std::to_string(*r.quarantined) + " quarantined";
  }
  return out;
}

void read_details(const Json& m, Row& row) {
  const Json details = m.value("details", Json::object());
  if (!details.is_object()) return;
  const auto text = [&](const char* key) {
    const Json v = details.value(key, Json());
    return v.is_string() ? v.get<std::string>() : std::string();
  };
  row.family = text("family");
  row.parameter_size = text("parameter_size");
  row.quantization_level = text("quantization_level");
}

// "qwen2 494.03M Q4_K_M", or "-" when nothing is known.
std::string details_of(const Row& r) {
  std::string out;
  for (const std::string* part : {&r.family, &r.parameter_size, &r.quantization_level}) {
    if (part->empty()) continue;
    if (!out.empty()) out += ' ';
    out += *part;
  }
  return out.empty() ? "-" : out;
}

// Unix seconds of an RFC 3339 time ("2024-06-04T14:38:31.8-07:00"), or nullopt.
std::optional<int64_t> parse_rfc3339(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  size_t p = static_cast<size_t>(consumed);
  if (p < text.size() && text[p] == '.') {
    ++p;
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
  }
  int64_t offset_s = 0;
  if (p < text.size() && (text[p] == '+' || text[p] == '-')) {
    int hh = 0;
    int mm = 0;
    if (std::sscanf(text.c_str() + p + 1, "%d:%d", &hh, &mm) != 2) return std::nullopt;
    offset_s = (text[p] == '+' ? 1 : -1) * (int64_t{hh} * 3600 + int64_t{mm} * 60);
  }
  return static_cast<int64_t>(timegm(&tm)) - offset_s;
}

void read_expiry(const Json& m, Row& row) {
  if (!m.contains("expires_at")) return;
  const Json& e = m["expires_at"];
  row.expiry_known = true;
  if (e.is_number_integer()) row.expires_at = e.get<int64_t>();
  if (e.is_string()) row.expires_at = parse_rfc3339(e.get<std::string>());
  if (row.expires_at && *row.expires_at - std::time(nullptr) > kForeverAfterS) {
    row.expires_at.reset();
  }
}

std::optional<Json> get_json(const ServerClient& client, const char* path, Status& error) {
  Result<ServerReply> reply = client.get(path, kTimeout);
  if (!reply.ok()) {
    error = Status(ErrorCode::kUnavailable,
                   "no Synapse server at " + client.url() +
                       " (start one with synapse serve, or set SYNAPSE_HOST or --host)");
    return std::nullopt;
  }
  if (reply->status == 404 || reply->status == 405) return std::nullopt;
  if (reply->status != 200) {
    error = Status(reply->status == 401 ? ErrorCode::kInvalidApiKey : ErrorCode::kUnavailable,
                   ServerClient::error_message(*reply) +
                       (reply->status == 401 ? " (set SYNAPSE_API_KEY)" : ""));
    return std::nullopt;
  }
  Json body = Json::parse(reply->body, nullptr, false);
  if (body.is_discarded()) {
    error = Status(ErrorCode::kInvalidJson, std::string(path) + " did not answer JSON");
    return std::nullopt;
  }
  return body;
}

Result<std::vector<Row>> loaded_models(const ServerClient& client) {
  Status error;
  const std::optional<Json> models = get_json(client, "/v1/models", error);
  SYN_RETURN_IF_ERROR(error);
  std::vector<Row> rows;
  const Json data = models ? models->value("data", Json::array()) : Json::array();
  for (const Json& m : data) {
    if (!m.is_object() || !m.value("id", Json()).is_string()) continue;
    // A server from before multi-model serving has one model, always loaded.
    if (m.value("loaded", true) != true) continue;
    Row row;
    row.name = m["id"].get<std::string>();
    row.kind = m.value("kind", "");
    if (m.value("bytes", Json()).is_number_unsigned()) row.bytes = m["bytes"].get<uint64_t>();
    if (m.value("requests", Json()).is_number_integer())
      row.requests = m["requests"].get<int64_t>();
    if (m.value("idle_s", Json()).is_number()) row.idle_s = m["idle_s"].get<double>();
    read_expiry(m, row);
    read_worker(m, row);
    rows.push_back(std::move(row));
  }
  // Ollama's /api/ps, where the server has it, knows size and expiry.
  const std::optional<Json> ps = get_json(client, "/api/ps", error);
  if (!error.ok() || !ps || !ps->value("models", Json()).is_array()) return rows;
  std::vector<Row> merged;
  for (const Json& m : (*ps)["models"]) {
    if (!m.is_object() || !m.value("name", Json()).is_string()) continue;
    Row row;
    row.name = m["name"].get<std::string>();
    for (const Row& r : rows) {
      if (r.name == row.name || r.name + ":latest" == row.name) row = r;
    }
    row.name = m["name"].get<std::string>();
    if (m.value("size", Json()).is_number_unsigned()) row.bytes = m["size"].get<uint64_t>();
    read_expiry(m, row);
    read_details(m, row);
    merged.push_back(std::move(row));
  }
  return merged;
}

// "42 seconds", "3 minutes", "2 hours".
std::string span(int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return std::to_string(s) + (s == 1 ? " second" : " seconds");
  if (s < 2 * 3600) return std::to_string(s / 60) + " minutes";
  return std::to_string(s / 3600) + " hours";
}

std::string state_of(const Row& r) {
  // A worker that is not running says why before anything about requests.
  if (!r.worker_state.empty() && r.worker_state != "running") return r.worker_state;
  if (r.requests && *r.requests > 0) return "busy (" + std::to_string(*r.requests) + ")";
  if (r.idle_s) return "idle " + span(static_cast<int64_t>(*r.idle_s));
  return "loaded";
}

std::string until_of(const Row& r) {
  if (!r.expiry_known) return "-";
  if (!r.expires_at) return "Forever";
  return span(*r.expires_at - std::time(nullptr)) + " from now";
}

int run(const Options& o) {
  const ServerClient client(o.host.empty() ? default_server_url() : o.host, default_api_key());
  Result<std::vector<Row>> rows = loaded_models(client);
  if (!rows.ok()) {
    if (o.json) {
      std::printf("%s\n", Json{{"error", error_json(rows.status())}}.dump(2).c_str());
      return kExitFailure;
    }
    return fail(rows.status());
  }
  if (o.json) {
    Json out = {{"server", client.url()}, {"models", Json::array()}};
    for (const Row& r : *rows) {
      Json m = {{"name", r.name}, {"kind", r.kind}, {"state", state_of(r)}};
      m["size_bytes"] = r.bytes ? Json(*r.bytes) : Json();
      m["requests"] = r.requests ? Json(*r.requests) : Json();
      m["idle_s"] = r.idle_s ? Json(*r.idle_s) : Json();
      m["expires_at"] = r.expires_at ? Json(*r.expires_at) : Json();
      const auto or_null = [](const std::string& s) { return s.empty() ? Json() : Json(s); };
      m["family"] = or_null(r.family);
      m["parameter_size"] = or_null(r.parameter_size);
      m["quantization_level"] = or_null(r.quantization_level);
      if (!r.worker_state.empty()) {
        m["worker"] = {{"pid", r.worker_pid ? Json(*r.worker_pid) : Json()},
                       {"state", r.worker_state},
                       {"crashes", r.worker_crashes ? Json(*r.worker_crashes) : Json()},
                       {"restarts", r.worker_restarts ? Json(*r.worker_restarts) : Json()},
                       {"quarantined", r.quarantined ? Json(*r.quarantined) : Json()}};
      }
      out["models"].push_back(std::move(m));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  const bool workers =
      std::any_of(rows->begin(), rows->end(), [](const Row& r) { return !r.worker_state.empty(); });
  // The WORKER column only for a server with worker processes (--isolate); the last column
  // is never padded, so lines carry no trailing blanks.
  const auto last_columns = [workers](const std::string& until, const std::string& worker) {
    if (!workers) return until;
    std::string out = until;
    out.resize(std::max<size_t>(out.size(), 22), ' ');
    return out + " " + worker;
  };
  std::printf("%-32s %-11s %-10s %-22s %-18s %s\n", "NAME", "KIND", "SIZE", "DETAILS", "STATE",
              last_columns("UNTIL", "WORKER").c_str());
  for (const Row& r : *rows) {
    std::printf(
        "%-32s %-11s %-10s %-22s %-18s %s\n", r.name.c_str(), r.kind.empty() ? "-" : r.kind.c_str(),
        r.bytes ? human_bytes(*r.bytes).c_str() : "-", details_of(r).c_str(), state_of(r).c_str(),
        last_columns(until_of(r), workers ? worker_of(r) : "").c_str());
  }
  return kExitOk;
}

}  // namespace

void add_ps_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("ps", "List the models a running server has loaded");
  cmd->add_option("--host", options->host,
                  "Server (default $SYNAPSE_HOST, else http://127.0.0.1:8080)");
  cmd->add_flag("--json", options->json, "Print JSON");
  cmd->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace synapse::cli
