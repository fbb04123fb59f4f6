// SPDX-License-Identifier: Apache-2.0
#include "kernels/kernel_selection.h"

#include <cstdlib>

#include "base/log.h"
#include "kernels/kernel_compare.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

// Small inputs: the whole check takes a few milliseconds in an optimized build.
constexpr size_t kCheckK = 512;  // a multiple of every block size
constexpr size_t kCheckRows = 9;
constexpr size_t kCheckCols = 3;
constexpr size_t kCheckOpLength = 515;
constexpr uint64_t kCheckSeed = 20240901;

struct Checker {
  KernelTable& table;
  const KernelTable& fallback;
  std::vector<KernelCheck>& checks;
  std::vector<Status>& errors;

  // Records the result; on failure restores the fallback's entry.
  template <typename Entry>
  void record(const std::string& kernel, const std::string& family, const CompareResult& r,
              Entry& entry, const Entry& fallback_entry) {
    checks.push_back({kernel, family, table.level, r.ok(), r.worst_ratio, r.detail});
    if (r.ok()) return;
    errors.push_back(Status(ErrorCode::kKernelMismatch,
                            std::string(isa_level_name(table.level)) + " kernel " + kernel +
                                " disagrees with the reference (" + r.detail + "); using the " +
                                std::string(isa_level_name(fallback.level)) + " variant",
                            ErrorWhere{.field = kernel}));
    entry = fallback_entry;
  }
};

bool same_matmul(const MatmulKernel& a, const MatmulKernel& b) {
  return a.tile == b.tile && a.prepare == b.prepare;
}

}  // namespace

void self_check(KernelTable& table, const KernelTable& fallback, std::vector<KernelCheck>& checks,
                std::vector<Status>& errors) {
  Checker c{table, fallback, checks, errors};
  for (TensorType type : weight_types()) {
    const auto i = static_cast<uint32_t>(type);
    WeightKernels& k = table.weights[i];
    const WeightKernels& f = fallback.weights[i];
    const std::string name(tensor_type_name(type));
    if (k.dot != f.dot || k.dot_prepare != f.dot_prepare) {
      const CompareResult r = compare_dot(table, type, kCheckRows, kCheckCols, kCheckK, kCheckSeed,
                                          DotPath::kQuantized);
      c.record("dot." + name, "dot", r, k.dot, f.dot);
      if (!r.ok()) {
        k.dot_prepare = f.dot_prepare;
        k.dot_prepared_bytes = f.dot_prepared_bytes;
      }
    }
    if (k.dot_f32 != f.dot_f32) {
      c.record("dot_f32." + name, "dot_f32",
               compare_dot(table, type, kCheckRows, kCheckCols, kCheckK, kCheckSeed, DotPath::kF32),
               k.dot_f32, f.dot_f32);
    }
    if (k.dequantize != f.dequantize) {
      c.record("dequantize." + name, "dequantize",
               compare_dequantize(table, type, kCheckK, kCheckSeed), k.dequantize, f.dequantize);
    }
    if (k.interleaved.dot != f.interleaved.dot && k.interleaved.rows != 0) {
      // Rows of three groups, columns of every tile width; both activation paths.
      const size_t rows = 3 * k.interleaved.rows;
      for (DotPath path : {DotPath::kQuantized, DotPath::kF32}) {
        if (k.interleaved.rows == 0) break;  // disabled by the first path
        c.record(std::string("interleaved.") + (path == DotPath::kF32 ? "f32." : "") + name,
                 "interleaved",
                 compare_matmul(table, type, rows, 7, kCheckK, kCheckSeed, path, 1, true),
                 k.interleaved, f.interleaved);
      }
    }
    if (!same_matmul(k.matmul, f.matmul) && k.matmul.tile != nullptr) {
      c.record("matmul." + name, "matmul",
               compare_matmul(table, type, k.matmul.rows_per_tile + 5, kMatmulMinColumns + 3,
                              kCheckK, kCheckSeed, DotPath::kQuantized, 1),
               k.matmul, f.matmul);
    }
  }
  if (table.quantize_q8_0 != fallback.quantize_q8_0) {
    c.record("quantize.Q8_0", "quantize",
             compare_quantize(table, TensorType::kQ8_0, kCheckK, kCheckSeed), table.quantize_q8_0,
             fallback.quantize_q8_0);
  }
  if (table.quantize_q8_k != fallback.quantize_q8_k) {
    c.record("quantize.Q8_K", "quantize",
             compare_quantize(table, TensorType::kQ8_K, kCheckK, kCheckSeed), table.quantize_q8_k,
             fallback.quantize_q8_k);
  }
  // Each op's entry, checked through the op case that exercises it.
  auto check_op = [&](OpKind op, auto member) {
    if (table.*member == fallback.*member) return;
    c.record(op_name(op), "ops", compare_op(table, op, kCheckOpLength, kCheckSeed), table.*member,
             fallback.*member);
  };
  check_op(OpKind::kRmsNorm, &KernelTable::rms_norm);
  check_op(OpKind::kLayerNorm, &KernelTable::layer_norm);
  check_op(OpKind::kSoftmaxMasked, &KernelTable::softmax);
  check_op(OpKind::kSoftmaxSoftcap, &KernelTable::softmax);
  check_op(OpKind::kRopeNeoxYarn, &KernelTable::rope);
  check_op(OpKind::kExp, &KernelTable::exp);
  check_op(OpKind::kSilu, &KernelTable::silu);
  check_op(OpKind::kGeluTanh, &KernelTable::gelu_tanh);
  check_op(OpKind::kGeluErf, &KernelTable::gelu_erf);
  check_op(OpKind::kSwiglu, &KernelTable::swiglu);
  check_op(OpKind::kAdd, &KernelTable::add);
  check_op(OpKind::kMul, &KernelTable::mul);
  check_op(OpKind::kScale, &KernelTable::scale);
  check_op(OpKind::kReadBytes, &KernelTable::read_bytes);
  if (table.attend != fallback.attend) {
    for (TensorType kv_type :
         {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
      AttentionCase a;
      a.kv_type = kv_type;
      a.n_keys = 70;
      if (table.attend == fallback.attend) break;  // disabled by the first case
      c.record(std::string("attend.") + std::string(tensor_type_name(kv_type)), "attention",
               compare_attention(table, a, kCheckSeed), table.attend, fallback.attend);
    }
  }
}

KernelSelection select_kernels(std::string_view isa_override, bool vnni) {
  KernelSelection s;
  for (IsaLevel level : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (kernel_table_for(level) != nullptr) s.best = level;
  }
  s.requested = s.best;
  if (!isa_override.empty()) {
    const std::optional<IsaLevel> forced = isa_level_from_name(isa_override);
    if (!forced) {
      s.override_note =
          "SYNAPSE_ISA='" + std::string(isa_override) + "' is not scalar, avx2 or avx512; ignored";
    } else if (kernel_table_for(*forced) == nullptr) {
      s.override_note = "SYNAPSE_ISA=" + std::string(isa_override) +
                        " is not supported by this CPU; using " +
                        std::string(isa_level_name(s.best));
    } else {
      s.requested = *forced;
    }
  }
  s.vnni_off = !vnni && kernel_table_for(s.requested, true) != kernel_table_for(s.requested, false);
  // Level by level: each level's table is checked against the reference, with the checked
  // table of the level below as the fallback.
  s.table = reference_kernels();
  for (size_t l = 1; l <= static_cast<size_t>(s.requested); ++l) {
    KernelTable candidate = *kernel_table_for(static_cast<IsaLevel>(l), vnni);
    self_check(candidate, s.table, s.checks, s.errors);
    s.table = candidate;
  }
  return s;
}

const KernelSelection& kernel_selection() {
  static const KernelSelection selection = [] {
    // Read once, inside the static's initialization; nothing here sets the environment.
    const char* env = std::getenv("SYNAPSE_ISA");    // NOLINT(concurrency-mt-unsafe)
    const char* vnni = std::getenv("SYNAPSE_VNNI");  // NOLINT(concurrency-mt-unsafe)
    KernelSelection s =
        select_kernels(env != nullptr ? env : "", vnni == nullptr || std::string_view(vnni) != "0");
    if (!s.override_note.empty()) log_warn("kernels: {}", s.override_note);
    for (const Status& e : s.errors) log_warn("kernels: {}", e.to_string());
    size_t passed = 0;
    for (const KernelCheck& check : s.checks) passed += check.ok ? 1 : 0;
    log_debug("kernels: {} selected; self-check {}/{} passed", s.table.variant, passed,
              s.checks.size());
    return s;
  }();
  return selection;
}

}  // namespace synapse
