// SPDX-License-Identifier: Apache-2.0
// Verification and lowering of the Model IR for one backend. verify_ir() runs before any token:
// every weight present with the shape its op needs, every (op, type) supported by the backend,
// head and RoPE geometry and the context valid; an error names the region, the op and the tensor.
// lower_ir() then has the backend prepare each op's weights (the CPU reads the mapping in place;
// a device backend uploads them) and records the kernel
// that runs it on this machine (what `synapse inspect --ir` prints).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/mapped_file.h"
#include "model/ir.h"

namespace synapse {

struct PlanOp {
  IrOp op;             // what to compute (copied from the IR)
  std::string kernel;  // the kernel that runs it here
  // kEmbed, kMatmul: the matrices in the IR's weight order. kMoe: the router, then the n_expert
  // gate matrices, the up matrices and the down matrices (slices of the 3-D expert tensors).
  std::vector<WeightMatrix> matrices;
  const float* vector = nullptr;   // kRmsNorm/kLayerNorm weight, kAddBias bias, kRope factors
  const float* vector2 = nullptr;  // kLayerNorm bias (null: none)
};

struct PlanRegion {
  std::string name;
  std::vector<PlanOp> ops;
};

struct ExecutionPlan {
  MatmulMode matmul_mode;
  std::string backend_name;
  std::vector<PlanRegion> regions;
};

Status verify_ir(const ModelIr& ir, const Backend& backend, MatmulMode mode);
// Requires a verified IR; the plan's weights are the backend's (for the CPU, views into the
// model file's mapping, or its rearranged copies), valid while the backend and the file live.
// `source`, when given, is the mapping the IR's views point into: the pages of each matrix the
// backend copied are released from it as soon as the copy is made.
Result<ExecutionPlan> lower_ir(const ModelIr& ir, Backend& backend, MatmulMode mode,
                               const MappedFile* source = nullptr);
// Human-readable regions, ops, shapes, dtypes and kernels.
std::string format_plan(const ModelIr& ir, const ExecutionPlan& plan);

}  // namespace synapse
