# SPDX-License-Identifier: Apache-2.0
# Third-party libraries, all from Debian 12 packages (scripts/install-deps.sh installs them).
# docs/ARCHITECTURE.md says why each was chosen.
find_package(Threads REQUIRED)
find_package(CLI11 2.1 REQUIRED CONFIG)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
find_package(OpenSSL 3.0 REQUIRED COMPONENTS Crypto)
find_package(SQLite3 REQUIRED)
# libcurl (OpenSSL flavour): the hub client of `synapse pull` (HTTPS, redirects, ranges).
find_package(CURL 7.85 REQUIRED)  # CURLOPT_PROTOCOLS_STR

# xxHash ships only a pkg-config file on Debian.
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash>=0.8)
add_library(synapse_xxhash INTERFACE)
target_link_libraries(synapse_xxhash INTERFACE PkgConfig::XXHASH)

# PCRE2 (pre-tokenizer regexes, UTF + UCP + JIT) and utf8proc (Unicode categories, NFC/NFD,
# case mapping) also ship only pkg-config files.
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8>=10.34)
add_library(synapse_pcre2 INTERFACE)
target_link_libraries(synapse_pcre2 INTERFACE PkgConfig::PCRE2)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc>=2.5)
add_library(synapse_utf8proc INTERFACE)
target_link_libraries(synapse_utf8proc INTERFACE PkgConfig::UTF8PROC)
# libpq (PostgreSQL's C client): the job store that several `synapse serve` nodes share.
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq>=13)

# cpp-httplib (the HTTP server): Debian builds it as a shared library; its pkg-config file carries
# the feature defines the library was compiled with, which the header must see too.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
add_library(synapse_httplib INTERFACE)
target_link_libraries(synapse_httplib INTERFACE PkgConfig::HTTPLIB)

if(SYNAPSE_BUILD_TESTS)
  find_package(GTest 1.12 REQUIRED)
endif()
if(SYNAPSE_BUILD_BENCH)
  find_package(benchmark 1.7 REQUIRED)
endif()
