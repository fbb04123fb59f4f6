// SPDX-License-Identifier: Apache-2.0
#include "serve/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace synapse::serve {
namespace {

const std::vector<double> kLatencyBounds = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,
                                            1.0,   2.5,  5.0,   10.0, 30.0, 60.0};
const std::vector<double> kTokenLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.05,
                                                 0.1,   0.2,    0.5,   1.0,  2.5};
const std::vector<double> kBatchSequenceBounds = {1, 2, 4, 8, 16, 32, 64};
const std::vector<double> kBatchTokenBounds = {1, 4, 16, 64, 128, 256, 512, 1024, 2048};

// Prometheus floats: shortest round-trip text, "+Inf"/"-Inf"/"NaN" for the specials.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, double value) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.append(" ").append(number(value)).append("\n");
}

void histogram(std::string& out, std::string_view name, std::string_view labels,
               const Histogram& h) {
  const std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
  uint64_t cumulative = 0;
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < h.upper_bounds().size(); ++i) {
    cumulative += h.counts()[i];
    sample(out, bucket, prefix + "le=\"" + number(h.upper_bounds()[i]) + "\"",
           static_cast<double>(cumulative));
  }
  sample(out, bucket, prefix + "le=\"+Inf\"", static_cast<double>(h.count()));
  sample(out, std::string(name) + "_sum", labels, h.sum());
  sample(out, std::string(name) + "_count", labels, static_cast<double>(h.count()));
}

std::string class_label(RequestClass c) {
  return "class=\"" + std::string(request_class_name(c)) + "\"";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                       bounds_.begin());
  ++counts_[i];
  ++count_;
  sum_ += value;
}

ServiceMetrics::ServiceMetrics()
    : inter_token_latency_(kTokenLatencyBounds),
      batch_sequences_(kBatchSequenceBounds),
      batch_tokens_(kBatchTokenBounds),
      step_seconds_(kTokenLatencyBounds) {
  for (size_t c = 0; c < kRequestClassCount; ++c) time_to_first_token_.emplace_back(kLatencyBounds);
}

void ServiceMetrics::count_request(RequestClass c, std::string_view status) {
  std::lock_guard lock(mu_);
  ++requests_[{c, std::string(status)}];
}

void ServiceMetrics::set_queue_depth(RequestClass c, size_t depth) {
  std::lock_guard lock(mu_);
  queue_depth_[static_cast<size_t>(c)] = depth;
}

void ServiceMetrics::set_active_sequences(size_t n) {
  std::lock_guard lock(mu_);
  active_sequences_ = n;
}

void ServiceMetrics::set_running_sequences(RequestClass c, size_t n) {
  std::lock_guard lock(mu_);
  running_sequences_[static_cast<size_t>(c)] = n;
}

void ServiceMetrics::add_prompt_tokens(size_t prompt_tokens, size_t cached_tokens) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += prompt_tokens;
  cached_prompt_tokens_ += cached_tokens;
}

void ServiceMetrics::add_generated_tokens(size_t n) {
  std::lock_guard lock(mu_);
  generated_tokens_ += n;
}

void ServiceMetrics::observe_time_to_first_token(RequestClass c, double seconds) {
  std::lock_guard lock(mu_);
  time_to_first_token_[static_cast<size_t>(c)].observe(seconds);
}

void ServiceMetrics::observe_inter_token_latency(double seconds) {
  std::lock_guard lock(mu_);
  inter_token_latency_.observe(seconds);
}

void ServiceMetrics::observe_step(size_t sequences, size_t tokens, double seconds) {
  std::lock_guard lock(mu_);
  ++steps_;
  batch_sequences_.observe(static_cast<double>(sequences));
  batch_tokens_.observe(static_cast<double>(tokens));
  step_seconds_.observe(seconds);
}

void ServiceMetrics::set_kv_pages(size_t in_use, size_t total) {
  std::lock_guard lock(mu_);
  kv_pages_in_use_ = in_use;
  kv_pages_total_ = total;
}

void ServiceMetrics::count_prefix_lookup(bool hit) {
  std::lock_guard lock(mu_);
  ++(hit ? prefix_hits_ : prefix_misses_);
}

void ServiceMetrics::count_preemption() {
  std::lock_guard lock(mu_);
  ++preemptions_;
}

void ServiceMetrics::add_draft_tokens(size_t verified, size_t accepted) {
  std::lock_guard lock(mu_);
  draft_tokens_ += verified;
  draft_tokens_accepted_ += accepted;
}

void ServiceMetrics::add_compute_wait(double seconds) {
  std::lock_guard lock(mu_);
  compute_wait_s_ += seconds;
}

std::string ServiceMetrics::render_prometheus() const {
  std::lock_guard lock(mu_);
  std::string out;
  header(out, "synapse_requests_total", "counter",
         "Requests finished or refused, by class and final status.");
  for (const auto& [key, n] : requests_) {
    sample(out, "synapse_requests_total", class_label(key.first) + ",status=\"" + key.second + "\"",
           static_cast<double>(n));
  }
  header(out, "synapse_queue_depth", "gauge", "Requests waiting for a slot, by class.");
  for (size_t c = 0; c < kRequestClassCount; ++c) {
    sample(out, "synapse_queue_depth", class_label(static_cast<RequestClass>(c)),
           static_cast<double>(queue_depth_[c]));
  }
  header(out, "synapse_active_sequences", "gauge", "Requests holding a decode slot.");
  sample(out, "synapse_active_sequences", "", static_cast<double>(active_sequences_));
  header(out, "synapse_running_sequences", "gauge", "Requests holding a decode slot, by class.");
  for (size_t c = 0; c < kRequestClassCount; ++c) {
    sample(out, "synapse_running_sequences", class_label(static_cast<RequestClass>(c)),
           static_cast<double>(running_sequences_[c]));
  }
  header(out, "synapse_prompt_tokens_total", "counter", "Prompt tokens of started requests.");
  sample(out, "synapse_prompt_tokens_total", "", static_cast<double>(prompt_tokens_));
  header(out, "synapse_prompt_tokens_cached_total", "counter",
         "Prompt tokens whose KV came from the prefix cache instead of a prefill.");
  sample(out, "synapse_prompt_tokens_cached_total", "", static_cast<double>(cached_prompt_tokens_));
  header(out, "synapse_generated_tokens_total", "counter", "Tokens sampled.");
  sample(out, "synapse_generated_tokens_total", "", static_cast<double>(generated_tokens_));
  header(out, "synapse_prefix_cache_lookups_total", "counter",
         "Prefix-cache lookups of starting requests, by result.");
  sample(out, "synapse_prefix_cache_lookups_total", "result=\"hit\"",
         static_cast<double>(prefix_hits_));
  sample(out, "synapse_prefix_cache_lookups_total", "result=\"miss\"",
         static_cast<double>(prefix_misses_));
  header(out, "synapse_preemptions_total", "counter",
         "Requests that yielded their slot to a higher class after a quantum.");
  sample(out, "synapse_preemptions_total", "", static_cast<double>(preemptions_));
  header(out, "synapse_speculative_draft_tokens_total", "counter",
         "Drafted tokens verified by speculative decoding (accepted or rejected).");
  sample(out, "synapse_speculative_draft_tokens_total", "", static_cast<double>(draft_tokens_));
  header(out, "synapse_speculative_draft_tokens_accepted_total", "counter",
         "Drafted tokens taken; over the verified ones: the acceptance rate.");
  sample(out, "synapse_speculative_draft_tokens_accepted_total", "",
         static_cast<double>(draft_tokens_accepted_));
  header(out, "synapse_compute_wait_seconds_total", "counter",
         "Time engine steps waited for the cores while other models' steps ran.");
  sample(out, "synapse_compute_wait_seconds_total", "", compute_wait_s_);
  header(out, "synapse_kv_pages_in_use", "gauge", "KV cache pages held by sequences.");
  sample(out, "synapse_kv_pages_in_use", "", static_cast<double>(kv_pages_in_use_));
  header(out, "synapse_kv_pages_total", "gauge", "KV cache pages the pool may hold.");
  sample(out, "synapse_kv_pages_total", "", static_cast<double>(kv_pages_total_));
  header(out, "synapse_engine_steps_total", "counter", "Engine steps run.");
  sample(out, "synapse_engine_steps_total", "", static_cast<double>(steps_));
  header(out, "synapse_time_to_first_token_seconds", "histogram",
         "From submission to the first sampled token, by class.");
  for (size_t c = 0; c < kRequestClassCount; ++c) {
    histogram(out, "synapse_time_to_first_token_seconds", class_label(static_cast<RequestClass>(c)),
              time_to_first_token_[c]);
  }
  header(out, "synapse_inter_token_latency_seconds", "histogram",
         "Time between consecutive tokens of one request.");
  histogram(out, "synapse_inter_token_latency_seconds", "", inter_token_latency_);
  header(out, "synapse_batch_sequences", "histogram", "Sequences per engine step.");
  histogram(out, "synapse_batch_sequences", "", batch_sequences_);
  header(out, "synapse_batch_tokens", "histogram", "Tokens (rows) per engine step.");
  histogram(out, "synapse_batch_tokens", "", batch_tokens_);
  header(out, "synapse_step_seconds", "histogram", "Duration of one engine step.");
  histogram(out, "synapse_step_seconds", "", step_seconds_);
  return out;
}

}  // namespace synapse::serve
