// SPDX-License-Identifier: Apache-2.0
// The web UI (web/, docs/web.md): the page at `/` for browsers, its files at `/ui/{file}`, both
// open (the page asks for the API key itself), and `/v1/system`, the machine facts its dashboard
// shows. The files are embedded at build time (web/embed.cmake writes `web_assets()`), so the
// binary serves them with nothing beside it; gzip-compressed once on first use.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "http/router.h"
#include "request/endpoints.h"

namespace synapse::server {

// One embedded file of web/.
struct WebAsset {
  std::string_view name;          // "index.html", "app.js": the name under /ui/
  std::string_view content_type;  // with charset for text
  std::string_view etag;          // strong, quoted: the first 128 bits of its SHA-256
  std::string_view bytes;
};

// Every embedded file, sorted by name (generated from web/ at build time).
std::span<const WebAsset> web_assets();
const WebAsset* find_web_asset(std::string_view name);

// The handler of a web endpoint (the assets, the machine facts), or nullopt for another kind.
std::optional<http::Handler> web_route(request::EndpointKind kind);

// `GET /`: the page to a browser (a request that accepts text/html), `otherwise` (Ollama's
// "Ollama is running") to everyone else, so that Ollama's clients still probe it unchanged.
http::Handler web_root(http::Handler otherwise);

}  // namespace synapse::server
