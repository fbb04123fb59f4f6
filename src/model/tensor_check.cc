// SPDX-License-Identifier: Apache-2.0
#include "model/tensor_check.h"

#include <unordered_set>

namespace synapse {
namespace {

std::string shape_string(std::span<const uint64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += shape[i] == 0 ? std::string("*") : std::to_string(shape[i]);
  }
  return out + "]";
}

// A 0 in an expected shape matches any size (e.g. a classifier's label count).
bool shape_matches(std::span<const uint64_t> expected, std::span<const uint64_t> actual) {
  if (expected.size() != actual.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != 0 && expected[i] != actual[i]) return false;
  }
  return true;
}

}  // namespace

TensorCheckReport check_model_tensors(const Architecture& arch, const HParams& hp,
                                      const ModelFile& file) {
  TensorCheckReport report;
  std::unordered_set<std::string_view> known;
  const std::vector<TensorSpec> specs = arch.tensors(hp);
  for (const TensorSpec& spec : specs) {
    known.insert(spec.name);
    if (spec.required) ++report.expected_required;
    const TensorView* tensor = file.tensor_view(spec.name);
    if (tensor == nullptr) {
      if (spec.required) {
        report.problems.emplace_back(
            ErrorCode::kMissingTensor,
            "required " + std::string(tensor_role_name(spec.role)) + " tensor is missing",
            ErrorWhere{.tensor = spec.name});
      }
      if (spec.name == "output.weight") report.tied_output = true;
      continue;
    }
    if (spec.required) {
      ++report.present_required;
    } else {
      ++report.present_optional;
    }
    if (!shape_matches(spec.shape, tensor->shape())) {
      report.problems.emplace_back(
          ErrorCode::kBadShape,
          "shape " + shape_string(tensor->shape()) + ", expected " + shape_string(spec.shape),
          ErrorWhere{.tensor = spec.name});
    }
    if (!tensor_role_is_matrix(spec.role) && tensor->type != TensorType::kF32 &&
        tensor->type != TensorType::kF16) {
      report.problems.emplace_back(ErrorCode::kTypeMismatch,
                                   "vector tensor has type " +
                                       std::string(tensor_type_name(tensor->type)) +
                                       ", expected F32 or F16",
                                   ErrorWhere{.tensor = spec.name});
    }
  }
  for (const TensorView& tensor : file.tensor_views()) {
    if (!known.contains(tensor.name)) report.unknown.emplace_back(tensor.name);
  }
  return report;
}

}  // namespace synapse
