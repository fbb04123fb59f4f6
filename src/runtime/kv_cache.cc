// SPDX-License-Identifier: Apache-2.0
#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace synapse {

KvCache::KvCache(Backend& backend, const KvFormat& format, size_t n_layer, size_t n_ctx,
                 const KvCacheConfig& config)
    : backend_(backend), format_(format), n_layer_(n_layer), n_ctx_(n_ctx), config_(config) {
  SYN_CHECK(format_.page_tokens > 0 && config_.pages_per_chunk > 0, "empty KV pages");
  layer_bytes_ = format_.page_tokens * format_.token_bytes();
  page_bytes_ = 2 * n_layer_ * layer_bytes_;
  if (config_.max_pages == 0) {
    config_.max_pages = 4 * ((n_ctx_ + format_.page_tokens - 1) / format_.page_tokens);
  }
}

SeqId KvCache::create() {
  SeqId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<SeqId>(sequences_.size());
    sequences_.emplace_back();
  }
  Sequence& s = seq(id);
  s = Sequence{};
  s.live = true;
  // Page tables sized for the whole context up front (a few pointers per page): growing a
  // sequence in the decode loop then allocates nothing.
  const size_t max_pages = (n_ctx_ + format_.page_tokens - 1) / format_.page_tokens;
  s.pages.reserve(max_pages);
  s.pointers.reserve(n_layer_ * 2 * std::max<size_t>(max_pages, 1));
  rebuild_views(s);
  return id;
}

bool KvCache::contains(SeqId id) const { return id < sequences_.size() && seq(id).live; }

size_t KvCache::n_tokens(SeqId id) const { return seq(id).n_tokens; }

Result<SeqId> KvCache::fork(SeqId source) {
  if (!contains(source)) {
    return Status(ErrorCode::kNotFound, "no sequence " + std::to_string(source),
                  ErrorWhere{.field = "sequence"});
  }
  const SeqId id = create();
  Sequence& dst = seq(id);
  const Sequence& src = seq(source);
  dst.n_tokens = src.n_tokens;
  dst.pages = src.pages;
  for (uint32_t page : dst.pages) ++refcount_[page];
  rebuild_views(dst);
  return id;
}

Status KvCache::release(SeqId id) {
  if (!contains(id)) {
    return Status(ErrorCode::kNotFound, "no sequence " + std::to_string(id),
                  ErrorWhere{.field = "sequence"});
  }
  Sequence& s = seq(id);
  for (uint32_t page : s.pages) release_page(page);
  s = Sequence{};
  free_ids_.push_back(id);
  return ok_status();
}

uint8_t* KvCache::page_data(uint32_t page) const {
  return chunks_[page / config_.pages_per_chunk].data() +
         (page % config_.pages_per_chunk) * page_bytes_;
}

Result<uint32_t> KvCache::allocate_page() {
  if (free_pages_.empty()) {
    const size_t allocated = chunks_.size() * config_.pages_per_chunk;
    if (allocated >= config_.max_pages) {
      return Status(ErrorCode::kResourceExhausted,
                    "KV cache pool exhausted (" + std::to_string(config_.max_pages) + " pages of " +
                        std::to_string(format_.page_tokens) + " tokens)",
                    ErrorWhere{.field = "kv_pages"});
    }
    SYN_ASSIGN_OR_RETURN(BackendBuffer chunk,
                         backend_.allocate(config_.pages_per_chunk * page_bytes_));
    chunks_.push_back(std::move(chunk));
    refcount_.resize(chunks_.size() * config_.pages_per_chunk, 0);
    // Hand out low page ids first.
    for (size_t p = chunks_.size() * config_.pages_per_chunk; p-- > allocated;) {
      free_pages_.push_back(static_cast<uint32_t>(p));
    }
  }
  const uint32_t page = free_pages_.back();
  free_pages_.pop_back();
  refcount_[page] = 1;
  return page;
}

void KvCache::release_page(uint32_t page) {
  SYN_DCHECK(refcount_[page] > 0, "page released twice");
  if (--refcount_[page] == 0) free_pages_.push_back(page);
}

Status KvCache::reserve(SeqId id, size_t n_new) {
  if (!contains(id)) {
    return Status(ErrorCode::kNotFound, "no sequence " + std::to_string(id),
                  ErrorWhere{.field = "sequence"});
  }
  Sequence& s = seq(id);
  if (n_new == 0) return ok_status();
  const size_t end = s.n_tokens + n_new;
  if (end > n_ctx_) {
    return Status(ErrorCode::kLimitExceeded,
                  "context overflow: " + std::to_string(end) + " tokens exceed the context of " +
                      std::to_string(n_ctx_),
                  ErrorWhere{.field = "context"});
  }
  const size_t pt = format_.page_tokens;
  const size_t first_written = s.n_tokens / pt;
  const size_t pages_needed = (end + pt - 1) / pt;
  size_t fresh = pages_needed > s.pages.size() ? pages_needed - s.pages.size() : 0;
  for (size_t p = first_written; p < s.pages.size(); ++p) fresh += refcount_[s.pages[p]] > 1;
  const size_t capacity_left =
      free_pages_.size() +
      (config_.max_pages - std::min(config_.max_pages, chunks_.size() * config_.pages_per_chunk));
  if (fresh > capacity_left) {
    return Status(ErrorCode::kResourceExhausted,
                  "KV cache pool exhausted: " + std::to_string(fresh) + " more pages needed, " +
                      std::to_string(capacity_left) + " left of " +
                      std::to_string(config_.max_pages),
                  ErrorWhere{.field = "kv_pages"});
  }
  // Copy-on-write of the shared pages the new tokens land in.
  for (size_t p = first_written; p < s.pages.size(); ++p) {
    const uint32_t old = s.pages[p];
    if (refcount_[old] <= 1) continue;
    SYN_ASSIGN_OR_RETURN(const uint32_t copy, allocate_page());
    backend_.copy(page_data(copy), page_data(old), page_bytes_);
    release_page(old);
    s.pages[p] = copy;
    ++copies_on_write_;
  }
  while (s.pages.size() < pages_needed) {
    SYN_ASSIGN_OR_RETURN(const uint32_t page, allocate_page());
    s.pages.push_back(page);
  }
  rebuild_views(s);
  return ok_status();
}

void KvCache::commit(SeqId id, size_t n_new) {
  Sequence& s = seq(id);
  SYN_DCHECK(s.n_tokens + n_new <= s.pages.size() * format_.page_tokens, "commit without reserve");
  s.n_tokens += n_new;
}

void KvCache::truncate(SeqId id, size_t n) {
  Sequence& s = seq(id);
  if (n >= s.n_tokens) return;
  s.n_tokens = n;
  const size_t keep = (n + format_.page_tokens - 1) / format_.page_tokens;
  while (s.pages.size() > keep) {
    release_page(s.pages.back());
    s.pages.pop_back();
  }
  rebuild_views(s);
}

void KvCache::rebuild_views(Sequence& s) {
  const size_t n_pages = s.pages.size();
  s.pointers.resize(n_layer_ * 2 * std::max<size_t>(n_pages, 1));
  s.views.resize(n_layer_);
  for (size_t layer = 0; layer < n_layer_; ++layer) {
    uint8_t** k = s.pointers.data() + layer * 2 * std::max<size_t>(n_pages, 1);
    uint8_t** v = k + n_pages;
    for (size_t p = 0; p < n_pages; ++p) {
      uint8_t* base = page_data(s.pages[p]) + layer * 2 * layer_bytes_;
      k[p] = base;
      v[p] = base + layer_bytes_;
    }
    s.views[layer] = KvPageView{k, v, n_pages};
  }
}

const KvPageView* KvCache::layer_views(SeqId id) const { return seq(id).views.data(); }

KvCacheStats KvCache::stats() const {
  KvCacheStats st;
  st.page_bytes = page_bytes_;
  st.pages_allocated = chunks_.size() * config_.pages_per_chunk;
  st.max_pages = config_.max_pages;
  st.copies_on_write = copies_on_write_;
  for (uint32_t rc : refcount_) {
    st.pages_in_use += rc > 0;
    st.pages_shared += rc > 1;
  }
  return st;
}

}  // namespace synapse
