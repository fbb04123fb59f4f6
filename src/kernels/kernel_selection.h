// SPDX-License-Identifier: Apache-2.0
// Choosing the kernels once at start-up: the best ISA level the CPU runs (or the one
// SYNAPSE_ISA=scalar|avx2|avx512 forces; its VNNI variant where the CPU has one, unless
// SYNAPSE_VNNI=0), then a self-check that runs every kernel of that level
// against the reference on small random inputs. A kernel outside its tolerance is disabled --
// its entry replaced by the next lower level's, itself checked -- and reported as a
// kernel_mismatch error, so the machine probe "certifies" the kernels it runs.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/kernel_table.h"

namespace synapse {

struct KernelCheck {
  std::string kernel;  // "dot.Q4_K", "matmul.Q8_0", "softmax", ...
  std::string family;  // "dot", "dot_f32", "matmul", "dequantize", "quantize", "ops", "attention"
  IsaLevel level;      // the level whose variant was checked
  bool ok;
  double worst_ratio;  // worst error / tolerance
  std::string detail;
};

struct KernelSelection {
  IsaLevel best = IsaLevel::kScalar;       // best level this CPU runs
  IsaLevel requested = IsaLevel::kScalar;  // after SYNAPSE_ISA
  bool vnni_off = false;                   // SYNAPSE_VNNI=0 kept a VNNI variant out
  std::string override_note;               // why SYNAPSE_ISA was ignored, if it was
  std::vector<KernelCheck> checks;         // the self-check, one entry per kernel checked
  std::vector<Status> errors;              // one kernel_mismatch per disabled variant
  KernelTable table;                       // what callers use
};

// The selection for this process: made on first call (thread-safe), logged at debug level,
// errors logged as warnings. Reads SYNAPSE_ISA.
const KernelSelection& kernel_selection();
inline const KernelTable& selected_kernels() { return kernel_selection().table; }

// Makes a selection without caching: `isa_override` as SYNAPSE_ISA would give it ("" for
// none); `vnni` false as SYNAPSE_VNNI=0 (each level's variant without VNNI). Exposed for tests
// and `synapse doctor`.
KernelSelection select_kernels(std::string_view isa_override, bool vnni = true);

// The self-check alone: checks every entry of `table` that differs from `fallback` and replaces
// failing ones by fallback's entry. Appends to `checks` and `errors`.
void self_check(KernelTable& table, const KernelTable& fallback, std::vector<KernelCheck>& checks,
                std::vector<Status>& errors);

}  // namespace synapse
