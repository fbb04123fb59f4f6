// SPDX-License-Identifier: Apache-2.0
// One architecture, one file: each `arch/<name>.cc` reads its hyper-parameters from metadata,
// writes them back (for synthetic models), and lists the tensors it expects with their shapes.
// Registration is one line in registry.cc; nothing else switches on the architecture name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf/gguf_metadata.h"
#include "format/gguf/gguf_writer.h"
#include "model/hparams.h"

namespace synapse {

class ModelFile;
struct ModelIr;
struct GraphOptions;

// What a tensor is for; synthetic weights and default types are chosen by role.
enum class TensorRole {
  kTokenEmbedding,
  kPositionEmbedding,
  kTokenTypeEmbedding,
  kAttention,    // q, k, v and output projections
  kFeedForward,  // gate, up, down
  kOutput,       // the language-model head
  kNorm,         // norm weights (scales)
  kBias,         // biases, including norm biases
  kHead,         // classification heads (rerankers)
  kRouter,       // a mixture of experts' router: a matrix kept in F32/F16, as llama.cpp keeps it
};

std::string_view tensor_role_name(TensorRole role);
// Matrices can take any tensor type; vectors (norms, biases) and routers stay F32 (or F16), as
// llama.cpp keeps them.
bool tensor_role_is_matrix(TensorRole role);

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;  // ggml order: ne[0] (row length) first
  TensorRole role;
  bool required = true;
};

class Architecture {
 public:
  virtual ~Architecture() = default;
  virtual std::string_view name() const = 0;
  virtual ModelKind kind() const = 0;
  // Fills `hp` from metadata; fails with missing_key / type_mismatch / bad_value naming the key.
  virtual Status read_hparams(const GgufMetadata& metadata, HParams& hp) const = 0;
  // Writes the keys read_hparams reads (general.architecture included).
  virtual Status write_hparams(const HParams& hp, GgufWriter& writer) const = 0;
  // Every tensor the architecture knows, required or optional, with its expected shape.
  virtual std::vector<TensorSpec> tensors(const HParams& hp) const = 0;
  // Defaults for a synthetic model of this architecture (sizes come from the caller).
  virtual HParams synthetic_defaults() const = 0;
  // Whether a synthetic model of this architecture ties its output head to token_embd by
  // default (as the architecture's usual checkpoints do).
  virtual bool synthetic_tied_output() const { return false; }
  // Per-layer choices of a synthetic model, once its sizes are set (LFM2: which layers attend).
  virtual void synthetic_layers(HParams& /*hp*/) const {}
  // The forward graph as Model IR, built from the shared blocks (graph_blocks.h) over the
  // file's tensors. Architectures without a forward pass yet fail with `unsupported`.
  virtual Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                                      const GraphOptions& options) const;
};

// nullptr when the build does not support `name`.
const Architecture* find_architecture(std::string_view name);
std::vector<std::string_view> architecture_names();

// Reads general.architecture and the hyper-parameters (n_vocab included) of a supported model.
Result<HParams> read_model_hparams(const GgufMetadata& metadata);

}  // namespace synapse
