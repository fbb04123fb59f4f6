// SPDX-License-Identifier: Apache-2.0
// A matrix the backend keeps a copy of (the CPU's rearranged rows) leaves none of its mapped
// pages resident once the model is loaded (model/plan.cc's matrix_of calls
// MappedFile::release_pages_within): otherwise the file's pages, read once to make the copy, stay
// in the process beside it and the weights count twice.
// Residency is read from /proc/self/pagemap (testing::resident_pages).
#include <gtest/gtest.h>

#include <cstdint>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "model/decoder.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

TEST(WeightResidency, CopiedMatricesLeaveNoMappedPagesResident) {
  // Q8_0 rows of 2048 elements: rearranged at load by the AVX2 and the AVX-512 VNNI levels.
  if (selected_kernels().weight(TensorType::kQ8_0).interleaved.rows == 0) {
    GTEST_SKIP() << "the kernels selected here (" << selected_kernels().variant
                 << ") read Q8_0 rows as stored: no matrix is copied";
  }
  testing::TempDir dir;
  SynthOptions o;
  o.n_embd = 256;
  o.n_ff = 2048;
  o.n_head = 4;
  o.n_head_kv = 4;
  o.type_embedding = o.type_attention = o.type_feed_forward = o.type_output = TensorType::kQ8_0;
  ASSERT_TRUE(synthesize_model(o, dir.file("m.gguf")).ok());
  ThreadPool pool(1);
  CpuBackend backend(selected_kernels(), pool);
  auto model = DecoderModel::open(dir.file("m.gguf"), backend);
  ASSERT_TRUE(model.ok()) << model.status().to_string();

  const std::span<const uint8_t> mapped = (*model)->file().mapping().bytes();
  // A read fault elsewhere may map a released page's neighbours back (the kernel's fault-around
  // maps up to 64 KiB of cached pages about the faulting one): the edges are not checked.
  constexpr size_t kEdge = 64 << 10;
  size_t copied = 0;
  for (const PlanRegion& region : (*model)->plan().regions) {
    for (const PlanOp& op : region.ops) {
      if (op.op.kind != BackendOp::kMatmul) continue;
      for (size_t i = 0; i < op.matrices.size(); ++i) {
        const std::span<const uint8_t> source = op.op.weights[i].view->data;
        if (op.matrices[i].data == source.data()) continue;  // read in place
        ASSERT_GE(source.data(), mapped.data());
        ASSERT_LE(source.data() + source.size(), mapped.data() + mapped.size());
        if (source.size() < 2 * kEdge + (64 << 10)) continue;  // all edge
        ++copied;
        const long present =
            testing::resident_pages(source.data() + kEdge, source.data() + source.size() - kEdge);
        ASSERT_GE(present, 0) << "cannot read /proc/self/pagemap";
        EXPECT_EQ(present, 0) << region.name << " matrix " << i << ": " << present
                              << " mapped pages still resident beside its copy";
      }
    }
  }
  // The feed-forward matrices (256 x 2048, 2048 x 256: 544 KiB each) are large enough.
  EXPECT_GT(copied, 0U) << "the backend copied no matrix large enough to test";
}

}  // namespace
}  // namespace synapse
