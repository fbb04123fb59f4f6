#!/usr/bin/env bash
# Installs the Debian 12 packages Synapse builds and tests with, skipping those already present.
# Runs apt-get only when something is missing (as root, or through sudo). Then installs the
# official OpenAI SDK for Node, zod, ajv, the JSON Schema Test Suite and puppeteer-core into
# build/npm, for the serve e2e, constraint and web UI tests (clients and data no one here
# wrote); each is skipped when present; all with SYNAPSE_SKIP_NPM=1.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev llvm          # fuzz preset (libFuzzer), symbolized sanitizer reports
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libxxhash-dev libssl-dev libsqlite3-dev
  libpcre2-dev libutf8proc-dev           # tokenizer: pre-tokenizer regexes, Unicode data
  libcpp-httplib-dev                     # server: HTTP (brings OpenSSL, zlib, brotli headers)
  clang-format clang-tidy
  curl                                   # serve e2e tests: raw HTTP
  chromium                               # web UI e2e test: the headless browser
  libcurl4-openssl-dev                   # hub: HTTP client for `synapse pull`
  libpq-dev postgresql                   # jobs: the shared PostgreSQL store; its tests' server
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# serve e2e tests: the OpenAI SDK for Node. Any node/npm on the PATH will do (a NodeSource
# build brings its own npm, which Debian's npm package would conflict with).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

npm_dir="$(cd "$(dirname "$0")/.." && pwd)/build/npm"
# The official OpenAI SDK (serve e2e tests), zod for its structured-output helpers, ajv to
# validate constrained replies, and the JSON Schema Test Suite (constraint tests).
# puppeteer-core drives the system chromium in the web UI test (it downloads no browser).
npm_packages=(openai ollama zod ajv ajv-formats json-schema-test-suite puppeteer-core)
if [ "${SYNAPSE_SKIP_NPM:-0}" != 1 ]; then
  need=()
  for package in "${npm_packages[@]}"; do
    [ -f "$npm_dir/node_modules/$package/package.json" ] || need+=("$package")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "installing the npm packages ${need[*]} into $npm_dir" >&2
    mkdir -p "$npm_dir"
    npm install --prefix "$npm_dir" --no-audit --no-fund --silent "${need[@]}" >&2
  fi
fi
