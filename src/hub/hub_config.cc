// SPDX-License-Identifier: Apache-2.0
#include "hub/hub_config.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace synapse::hub {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

std::string trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  return text.substr(start);
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  return trim(text.str());
}

// huggingface_hub's reading of a boolean variable.
bool truthy(std::string value) {
  for (char& c : value) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

}  // namespace

HubConfig HubConfig::from_environment() {
  HubConfig config;
  const std::string home = env("HOME");
  const std::string xdg_cache = env("XDG_CACHE_HOME");
  const std::string cache_home = !xdg_cache.empty() ? xdg_cache : home + "/.cache";
  std::string endpoint = env("HF_ENDPOINT");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.empty()) config.endpoint = endpoint;
  const std::string hf_home =
      !env("HF_HOME").empty() ? env("HF_HOME") : cache_home + "/huggingface";
  config.token = trim(env("HF_TOKEN"));
  if (config.token.empty()) {
    const std::string path =
        !env("HF_TOKEN_PATH").empty() ? env("HF_TOKEN_PATH") : hf_home + "/token";
    config.token = read_token_file(path);
  }
  config.offline = truthy(env("HF_HUB_OFFLINE"));
  config.hub_cache = !env("HF_HUB_CACHE").empty() ? env("HF_HUB_CACHE") : hf_home + "/hub";
  config.llama_cache = !env("LLAMA_CACHE").empty() ? env("LLAMA_CACHE") : cache_home + "/llama.cpp";
  config.ollama_models =
      !env("OLLAMA_MODELS").empty() ? env("OLLAMA_MODELS") : home + "/.ollama/models";
  return config;
}

}  // namespace synapse::hub
