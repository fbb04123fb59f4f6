// SPDX-License-Identifier: Apache-2.0
#include "server/web_routes.h"

#include <zlib.h>

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/cpu_info.h"
#include "base/thread_pool.h"
#include "kernels/kernel_selection.h"
#include "kernels/memory_bandwidth.h"
#include "server/http_reply.h"

namespace synapse::server {
namespace {

using Json = nlohmann::ordered_json;

// What the page may load and where it may connect: its own origin only. The browser enforces
// it, so a model's reply rendered into the page cannot make it fetch anything elsewhere.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

// The gzip form of `bytes` (RFC 1952, zlib's best level), or "" when it fails.
std::string gzip(std::string_view bytes) {
  z_stream z{};
  constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB window, gzip wrapper instead of zlib's
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 9, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return "";
  }
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : "";
}

// Each asset's gzip form, made once on first use (the files are small: milliseconds); "" where
// it would not be smaller.
const std::vector<std::string>& gzipped_assets() {
  static const std::vector<std::string> gzipped = [] {
    std::vector<std::string> out;
    for (const WebAsset& a : web_assets()) {
      std::string z = gzip(a.bytes);
      out.push_back(z.size() < a.bytes.size() ? std::move(z) : std::string());
    }
    return out;
  }();
  return gzipped;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls fn(item) for each comma-separated item of a header's value, trimmed.
template <typename Fn>
void for_each_item(std::string_view value, Fn&& fn) {
  while (!value.empty()) {
    const size_t comma = std::min(value.find(','), value.size());
    fn(trim(value.substr(0, comma)));
    value.remove_prefix(std::min(comma + 1, value.size()));
  }
}

// Whether Accept-Encoding lists gzip without q=0 (RFC 9110 12.5.3).
bool accepts_gzip(const http::Request& req) {
  bool yes = false;
  for_each_item(req.header("Accept-Encoding"), [&](std::string_view item) {
    const size_t semi = std::min(item.find(';'), item.size());
    if (!http::equals_ignore_case(trim(item.substr(0, semi)), "gzip")) return;
    std::string params(item.substr(semi));
    params.erase(std::remove(params.begin(), params.end(), ' '), params.end());
    const size_t q = params.find(";q=");
    if (q == std::string::npos) {
      yes = true;
      return;
    }
    const std::string value = params.substr(q + 3, params.find(';', q + 3) - (q + 3));
    yes = value.find_first_of("123456789") != std::string::npos;  // q=0 or 0.000 refuses
  });
  return yes;
}

// Whether If-None-Match names `etag` (weak comparison, as RFC 9110 13.1.2 asks) or is "*".
bool not_modified(const http::Request& req, std::string_view etag) {
  bool match = false;
  for_each_item(req.header("If-None-Match"), [&](std::string_view item) {
    if (item.rfind("W/", 0) == 0) item.remove_prefix(2);
    match = match || item == "*" || item == etag;
  });
  return match;
}

void send_asset(const WebAsset& asset, const http::Request& req, http::Response& res) {
  const size_t index = static_cast<size_t>(&asset - web_assets().data());
  const std::string& gzipped = gzipped_assets()[index];
  const bool use_gzip = !gzipped.empty() && accepts_gzip(req);
  // Each encoding is its own representation, so it has its own strong validator.
  const std::string etag =
      use_gzip ? std::string(asset.etag.substr(0, asset.etag.size() - 1)) + "-gzip\""
               : std::string(asset.etag);
  res.set_header("ETag", etag);
  // Revalidated on every load (a 304 costs one round trip): the names carry no version, and a
  // new binary must never be paired with an old cached script.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Vary", "Accept, Accept-Encoding");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (asset.content_type.rfind("text/html", 0) == 0) {
    res.set_header("Content-Security-Policy", std::string(kContentSecurityPolicy));
    res.set_header("Referrer-Policy", "no-referrer");
  }
  if (not_modified(req, etag)) {
    res.status = 304;
    return;
  }
  if (use_gzip) res.set_header("Content-Encoding", "gzip");
  res.set_content(std::string(use_gzip ? std::string_view(gzipped) : asset.bytes),
                  asset.content_type);
}

// The memory-bandwidth figure, measured once when first asked for (it reads a buffer far larger
// than the caches on every core for a fraction of a second, which a dashboard's refresh must not
// repeat).
std::optional<BandwidthSample> memory_bandwidth(bool measure) {
  static std::mutex mu;
  static std::optional<BandwidthSample> sample;
  std::lock_guard lock(mu);
  if (!sample && measure) {
    constexpr size_t kBufferBytes = size_t{256} << 20;
    constexpr int kPasses = 3;
    BandwidthBuffer buffer(kBufferBytes);
    ThreadPool pool(std::max(1, CpuInfo::detect().physical_cores));
    sample = measure_read_bandwidth(selected_kernels(), buffer, pool, kPasses);
  }
  return sample;
}

// GET /v1/system: the CPU, the kernel level in use with its start-up self-check (as `synapse
// doctor` reports them), and the memory bandwidth once measured (?measure_bandwidth=1).
void system_info(const http::Request& req, http::Response& res) {
  const CpuInfo cpu = CpuInfo::detect();
  const KernelSelection& s = kernel_selection();
  Json families = Json::array();
  int passed = 0;
  for (const KernelCheck& c : s.checks) {
    passed += c.ok ? 1 : 0;
    auto it = std::find_if(families.begin(), families.end(),
                           [&](const Json& f) { return f["family"] == c.family; });
    if (it == families.end()) {
      families.push_back({{"family", c.family}, {"checked", 0}, {"passed", 0}});
      it = families.end() - 1;
    }
    (*it)["checked"] = (*it)["checked"].get<int>() + 1;
    (*it)["passed"] = (*it)["passed"].get<int>() + (c.ok ? 1 : 0);
  }
  Json errors = Json::array();
  for (const Status& e : s.errors) errors.push_back(e.message());
  Json j;
  j["object"] = "system";
  j["cpu"] = {{"model", cpu.model},
              {"logical_cores", cpu.logical_cores},
              {"physical_cores", cpu.physical_cores},
              {"memory_total_bytes", cpu.memory_total_bytes},
              {"memory_available_bytes", cpu.memory_available_bytes}};
  j["kernels"] = {{"level", s.table.variant},
                  {"best", isa_level_name(s.best)},
                  {"override_note", s.override_note},
                  {"checked", s.checks.size()},
                  {"passed", passed},
                  {"families", std::move(families)},
                  {"errors", std::move(errors)}};
  const std::optional<BandwidthSample> bw = memory_bandwidth(req.param("measure_bandwidth") == "1");
  j["memory_bandwidth"] = bw ? Json{{"best_gb_per_s", bw->best_gb_per_s},
                                    {"median_gb_per_s", bw->median_gb_per_s},
                                    {"threads", bw->threads}}
                             : Json(nullptr);
  res.set_content(j.dump(), std::string(kJson));
}

bool is_browser(const http::Request& req) {
  bool html = false;
  for_each_item(req.header("Accept"),
                [&](std::string_view item) { html = html || item.rfind("text/html", 0) == 0; });
  return html;
}

}  // namespace

const WebAsset* find_web_asset(std::string_view name) {
  for (const WebAsset& a : web_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::optional<http::Handler> web_route(request::EndpointKind kind) {
  switch (kind) {
    case request::EndpointKind::kWebAsset:
      return [](const http::Request& req, http::Response& res) {
        const WebAsset* asset = find_web_asset(req.path_param("file"));
        if (asset == nullptr || asset->name == "index.html") {
          return send_error(res, Status(ErrorCode::kNotFound, "no such file of the web UI"));
        }
        send_asset(*asset, req, res);
      };
    case request::EndpointKind::kSystemInfo:
      return system_info;
    default:
      return std::nullopt;
  }
}

http::Handler web_root(http::Handler otherwise) {
  return [otherwise = std::move(otherwise)](http::Request& req, http::Response& res) {
    const WebAsset* page = find_web_asset("index.html");
    if (page == nullptr || !is_browser(req)) {
      otherwise(req, res);
      res.set_header("Vary", "Accept");
      return;
    }
    send_asset(*page, req, res);
  };
}

}  // namespace synapse::server
