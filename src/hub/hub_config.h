// SPDX-License-Identifier: Apache-2.0
// Where the hub is and where other tools keep models, from the environment variables those tools
// document: HF_ENDPOINT, HF_TOKEN / HF_TOKEN_PATH / $HF_HOME/token, HF_HUB_OFFLINE, HF_HUB_CACHE /
// HF_HOME (huggingface_hub), LLAMA_CACHE (llama.cpp), OLLAMA_MODELS (Ollama). Read once by the
// caller and passed down, so tests set fields instead of the process environment.
#pragma once

#include <string>

namespace synapse::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string token;                                // empty: anonymous
  bool offline = false;
  std::string hub_cache;      // huggingface_hub's cache (models--ORG--REPO/...)
  std::string llama_cache;    // llama.cpp's download cache
  std::string ollama_models;  // Ollama's models directory (manifests/, blobs/)

  static HubConfig from_environment();
};

}  // namespace synapse::hub
