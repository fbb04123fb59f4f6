// SPDX-License-Identifier: Apache-2.0
// The service's counters, gauges and histograms, rendered in Prometheus' text exposition format
// (version 0.0.4) for `GET /metrics`. The engine loop updates them once per step and per request
// event; any thread may render. One mutex guards everything: updates are a few per step, far from
// contention.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "serve/request.h"

namespace synapse::serve {

// Fixed upper bounds (the +Inf bucket is implicit).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // per bucket, not cumulative
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // bounds_.size() + 1 (the last is +Inf)
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

class ServiceMetrics {
 public:
  ServiceMetrics();

  // `status` is a finish reason ("stop", "length", "cancelled") or an error code name
  // ("queue_full", "deadline_exceeded", "invalid_argument", ...).
  void count_request(RequestClass c, std::string_view status);
  void set_queue_depth(RequestClass c, size_t depth);
  void set_active_sequences(size_t n);
  // Of the active sequences, those of class `c`.
  void set_running_sequences(RequestClass c, size_t n);
  void add_prompt_tokens(size_t prompt_tokens, size_t cached_tokens);
  void add_generated_tokens(size_t n);
  void observe_time_to_first_token(RequestClass c, double seconds);
  void observe_inter_token_latency(double seconds);
  void observe_step(size_t sequences, size_t tokens, double seconds);
  void set_kv_pages(size_t in_use, size_t total);
  void count_prefix_lookup(bool hit);
  void count_preemption();
  // Speculative decoding: drafted tokens verified, and how many of them were taken.
  void add_draft_tokens(size_t verified, size_t accepted);
  // Time a step waited for the cores while other models' steps ran (compute_gate.h).
  void add_compute_wait(double seconds);

  std::string render_prometheus() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<RequestClass, std::string>, uint64_t> requests_;
  std::array<size_t, kRequestClassCount> queue_depth_{};
  size_t active_sequences_ = 0;
  std::array<size_t, kRequestClassCount> running_sequences_{};
  uint64_t prompt_tokens_ = 0;
  uint64_t cached_prompt_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t steps_ = 0;
  uint64_t prefix_hits_ = 0;
  uint64_t prefix_misses_ = 0;
  uint64_t preemptions_ = 0;
  uint64_t draft_tokens_ = 0;
  uint64_t draft_tokens_accepted_ = 0;
  double compute_wait_s_ = 0.0;
  size_t kv_pages_in_use_ = 0;
  size_t kv_pages_total_ = 0;
  std::vector<Histogram> time_to_first_token_;  // per class
  Histogram inter_token_latency_;
  Histogram batch_sequences_;
  Histogram batch_tokens_;
  Histogram step_seconds_;
};

}  // namespace synapse::serve
