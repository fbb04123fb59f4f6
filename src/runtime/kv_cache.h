// SPDX-License-Identifier: Apache-2.0
// The paged KV cache: fixed-size pages of `page_tokens` tokens (each page holds those tokens' K
// and V rows for every layer), a page table per sequence, and a pool that grows on demand in
// chunks up to a configured page limit -- no sequence preallocates its whole context.
//
// Prefix sharing: fork() gives a new sequence the same pages (reference counted). A write into a
// page that more than one sequence holds copies it first (copy-on-write), so a cached prompt
// prefix is computed once and its pages are shared until a sequence diverges.
//
// Errors are values: a sequence past the context is limit_exceeded, an exhausted pool is
// resource_exhausted; neither leaves the cache in a half-updated state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace synapse {

using SeqId = uint32_t;

struct KvCacheConfig {
  size_t page_tokens = 32;
  size_t max_pages = 0;        // 0: enough for 4 sequences of the full context
  size_t pages_per_chunk = 16; // the pool grows by this many pages at a time
};

struct KvCacheStats {
  size_t page_bytes = 0;
  size_t pages_allocated = 0;  // pool capacity so far (chunks grown)
  size_t pages_in_use = 0;
  size_t pages_shared = 0;     // pages held by more than one sequence
  size_t max_pages = 0;
  size_t copies_on_write = 0;
};

class KvCache {
 public:
  // `format` describes one layer's K (and V) rows; n_ctx bounds each sequence.
  KvCache(Backend& backend, const KvFormat& format, size_t n_layer, size_t n_ctx,
          const KvCacheConfig& config);
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  SeqId create();
  // A new sequence sharing every page (and the token count) of `source`.
  Result<SeqId> fork(SeqId source);
  Status release(SeqId seq);
  bool contains(SeqId seq) const;
  size_t n_tokens(SeqId seq) const;  // precondition: contains(seq)

  // Makes room for n_new more tokens: adds pages and copies shared pages that the new tokens
  // will be written into. Atomic: on error nothing changed.
  Status reserve(SeqId seq, size_t n_new);
  // Records that n_new tokens (reserved) were written.
  void commit(SeqId seq, size_t n_new);
  // Keeps the first n tokens (n <= n_tokens); pages past them are released.
  void truncate(SeqId seq, size_t n);

  // Page tables of every layer for the forward pass: n_layer views, valid until the next call
  // that changes this sequence's pages.
  const KvPageView* layer_views(SeqId seq) const;

  const KvFormat& format() const { return format_; }
  size_t page_tokens() const { return format_.page_tokens; }
  size_t n_ctx() const { return n_ctx_; }
  KvCacheStats stats() const;

 private:
  struct Sequence {
    bool live = false;
    size_t n_tokens = 0;
    std::vector<uint32_t> pages;  // page ids
    // [layer][k page pointers..., v page pointers...] and the views over them.
    std::vector<uint8_t*> pointers;
    std::vector<KvPageView> views;
  };

  Result<uint32_t> allocate_page();
  void release_page(uint32_t page);
  uint8_t* page_data(uint32_t page) const;
  void rebuild_views(Sequence& s);
  Sequence& seq(SeqId id) { return sequences_[id]; }
  const Sequence& seq(SeqId id) const { return sequences_[id]; }

  Backend& backend_;
  KvFormat format_;
  size_t n_layer_;
  size_t n_ctx_;
  KvCacheConfig config_;
  size_t layer_bytes_;  // one layer's K (or V) in one page
  size_t page_bytes_;
  std::vector<BackendBuffer> chunks_;
  std::vector<uint32_t> refcount_;   // per page id
  std::vector<uint32_t> free_pages_;
  std::vector<Sequence> sequences_;
  std::vector<SeqId> free_ids_;
  size_t copies_on_write_ = 0;
};

}  // namespace synapse
