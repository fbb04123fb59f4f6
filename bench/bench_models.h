// SPDX-License-Identifier: Apache-2.0
// Models shared by the benchmarks: a ~510 MB Qwen2-shaped F16 model (8 blocks, embedding 896,
// feed-forward 4864), with the real 151936-token Qwen2 vocabulary from the fixtures (which
// dominates the metadata) or a small synthetic one. Written once per process into a temporary
// directory removed at exit.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace synapse::bench {

// The GGUF's path; empty when the real vocabulary is asked for and the fixture is missing.
const std::string& qwen2_shaped_model(bool real_vocabulary);
// The temporary directory the models live in (for files derived from them).
const std::string& bench_directory();
// Evicts `path` from the page cache (fdatasync + POSIX_FADV_DONTNEED), so the next open is cold.
void evict_from_page_cache(const std::string& path);
// Pages of `bytes` (a mapping) from `offset` on that are in the page cache (mincore).
double resident_pages(std::span<const uint8_t> bytes, uint64_t offset);

}  // namespace synapse::bench
