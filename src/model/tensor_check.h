// SPDX-License-Identifier: Apache-2.0
// Checks a file's tensors against what its architecture expects: every required tensor present,
// every present tensor with the expected shape, vectors (norms, biases) in F32 or F16. This is the
// first half of model verification; the Model IR adds ops and kernels on top.
#pragma once

#include <string>
#include <vector>

#include "format/model_file.h"
#include "model/arch/architecture.h"

namespace synapse {

struct TensorCheckReport {
  size_t expected_required = 0;
  size_t present_required = 0;
  size_t present_optional = 0;
  std::vector<Status> problems;      // missing or mismatched tensors, each naming the tensor
  std::vector<std::string> unknown;  // tensors the architecture does not use
  bool tied_output = false;          // no output.weight: the head reuses token_embd

  bool ok() const { return problems.empty(); }
};

TensorCheckReport check_model_tensors(const Architecture& arch, const HParams& hp,
                                      const ModelFile& file);

}  // namespace synapse
