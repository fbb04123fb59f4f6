// SPDX-License-Identifier: Apache-2.0
#include "encoder/encoder_model.h"

#include <string>

#include "kernels/kernel_selection.h"
#include "model/arch/architecture.h"
#include "model/tensor_check.h"
#include "tensor/quant.h"

namespace synapse {

// Binds tensors by name; the shapes were checked against the architecture's list first.
class EncoderModelLoader {
 public:
  EncoderModelLoader(const ModelFile& file, EncoderModel& model) : file_(file), model_(model) {}

  Result<WeightMatrix> matrix(const std::string& name) const {
    const TensorView* t = file_.tensor_view(name);
    if (t == nullptr) {
      return Status(ErrorCode::kMissingTensor, "tensor missing", ErrorWhere{.tensor = name});
    }
    if (!is_weight_type(t->type) || t->n_dims > 2) {
      return Status(ErrorCode::kUnsupported,
                    "no kernels for a " + std::string(tensor_type_name(t->type)) + " matrix",
                    ErrorWhere{.tensor = name});
    }
    return WeightMatrix{.type = t->type,
                        .data = t->data.data(),
                        .row_stride = t->row_bytes(),
                        .n_rows = t->rows(),
                        .k = t->dims[0]};
  }

  // An F32 copy of a vector of any type the kernels can read (F32 or F16 in practice).
  Result<const float*> vector(const std::string& name, uint64_t expected_length) {
    SYN_ASSIGN_OR_RETURN(const WeightMatrix m, matrix(name));
    if (m.n_rows != 1 || m.k != expected_length) {
      return Status(ErrorCode::kBadShape,
                    "expected a vector of " + std::to_string(expected_length) + " elements",
                    ErrorWhere{.tensor = name});
    }
    std::vector<float>& out = model_.vectors_.emplace_back(m.k);
    embedding_row(selected_kernels(), m, 0, out.data());
    return out.data();
  }

  Result<EncoderLinear> linear(const std::string& prefix, uint64_t n_in, uint64_t n_out) {
    SYN_ASSIGN_OR_RETURN(const WeightMatrix w, matrix(prefix + ".weight"));
    if (w.k != n_in || w.n_rows != n_out) {
      return Status(ErrorCode::kBadShape,
                    "expected " + std::to_string(n_in) + " x " + std::to_string(n_out),
                    ErrorWhere{.tensor = prefix + ".weight"});
    }
    EncoderLinear out{.weight = w};
    if (file_.tensor_view(prefix + ".bias") != nullptr) {
      SYN_ASSIGN_OR_RETURN(out.bias, vector(prefix + ".bias", n_out));
    }
    return out;
  }

  Result<EncoderNorm> norm(const std::string& prefix, uint64_t n) {
    EncoderNorm out;
    SYN_ASSIGN_OR_RETURN(out.weight, vector(prefix + ".weight", n));
    SYN_ASSIGN_OR_RETURN(out.bias, vector(prefix + ".bias", n));
    return out;
  }

  Status load() {
    HParams& hp = model_.hp_;
    SYN_ASSIGN_OR_RETURN(hp, read_model_hparams(file_.metadata()));
    if (hp.kind != ModelKind::kEncoder) {
      return Status(ErrorCode::kUnsupported,
                    "architecture '" + hp.arch +
                        "' is not an encoder: embeddings and reranking need a BERT-family model",
                    ErrorWhere{.path = file_.path()});
    }
    if (hp.causal) {
      return Status(ErrorCode::kUnsupported, "causal encoders are not supported",
                    ErrorWhere{.path = file_.path(), .key = hp.arch + ".attention.causal"});
    }
    const Architecture* arch = find_architecture(hp.arch);
    const TensorCheckReport report = check_model_tensors(*arch, hp, file_);
    if (!report.ok()) return Status(report.problems.front()).with_path(file_.path());

    const uint64_t d = hp.n_embd;
    SYN_ASSIGN_OR_RETURN(model_.token_embd_, matrix("token_embd.weight"));
    SYN_ASSIGN_OR_RETURN(model_.position_embd_, matrix("position_embd.weight"));
    SYN_ASSIGN_OR_RETURN(model_.token_types_, matrix("token_types.weight"));
    SYN_ASSIGN_OR_RETURN(model_.embd_norm_, norm("token_embd_norm", d));
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      const std::string p = "blk." + std::to_string(b) + ".";
      EncoderBlockWeights blk;
      SYN_ASSIGN_OR_RETURN(blk.q, linear(p + "attn_q", d, hp.q_dim()));
      SYN_ASSIGN_OR_RETURN(blk.k, linear(p + "attn_k", d, hp.k_dim()));
      SYN_ASSIGN_OR_RETURN(blk.v, linear(p + "attn_v", d, hp.v_dim()));
      SYN_ASSIGN_OR_RETURN(blk.output, linear(p + "attn_output",
                                              static_cast<uint64_t>(hp.n_head) * hp.head_dim_v, d));
      SYN_ASSIGN_OR_RETURN(blk.attn_output_norm, norm(p + "attn_output_norm", d));
      SYN_ASSIGN_OR_RETURN(blk.up, linear(p + "ffn_up", d, hp.n_ff));
      SYN_ASSIGN_OR_RETURN(blk.down, linear(p + "ffn_down", hp.n_ff, d));
      SYN_ASSIGN_OR_RETURN(blk.layer_output_norm, norm(p + "layer_output_norm", d));
      model_.blocks_.push_back(blk);
    }
    return load_classifier();
  }

  Status load_classifier() {
    const HParams& hp = model_.hp_;
    const uint64_t d = hp.n_embd;
    EncoderClassifier head;
    if (file_.tensor_view("cls.weight") != nullptr) {
      SYN_ASSIGN_OR_RETURN(head.dense, linear("cls", d, d));
      head.n_outputs = d;
    }
    if (const TensorView* out = file_.tensor_view("cls.output.weight"); out != nullptr) {
      SYN_ASSIGN_OR_RETURN(head.out, linear("cls.output", d, out->rows()));
      head.n_outputs = out->rows();
    }
    if (head.dense || head.out) model_.classifier_ = head;
    return ok_status();
  }

 private:
  const ModelFile& file_;
  EncoderModel& model_;
};

Result<std::unique_ptr<EncoderModel>> EncoderModel::load(const ModelFile& file) {
  std::unique_ptr<EncoderModel> model(new EncoderModel());
  EncoderModelLoader loader(file, *model);
  SYN_RETURN_IF_ERROR(loader.load());
  return model;
}

}  // namespace synapse
