// SPDX-License-Identifier: Apache-2.0
#include "model/arch/registry.h"

#include <array>

#include "format/gguf/gguf_keys.h"
#include "model/graph_blocks.h"
#include "model/ir.h"

namespace synapse {
namespace {

// Adding an architecture: one file in arch/ and one line here.
constexpr std::array kArchitectures = {
    &arch::llama_architecture,    &arch::qwen2_architecture, &arch::qwen3_architecture,
    &arch::qwen3moe_architecture, &arch::phi3_architecture,  &arch::gemma2_architecture,
    &arch::gemma3_architecture,   &arch::lfm2_architecture,  &arch::bert_architecture,
};

}  // namespace

std::string_view tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kTokenEmbedding:
      return "token_embedding";
    case TensorRole::kPositionEmbedding:
      return "position_embedding";
    case TensorRole::kTokenTypeEmbedding:
      return "token_type_embedding";
    case TensorRole::kAttention:
      return "attention";
    case TensorRole::kFeedForward:
      return "feed_forward";
    case TensorRole::kOutput:
      return "output";
    case TensorRole::kNorm:
      return "norm";
    case TensorRole::kBias:
      return "bias";
    case TensorRole::kHead:
      return "head";
    case TensorRole::kRouter:
      return "router";
  }
  return "unknown";
}

bool tensor_role_is_matrix(TensorRole role) {
  return role != TensorRole::kNorm && role != TensorRole::kBias && role != TensorRole::kRouter;
}

Result<ModelIr> Architecture::build_graph(const HParams& /*hp*/, const ModelFile& /*file*/,
                                          const GraphOptions& /*options*/) const {
  return Status(ErrorCode::kUnsupported,
                "architecture '" + std::string(name()) + "' has no forward pass in this build",
                ErrorWhere{.key = std::string(gguf_key::kArchitecture)});
}

const Architecture* find_architecture(std::string_view name) {
  for (auto get : kArchitectures) {
    const Architecture& arch = get();
    if (arch.name() == name) return &arch;
  }
  return nullptr;
}

std::vector<std::string_view> architecture_names() {
  std::vector<std::string_view> names;
  for (auto get : kArchitectures) names.push_back(get().name());
  return names;
}

Result<HParams> read_model_hparams(const GgufMetadata& metadata) {
  SYN_ASSIGN_OR_RETURN(const std::string_view name, metadata.architecture());
  const Architecture* arch = find_architecture(name);
  if (arch == nullptr) {
    return Status(ErrorCode::kUnknownArchitecture,
                  "architecture '" + std::string(name) + "' is not supported by this build",
                  ErrorWhere{.key = std::string(gguf_key::kArchitecture)});
  }
  HParams hp;
  SYN_RETURN_IF_ERROR(arch->read_hparams(metadata, hp));
  return hp;
}

}  // namespace synapse
