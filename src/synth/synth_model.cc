// SPDX-License-Identifier: Apache-2.0
#include "synth/synth_model.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "base/progress.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"
#include "model/arch/architecture.h"
#include "synth/deterministic_random.h"
#include "synth/synthetic_vocab.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

constexpr uint32_t kDefaultBpeVocab = 320;
constexpr uint32_t kDefaultWordPieceVocab = 160;
// Output head scale: with a unit-RMS hidden state, logits get a standard deviation of about
// kLogitSpread, so the top token usually stands clear of the rest (peaked, not uniform).
constexpr double kLogitSpread = 4.0;
// Norm scales are 1 + N(0, kNormJitter), as in the reference fixtures.
constexpr double kNormJitter = 0.1;
constexpr double kBiasScale = 0.1;
constexpr double kPositionEmbeddingScale = 0.5;

// llama.cpp's general.file_type (enum llama_ftype) for a model whose matrices are mostly
// `type`; a K-quant used throughout is llama.cpp's "_S" mix.
uint32_t file_type_for(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return 0;
    case TensorType::kF16:
      return 1;
    case TensorType::kQ4_0:
      return 2;
    case TensorType::kQ4_1:
      return 3;
    case TensorType::kQ8_0:
      return 7;
    case TensorType::kQ5_0:
      return 8;
    case TensorType::kQ5_1:
      return 9;
    case TensorType::kQ2_K:
      return 10;
    case TensorType::kQ3_K:
      return 11;
    case TensorType::kQ4_K:
      return 14;
    case TensorType::kQ5_K:
      return 16;
    case TensorType::kQ6_K:
      return 18;
    case TensorType::kBF16:
      return 32;
    case TensorType::kIQ4_NL:
      return 25;
    case TensorType::kIQ4_XS:
      return 30;
    default:
      return 0;
  }
}

struct WeightPlan {
  TensorSpec spec;
  TensorType type;
  double scale;   // standard deviation of the random part
  double offset;  // added to every element (1 for norm scales)
};

WeightPlan plan_weight(const TensorSpec& spec, const HParams& hp, const SynthOptions& o) {
  WeightPlan plan{spec, TensorType::kF32, 0.0, 0.0};
  const double fan_in = static_cast<double>(spec.shape[0]);
  switch (spec.role) {
    case TensorRole::kTokenEmbedding:
      plan.type = o.type_embedding;
      plan.scale = kLogitSpread / std::sqrt(static_cast<double>(hp.n_embd));
      break;
    case TensorRole::kOutput:
      plan.type = o.type_output;
      plan.scale = kLogitSpread / std::sqrt(static_cast<double>(hp.n_embd));
      break;
    case TensorRole::kAttention:
      plan.type = o.type_attention;
      plan.scale = 1.0 / std::sqrt(fan_in);
      break;
    case TensorRole::kFeedForward:
    case TensorRole::kHead:
      plan.type = o.type_feed_forward;
      plan.scale = 1.0 / std::sqrt(fan_in);
      break;
    case TensorRole::kRouter:  // F32; scores of about unit spread, so experts differ per token
      plan.scale = 1.0 / std::sqrt(fan_in);
      break;
    case TensorRole::kPositionEmbedding:
    case TensorRole::kTokenTypeEmbedding:
      plan.scale = kPositionEmbeddingScale;
      break;
    case TensorRole::kNorm:
      plan.scale = kNormJitter;
      plan.offset = 1.0;
      break;
    case TensorRole::kBias:
      plan.scale = kBiasScale;
      break;
  }
  return plan;
}

Status fill_weight(const WeightPlan& plan, uint64_t seed, std::span<uint8_t> out) {
  uint64_t count = 1;
  for (uint64_t d : plan.spec.shape) count *= d;
  DeterministicRandom random = DeterministicRandom::for_stream(seed, plan.spec.name);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(plan.offset + plan.scale * random.next_bell());
  if (plan.type == TensorType::kF32) {
    std::memcpy(out.data(), values.data(), count * sizeof(float));
    return ok_status();
  }
  // Every other type through the reference quantizers, one row at a time (they write llama.cpp's
  // bytes, with exact IEEE arithmetic only, so the output is the same on every machine). The
  // row buffer is word-aligned for the block types.
  const size_t row_length = plan.spec.shape[0];
  const size_t row_size = row_bytes(plan.type, row_length);
  std::vector<uint32_t> row((row_size + 3) / 4);
  const std::span<uint8_t> row_bytes_view{reinterpret_cast<uint8_t*>(row.data()), row_size};
  for (uint64_t r = 0; r < count / row_length; ++r) {
    quantize_row(plan.type, std::span<const float>(values).subspan(r * row_length, row_length),
                 row_bytes_view);
    std::memcpy(out.data() + r * row_size, row.data(), row_size);
  }
  return ok_status();
}

Status check_type(TensorType type, std::string_view option) {
  if (is_weight_type(type)) return ok_status();
  return Status(ErrorCode::kUnsupported,
                "synth writes F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL and "
                "IQ4_XS, not " +
                    std::string(tensor_type_name(type)),
                ErrorWhere{.field = std::string(option)});
}

// A matrix's rows must be whole blocks of its type (256 elements for the K-quants).
Status check_row_length(const WeightPlan& plan) {
  const size_t block = block_elements(plan.type);
  if (plan.spec.shape[0] % block == 0) return ok_status();
  return Status(ErrorCode::kInvalidArgument,
                "rows of " + std::to_string(plan.spec.shape[0]) +
                    " elements are not a multiple of " + std::string(tensor_type_name(plan.type)) +
                    "'s block size " + std::to_string(block) +
                    " (choose sizes that are, or another type)",
                ErrorWhere{.tensor = plan.spec.name});
}

Result<HParams> build_hparams(const Architecture& arch, const SynthOptions& o, uint32_t n_vocab) {
  HParams hp = arch.synthetic_defaults();
  hp.n_vocab = n_vocab;
  hp.n_ctx_train = o.n_ctx;
  hp.n_embd = o.n_embd;
  hp.n_ff = o.n_ff;
  hp.n_layer = o.n_layer;
  hp.n_head = o.n_head;
  hp.n_head_kv = arch.kind() == ModelKind::kEncoder ? o.n_head : o.n_head_kv;
  if (o.n_head == 0) return Status(ErrorCode::kInvalidArgument, "--n-head must be positive");
  hp.head_dim_k = o.head_dim != 0 ? o.head_dim : o.n_embd / o.n_head;
  hp.head_dim_v = hp.head_dim_k;
  if (hp.rope_layout != RopeLayout::kNone) hp.n_rot = hp.head_dim_k;
  if (o.rope_freq_base) hp.rope_freq_base = *o.rope_freq_base;
  if (o.norm_eps) hp.norm_eps = *o.norm_eps;
  arch.synthetic_layers(hp);
  if (hp.n_expert > 0) {  // mixture of experts: the architecture's defaults unless given
    if (o.n_expert != 0) hp.n_expert = o.n_expert;
    if (o.n_expert_used != 0) hp.n_expert_used = o.n_expert_used;
    hp.n_ff_expert = o.n_ff_expert != 0 ? o.n_ff_expert : o.n_ff;
  } else if (o.n_expert != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "--n-expert applies to mixture-of-experts architectures",
                  ErrorWhere{.field = "--arch"});
  }
  if (o.classifier_labels > 0) {
    if (arch.kind() != ModelKind::kEncoder) {
      return Status(ErrorCode::kInvalidArgument, "--classifier-labels applies to encoders (bert)",
                    ErrorWhere{.field = "--arch"});
    }
    hp.n_cls_out = o.classifier_labels;
    hp.pooling = PoolingType::kRank;
  }
  // Decoders write <arch>.pooling_type too (when it is not their default, last).
  if (o.pooling) hp.pooling = *o.pooling;
  if (o.head_dim == 0 && o.n_embd % o.n_head != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "--n-embd must be a multiple of --n-head (or give --head-dim)");
  }
  return hp;
}

}  // namespace

Status synthesize_model(const SynthOptions& o, const std::string& path) {
  const Architecture* arch = find_architecture(o.arch);
  if (arch == nullptr) {
    return Status(ErrorCode::kUnknownArchitecture, "unknown architecture '" + o.arch + "'",
                  ErrorWhere{.field = "--arch"});
  }
  SYN_RETURN_IF_ERROR(check_type(o.type_embedding, "--type-embd"));
  SYN_RETURN_IF_ERROR(check_type(o.type_attention, "--type-attn"));
  SYN_RETURN_IF_ERROR(check_type(o.type_feed_forward, "--type-ffn"));
  SYN_RETURN_IF_ERROR(check_type(o.type_output, "--type-output"));

  GgufWriter writer;
  // The vocabulary source must stay mapped until the file is written: its strings are views.
  std::unique_ptr<GgufFile> vocab_source;
  uint32_t n_vocab = 0;
  if (!o.vocab_from.empty()) {
    SYN_ASSIGN_OR_RETURN(GgufFile source, GgufFile::open(o.vocab_from));
    vocab_source = std::make_unique<GgufFile>(std::move(source));
    SYN_ASSIGN_OR_RETURN(const auto tokens,
                         vocab_source->metadata().get_string_array(gguf_key::kTokenizerTokens));
    n_vocab = static_cast<uint32_t>(tokens.size());
    if (o.n_vocab != 0 && o.n_vocab != n_vocab) {
      return Status(ErrorCode::kInvalidArgument,
                    "--n-vocab " + std::to_string(o.n_vocab) + " differs from the " +
                        std::to_string(n_vocab) + " tokens of --vocab-from",
                    ErrorWhere{.field = "--n-vocab"});
    }
  } else {
    const bool wordpiece = arch->kind() == ModelKind::kEncoder;
    n_vocab = o.n_vocab != 0 ? o.n_vocab : (wordpiece ? kDefaultWordPieceVocab : kDefaultBpeVocab);
  }

  SYN_ASSIGN_OR_RETURN(HParams hp, build_hparams(*arch, o, n_vocab));
  SYN_RETURN_IF_ERROR(arch->write_hparams(hp, writer));
  SYN_RETURN_IF_ERROR(
      writer.set_string(gguf_key::kName, o.name.empty() ? "synapse-synth-" + o.arch : o.name));
  SYN_RETURN_IF_ERROR(writer.set_scalar(gguf_key::kFileType, file_type_for(o.type_attention)));
  SYN_RETURN_IF_ERROR(writer.set_scalar("synapse.synth.seed", o.seed));
  SYN_RETURN_IF_ERROR(writer.set_scalar("synapse.synth.version", kSynthGeneratorVersion));

  if (vocab_source) {
    for (const GgufKeyValue& kv : vocab_source->metadata().entries()) {
      if (kv.key.starts_with(gguf_key::kTokenizerPrefix))
        SYN_RETURN_IF_ERROR(writer.set(kv.key, kv.value));
    }
  } else if (arch->kind() == ModelKind::kEncoder) {
    SYN_ASSIGN_OR_RETURN(const SyntheticVocab vocab, make_wordpiece_vocab(n_vocab));
    SYN_RETURN_IF_ERROR(write_wordpiece_vocab(vocab, writer));
  } else {
    SYN_ASSIGN_OR_RETURN(const SyntheticVocab vocab, make_byte_level_bpe_vocab(n_vocab));
    SYN_RETURN_IF_ERROR(write_byte_level_bpe_vocab(vocab, writer));
  }

  // Validate the assembled hyper-parameters the way a reader will.
  {
    SYN_ASSIGN_OR_RETURN(const std::vector<uint8_t> header_only,
                         GgufWriter(writer).write_to_buffer());
    SYN_ASSIGN_OR_RETURN(const GgufFile check, GgufFile::parse(header_only, "<synth>"));
    HParams reread;
    SYN_RETURN_IF_ERROR(arch->read_hparams(check.metadata(), reread));
  }

  const bool tied = o.tied_output.value_or(arch->synthetic_tied_output());
  std::vector<WeightPlan> plans;
  for (const TensorSpec& spec : arch->tensors(hp)) {
    const bool is_output = spec.role == TensorRole::kOutput;
    if (!spec.required && !(is_output && !tied)) continue;  // optional tensors are left out
    plans.push_back(plan_weight(spec, hp, o));
    SYN_RETURN_IF_ERROR(check_row_length(plans.back()));
  }
  for (const WeightPlan& plan : plans) {
    const uint64_t seed = o.seed;
    SYN_RETURN_IF_ERROR(writer.add_tensor(
        plan.spec.name, plan.type, plan.spec.shape,
        [plan, seed](std::span<uint8_t> out) { return fill_weight(plan, seed, out); }));
  }
  ProgressLine progress("synth " + o.arch, writer.file_size());
  SYN_RETURN_IF_ERROR(writer.write_file(
      path, [&progress](uint64_t done, uint64_t /*total*/) { progress.update(done); }));
  progress.finish();
  return ok_status();
}

}  // namespace synapse
