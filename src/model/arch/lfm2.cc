// SPDX-License-Identifier: Apache-2.0
// LFM2 (Liquid AI): pre-norm blocks whose mixer is either attention (per-head q/k RMSNorm, NeoX
// RoPE, base 1e6) or a short causal convolution, chosen per layer by
// attention.head_count_kv (an array: 0 marks a convolution layer); every block then has a
// SwiGLU feed-forward. The convolution (shortconv.l_cache taps) keeps its per-token inputs in
// the layer's KV pages, so forks, prefix sharing and cancellation work as for attention. The
// final norm is stored as token_embd_norm; the output head is tied.
#include "format/gguf/gguf_keys.h"
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {
namespace {

using gguf_key::arch_key;

class Lfm2Architecture final : public DecoderArchitecture {
 public:
  Lfm2Architecture()
      : DecoderArchitecture({.name = "lfm2",
                             .rope_layout = RopeLayout::kNeoX,
                             .default_rope_freq_base = 1000000.0f,
                             .blocks = {.qk_norm = true},
                             .attention_free_layers = true}) {}

  Status read_hparams(const GgufMetadata& md, HParams& hp) const override {
    SYN_RETURN_IF_ERROR(DecoderArchitecture::read_hparams(md, hp));
    const std::string key = arch_key(name(), gguf_key::kShortConvLCache);
    SYN_ASSIGN_OR_RETURN(hp.conv_kernel, md.get_u32(key));
    if (hp.conv_kernel == 0 || hp.conv_kernel > 64) {
      return Status(ErrorCode::kBadValue, "convolution taps outside 1..64", ErrorWhere{.key = key});
    }
    return ok_status();
  }

  Status write_hparams(const HParams& hp, GgufWriter& w) const override {
    SYN_RETURN_IF_ERROR(DecoderArchitecture::write_hparams(hp, w));
    return w.set_scalar(arch_key(name(), gguf_key::kShortConvLCache), hp.conv_kernel);
  }

  HParams synthetic_defaults() const override {
    HParams hp = DecoderArchitecture::synthetic_defaults();
    hp.conv_kernel = 3;
    return hp;
  }

  // LFM2-1.2B's layout in miniature: every third layer attends, the others convolve (a model
  // of fewer than three layers attends in its last).
  void synthetic_layers(HParams& hp) const override {
    hp.layer_n_head_kv.assign(hp.n_layer, 0);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      const bool attends = il % 3 == 2 || (hp.n_layer < 3 && il + 1 == hp.n_layer);
      if (attends) hp.layer_n_head_kv[il] = hp.n_head_kv;
    }
  }

  std::vector<TensorSpec> tensors(const HParams& hp) const override {
    const uint64_t d = hp.n_embd;
    std::vector<TensorSpec> out;
    out.push_back({"token_embd.weight", {d, hp.n_vocab}, TensorRole::kTokenEmbedding});
    out.push_back({"token_embd_norm.weight", {d}, TensorRole::kNorm});
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      out.push_back({block_tensor(b, "attn_norm.weight"), {d}, TensorRole::kNorm});
      if (hp.is_attention_free(b)) {
        out.push_back(
            {block_tensor(b, "shortconv.conv.weight"), {hp.conv_kernel, d}, TensorRole::kNorm});
        out.push_back(
            {block_tensor(b, "shortconv.in_proj.weight"), {d, 3 * d}, TensorRole::kAttention});
        out.push_back(
            {block_tensor(b, "shortconv.out_proj.weight"), {d, d}, TensorRole::kAttention});
      } else {
        append_attention_tensors(hp, b, traits().blocks, out);
      }
      append_feed_forward_tensors(hp, b, traits().blocks, out);
    }
    out.push_back({"output.weight", {d, hp.n_vocab}, TensorRole::kOutput, /*required=*/false});
    return out;
  }

  Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                              const GraphOptions& options) const override {
    GraphBuilder g(hp, file, options);
    g.token_embedding();
    const AttentionBlockOptions attention = attention_options(traits().blocks);
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      if (hp.is_attention_free(b)) {
        g.short_conv_block(b);
      } else {
        g.attention_block(b, attention);
      }
      g.feed_forward_block(b, {});
    }
    g.output_head(0.0f, "token_embd_norm.weight");
    return g.finish();
  }
};

}  // namespace

const Architecture& lfm2_architecture() {
  static const Lfm2Architecture instance;
  return instance;
}

}  // namespace synapse::arch
