// SPDX-License-Identifier: Apache-2.0
// `synapse synth`: writes a deterministic random-weight model.
#include <cstdio>

#include "base/log.h"
#include "cli/commands.h"
#include "model/arch/architecture.h"
#include "synth/synth_model.h"

namespace synapse::cli {
namespace {

// CLI11 transformer: a tensor type name ("f16", "BF16") to TensorType.
CLI::Option* add_type_option(CLI::App* cmd, const std::string& flag, std::string& target,
                             const std::string& help) {
  return cmd->add_option(flag, target, help)->check([](const std::string& value) {
    return tensor_type_from_name(value) ? std::string() : "unknown tensor type '" + value + "'";
  });
}

}  // namespace

void add_synth_command(CLI::App& app, int& exit_code) {
  struct Options {
    SynthOptions synth;
    std::string output;
    std::string type_all = "f32";
    std::string type_embd, type_attn, type_ffn, type_output;
    float rope_freq_base = 0.0f;
    float norm_eps = 0.0f;
    bool tied = false;
    bool untied = false;
    std::string pooling;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a deterministic random-weight model (same options and seed: same bytes)");
  cmd->add_option("-o,--output", o->output, "Output GGUF file")->required();
  std::string arch_names;
  for (const std::string_view name : architecture_names()) {
    arch_names += (arch_names.empty() ? "" : ", ") + std::string(name);
  }
  cmd->add_option("--arch", o->synth.arch, "Architecture: " + arch_names)->capture_default_str();
  cmd->add_option("--name", o->synth.name, "general.name (default synapse-synth-<arch>)");
  cmd->add_option("--seed", o->synth.seed, "Random seed")->capture_default_str();
  cmd->add_option("--n-vocab", o->synth.n_vocab,
                  "Vocabulary size (default: 320 BPE / 160 WordPiece tokens, or --vocab-from's)");
  cmd->add_option("--n-ctx", o->synth.n_ctx, "Training context length")->capture_default_str();
  cmd->add_option("--n-embd", o->synth.n_embd, "Embedding length")->capture_default_str();
  cmd->add_option("--n-ff", o->synth.n_ff, "Feed-forward length")->capture_default_str();
  cmd->add_option("--n-layer", o->synth.n_layer, "Number of blocks")->capture_default_str();
  cmd->add_option("--n-head", o->synth.n_head, "Attention heads")->capture_default_str();
  cmd->add_option("--n-head-kv", o->synth.n_head_kv, "KV heads (decoders)")->capture_default_str();
  cmd->add_option("--n-expert", o->synth.n_expert, "Experts (mixture-of-experts architectures)");
  cmd->add_option("--n-expert-used", o->synth.n_expert_used, "Experts used per token");
  cmd->add_option("--n-ff-expert", o->synth.n_ff_expert, "Feed-forward length of each expert");
  cmd->add_option("--head-dim", o->synth.head_dim, "Head size (default n_embd / n_head)");
  cmd->add_option("--rope-freq-base", o->rope_freq_base, "RoPE base (default per architecture)");
  cmd->add_option("--norm-eps", o->norm_eps, "Norm epsilon (default per architecture)");
  cmd->add_flag("--tied", o->tied, "Output head tied to token_embd (default for qwen2/qwen3)");
  cmd->add_flag("--untied", o->untied, "Separate output.weight (default for llama)");
  cmd->add_option("--pooling", o->pooling,
                  "Pooling type in the metadata, none|mean|cls|last|rank (encoders: default mean, "
                  "rank with --classifier-labels; decoders: default last)")
      ->check(CLI::IsMember({"none", "mean", "cls", "last", "rank"}));
  cmd->add_option("--classifier-labels", o->synth.classifier_labels,
                  "Encoders: add a classification head (cls.* tensors, a cross-encoder "
                  "reranker) with this many outputs");
  add_type_option(cmd, "--type", o->type_all,
                  "Type of every matrix: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k..q6_k, "
                  "iq4_nl, iq4_xs")
      ->capture_default_str();
  add_type_option(cmd, "--type-embd", o->type_embd, "Type of token_embd");
  add_type_option(cmd, "--type-attn", o->type_attn, "Type of attention matrices");
  add_type_option(cmd, "--type-ffn", o->type_ffn, "Type of feed-forward matrices");
  add_type_option(cmd, "--type-output", o->type_output, "Type of the output head");
  cmd->add_option("--vocab-from", o->synth.vocab_from,
                  "Copy the tokenizer (tokenizer.* keys) from this GGUF");
  cmd->callback([o, &exit_code] {
    if (o->tied && o->untied) {
      std::fprintf(stderr, "error: --tied and --untied exclude each other\n");
      exit_code = kExitUsage;
      return;
    }
    SynthOptions s = o->synth;
    const TensorType all = *tensor_type_from_name(o->type_all);
    auto pick = [all](const std::string& name) {
      return name.empty() ? all : *tensor_type_from_name(name);
    };
    s.type_embedding = pick(o->type_embd);
    s.type_attention = pick(o->type_attn);
    s.type_feed_forward = pick(o->type_ffn);
    s.type_output = pick(o->type_output);
    if (o->rope_freq_base > 0.0f) s.rope_freq_base = o->rope_freq_base;
    if (o->norm_eps > 0.0f) s.norm_eps = o->norm_eps;
    if (o->tied) s.tied_output = true;
    if (o->untied) s.tied_output = false;
    if (!o->pooling.empty()) s.pooling = pooling_type_from_name(o->pooling);
    const Status status = synthesize_model(s, o->output);
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", status.to_string().c_str());
      exit_code = kExitFailure;
      return;
    }
    log_info("wrote {}", o->output);
    exit_code = kExitOk;
  });
}

}  // namespace synapse::cli
