// SPDX-License-Identifier: Apache-2.0
// Each payload is written and read by a pair of functions that list the fields in the same
// order; the layouts are those functions. Decoding is strict (bools 0 or 1, enums in range, known
// error codes, nothing left over), so a payload that decodes re-encodes to the same bytes.
#include "worker/codec.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "worker/frame.h"

namespace synapse::worker {
namespace {

static_assert(std::endian::native == std::endian::little, "payloads are little-endian");
static_assert(sizeof(size_t) == sizeof(uint64_t), "size_t fields travel as u64");
static_assert(std::is_same_v<serve::Clock::duration, std::chrono::nanoseconds>,
              "the deadline travels as the clock's own nanoseconds");

// Appends fields; floats as their bit patterns, so NaN payloads and -0 travel unchanged.
class PayloadWriter {
 public:
  void u8(uint8_t value) { put(value); }
  void u16(uint16_t value) { put(value); }
  void u32(uint32_t value) { put(value); }
  void u64(uint64_t value) { put(value); }
  void i32(int32_t value) { put(value); }
  void i64(int64_t value) { put(value); }
  void f32(float value) { put(std::bit_cast<uint32_t>(value)); }
  void f64(double value) { put(std::bit_cast<uint64_t>(value)); }
  void boolean(bool value) { u8(value ? 1 : 0); }
  // An optional's flag; the value follows when it is set.
  void has(bool present) { boolean(present); }
  template <typename E>
  void enumeration(E value) {
    put(static_cast<std::underlying_type_t<E>>(value));
  }
  // A string's length or a vector's element count.
  void count(size_t n) {
    // A frame holds at most kMaxPayloadBytes, so no string or vector that fits comes near this.
    SYN_CHECK(n <= UINT32_MAX, "worker payload: a count over 2^32");
    u32(static_cast<uint32_t>(n));
  }
  void str(std::string_view text) {
    count(text.size());
    out_.append(text);
  }
  // Integers and floats in one copy: the payload is little-endian like the machine.
  template <typename T>
  void array(std::span<const T> values) {
    static_assert(std::is_arithmetic_v<T>);
    count(values.size());
    out_.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  }

  std::string take() && { return std::move(out_); }

 private:
  template <typename T>
  void put(T value) {
    char bytes[sizeof value];
    std::memcpy(bytes, &value, sizeof value);
    out_.append(bytes, sizeof value);
  }

  std::string out_;
};

// Reads the fields a PayloadWriter appended, in the same order, checking that each lies inside
// the payload before touching it. The first failure sticks: later reads return zeros and empty
// values, so a decoder reads straight through and asks finish() once at the end. `what` names
// the payload ("request") and each read names its field, for the message.
class PayloadReader {
 public:
  PayloadReader(std::string_view payload, std::string_view what) : payload_(payload), what_(what) {}

  uint8_t u8(std::string_view name) { return get<uint8_t>(name); }
  uint16_t u16(std::string_view name) { return get<uint16_t>(name); }
  uint32_t u32(std::string_view name) { return get<uint32_t>(name); }
  uint64_t u64(std::string_view name) { return get<uint64_t>(name); }
  int32_t i32(std::string_view name) { return get<int32_t>(name); }
  int64_t i64(std::string_view name) { return get<int64_t>(name); }
  float f32(std::string_view name) { return std::bit_cast<float>(get<uint32_t>(name)); }
  double f64(std::string_view name) { return std::bit_cast<double>(get<uint64_t>(name)); }

  bool boolean(std::string_view name) {
    const uint8_t value = u8(name);
    if (value > 1) fail(std::string(name) + " " + std::to_string(value) + " is not a bool");
    return value == 1;
  }
  bool has(std::string_view name) {
    const uint8_t value = u8(name);
    if (value > 1) {
      fail(std::string(name) + " presence flag " + std::to_string(value) + " is not 0 or 1");
    }
    return value == 1;
  }
  // An enum as its underlying integer, which must lie in [0, last].
  template <typename E>
  E enumeration(std::string_view name, E last) {
    using Underlying = std::underlying_type_t<E>;
    const Underlying value = get<Underlying>(name);
    if (value > static_cast<Underlying>(last)) {
      fail(std::string(name) + " " + std::to_string(value) + " out of range [0, " +
           std::to_string(static_cast<Underlying>(last)) + "]");
      return E{};
    }
    return static_cast<E>(value);
  }
  // A vector's element count, refused (and 0) unless that many elements of at least
  // `min_element_bytes` each fit in what is left: no caller allocates from an unchecked count.
  uint32_t count(std::string_view name, size_t min_element_bytes) {
    return bounded_count(name, "count", min_element_bytes);
  }
  std::string str(std::string_view name) {
    const uint32_t length = bounded_count(name, "length", 1);
    std::string out(payload_.substr(pos_, length));
    pos_ += length;
    return out;
  }
  template <typename T>
  std::vector<T> array(std::string_view name) {
    static_assert(std::is_arithmetic_v<T>);
    const uint32_t n = count(name, sizeof(T));
    std::vector<T> out(n);
    if (n > 0) std::memcpy(out.data(), payload_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return out;
  }

  bool ok() const { return error_.ok(); }
  void fail(std::string message) {
    if (ok()) {
      error_ = Status(ErrorCode::kProtocolError,
                      "worker frame: " + std::string(what_) + " " + std::move(message));
    }
  }
  // The first failure, or protocol_error when bytes are left over, else OK.
  Status finish() {
    if (ok() && pos_ != payload_.size()) {
      error_ = Status(ErrorCode::kProtocolError,
                      "worker frame: " + std::to_string(payload_.size() - pos_) +
                          " bytes after the end of the " + std::string(what_));
    }
    return error_;
  }

 private:
  size_t remaining() const { return payload_.size() - pos_; }

  template <typename T>
  T get(std::string_view name) {
    if (!ok()) return T{};
    if (remaining() < sizeof(T)) {
      fail(std::string(name) + " (" + std::to_string(sizeof(T)) + " bytes at byte " +
           std::to_string(pos_) + ") past the payload's end");
      return T{};
    }
    T value;
    std::memcpy(&value, payload_.data() + pos_, sizeof value);
    pos_ += sizeof value;
    return value;
  }

  uint32_t bounded_count(std::string_view name, std::string_view noun, size_t min_element_bytes) {
    const uint32_t n = get<uint32_t>(name);
    if (!ok()) return 0;
    if (uint64_t{n} * min_element_bytes > remaining()) {
      fail(std::string(name) + " " + std::string(noun) + " " + std::to_string(n) +
           " past the payload's end (" + std::to_string(remaining()) + " bytes left)");
      return 0;
    }
    return n;
  }

  std::string_view payload_;
  std::string_view what_;
  size_t pos_ = 0;
  Status error_;
};

// Fixed parts of the elements whose counts are checked (the bytes they take at the least).
constexpr size_t kLogitBiasBytes = 4 + 4;
constexpr size_t kTokenLogprobBytes = 4 + 4;
constexpr size_t kGeneratedTokenMinBytes = 4 + 1;  // token, logprobs flag
constexpr size_t kStringMinBytes = 4;              // its length

// ---- Status: u16 code; for an error, message, path, byte_offset (optional u64), key, tensor,
// field. Code 0 (OK) has nothing after it.

void write_status(PayloadWriter& out, const Status& status) {
  out.enumeration(status.code());
  if (status.ok()) return;
  out.str(status.message());
  const ErrorWhere& where = status.where();
  out.str(where.path);
  out.has(where.byte_offset.has_value());
  if (where.byte_offset) out.u64(*where.byte_offset);
  out.str(where.key);
  out.str(where.tensor);
  out.str(where.field);
}

bool is_known_code(uint16_t code) {
  return std::ranges::any_of(error_code_table(), [code](const ErrorCodeInfo& info) {
    return static_cast<uint16_t>(info.code) == code;
  });
}

Status read_status(PayloadReader& in) {
  const uint16_t code = in.u16("error code");
  if (code == 0 || !in.ok()) return ok_status();
  if (!is_known_code(code)) {
    in.fail("error code " + std::to_string(code) + " is not a known error code");
    return ok_status();
  }
  std::string message = in.str("error message");
  ErrorWhere where;
  where.path = in.str("error path");
  if (in.has("error byte_offset")) where.byte_offset = in.u64("error byte_offset");
  where.key = in.str("error key");
  where.tensor = in.str("error tensor");
  where.field = in.str("error field");
  return Status(static_cast<ErrorCode>(code), std::move(message), std::move(where));
}

// ---- SamplingParams: temperature f32, top_k i32, top_p, min_p, repeat_penalty,
// frequency_penalty, presence_penalty f32, penalty_last_n i32, logit_bias (count, then token i32
// and bias f32 each), seed u64.

void write_sampling(PayloadWriter& out, const SamplingParams& s) {
  out.f32(s.temperature);
  out.i32(s.top_k);
  out.f32(s.top_p);
  out.f32(s.min_p);
  out.f32(s.repeat_penalty);
  out.f32(s.frequency_penalty);
  out.f32(s.presence_penalty);
  out.i32(s.penalty_last_n);
  out.count(s.logit_bias.size());
  for (const LogitBias& bias : s.logit_bias) {
    out.i32(bias.token);
    out.f32(bias.bias);
  }
  out.u64(s.seed);
}

SamplingParams read_sampling(PayloadReader& in) {
  SamplingParams s;
  s.temperature = in.f32("sampling.temperature");
  s.top_k = in.i32("sampling.top_k");
  s.top_p = in.f32("sampling.top_p");
  s.min_p = in.f32("sampling.min_p");
  s.repeat_penalty = in.f32("sampling.repeat_penalty");
  s.frequency_penalty = in.f32("sampling.frequency_penalty");
  s.presence_penalty = in.f32("sampling.presence_penalty");
  s.penalty_last_n = in.i32("sampling.penalty_last_n");
  s.logit_bias.resize(in.count("sampling.logit_bias", kLogitBiasBytes));
  for (LogitBias& bias : s.logit_bias) {
    bias.token = in.i32("sampling.logit_bias token");
    bias.bias = in.f32("sampling.logit_bias bias");
  }
  s.seed = in.u64("sampling.seed");
  return s;
}

// ---- Logprobs: chosen (token i32, logprob f32), then the top list (count <= kMaxTopLogprobs,
// token and logprob each). Only the listed entries travel.

void write_logprobs(PayloadWriter& out, const Logprobs& logprobs) {
  out.i32(logprobs.chosen.token);
  out.f32(logprobs.chosen.logprob);
  out.count(logprobs.top().size());
  for (const TokenLogprob& entry : logprobs.top()) {
    out.i32(entry.token);
    out.f32(entry.logprob);
  }
}

Logprobs read_logprobs(PayloadReader& in) {
  Logprobs logprobs;
  logprobs.chosen.token = in.i32("logprobs chosen token");
  logprobs.chosen.logprob = in.f32("logprobs chosen logprob");
  const uint32_t n_top = in.count("logprobs top", kTokenLogprobBytes);
  if (n_top > static_cast<uint32_t>(kMaxTopLogprobs)) {
    in.fail("logprobs top count " + std::to_string(n_top) + " over " +
            std::to_string(kMaxTopLogprobs));
    return logprobs;
  }
  logprobs.n_top = static_cast<int32_t>(n_top);
  for (uint32_t i = 0; i < n_top; ++i) {
    logprobs.top_storage[i].token = in.i32("logprobs top token");
    logprobs.top_storage[i].logprob = in.f32("logprobs top logprob");
  }
  return logprobs;
}

}  // namespace

// ---- Hello: protocol u32 (first, so another version is named rather than misread), pid i32,
// build, kernel_level, model_path, model_digest strings, limits (n_vocab, n_ctx, n_token_types
// u32, bidirectional, can_rerank bool), n_embd u32, kv_capacity_bytes u64.

std::string encode_hello(const Hello& hello) {
  PayloadWriter out;
  out.u32(hello.protocol);
  out.i32(hello.pid);
  out.str(hello.build);
  out.str(hello.kernel_level);
  out.str(hello.model_path);
  out.str(hello.model_digest);
  out.u32(hello.limits.n_vocab);
  out.u32(hello.limits.n_ctx);
  out.u32(hello.limits.n_token_types);
  out.boolean(hello.limits.bidirectional);
  out.boolean(hello.limits.can_rerank);
  out.u32(hello.n_embd);
  out.u64(hello.kv_capacity_bytes);
  return std::move(out).take();
}

Result<Hello> decode_hello(std::string_view payload) {
  PayloadReader in(payload, "hello");
  Hello hello;
  hello.protocol = in.u32("protocol");
  if (in.ok() && hello.protocol != kProtocolVersion) {
    return Status(ErrorCode::kProtocolError, "worker frame: the worker speaks protocol " +
                                                 std::to_string(hello.protocol) + ", this build " +
                                                 std::to_string(kProtocolVersion));
  }
  hello.pid = in.i32("pid");
  hello.build = in.str("build");
  hello.kernel_level = in.str("kernel_level");
  hello.model_path = in.str("model_path");
  hello.model_digest = in.str("model_digest");
  hello.limits.n_vocab = in.u32("limits.n_vocab");
  hello.limits.n_ctx = in.u32("limits.n_ctx");
  hello.limits.n_token_types = in.u32("limits.n_token_types");
  hello.limits.bidirectional = in.boolean("limits.bidirectional");
  hello.limits.can_rerank = in.boolean("limits.can_rerank");
  hello.n_embd = in.u32("n_embd");
  hello.kv_capacity_bytes = in.u64("kv_capacity_bytes");
  SYN_RETURN_IF_ERROR(in.finish());
  return hello;
}

// ---- Heartbeat: its seven counters, u64 each, in declaration order.

std::string encode_heartbeat(const Heartbeat& heartbeat) {
  PayloadWriter out;
  out.u64(heartbeat.steps);
  out.u64(heartbeat.kv_pages_in_use);
  out.u64(heartbeat.kv_pages_total);
  out.u64(heartbeat.active);
  out.u64(heartbeat.waiting);
  out.u64(heartbeat.cached_sequences);
  out.u64(heartbeat.prefix_hits);
  return std::move(out).take();
}

Result<Heartbeat> decode_heartbeat(std::string_view payload) {
  PayloadReader in(payload, "heartbeat");
  Heartbeat heartbeat;
  heartbeat.steps = in.u64("steps");
  heartbeat.kv_pages_in_use = in.u64("kv_pages_in_use");
  heartbeat.kv_pages_total = in.u64("kv_pages_total");
  heartbeat.active = in.u64("active");
  heartbeat.waiting = in.u64("waiting");
  heartbeat.cached_sequences = in.u64("cached_sequences");
  heartbeat.prefix_hits = in.u64("prefix_hits");
  SYN_RETURN_IF_ERROR(in.finish());
  return heartbeat;
}

// ---- GenerationRequest: id string, prompt i32s, max_tokens i32, sampling, stop strings,
// eog_tokens i32s, logprobs bool, top_logprobs i32, request_class u8, deadline (optional i64
// nanoseconds of steady_clock), embedding (optional: pooling u32, normalize bool, token_types
// i32s), constraint_recipe string, speculative bool.

std::string encode_request(const serve::GenerationRequest& request) {
  PayloadWriter out;
  out.str(request.id);
  out.array<int32_t>(request.prompt);
  out.i32(request.max_tokens);
  write_sampling(out, request.sampling);
  out.count(request.stop.size());
  for (const std::string& stop : request.stop) out.str(stop);
  out.array<int32_t>(request.eog_tokens);
  out.boolean(request.logprobs);
  out.i32(request.top_logprobs);
  out.enumeration(request.request_class);
  out.has(request.deadline.has_value());
  if (request.deadline) out.i64(request.deadline->time_since_epoch().count());
  out.has(request.embedding.has_value());
  if (request.embedding) {
    out.enumeration(request.embedding->pooling);
    out.boolean(request.embedding->normalize);
    out.array<int32_t>(request.embedding->token_types);
  }
  out.str(request.constraint_recipe);
  out.boolean(request.speculative);
  return std::move(out).take();
}

Result<serve::GenerationRequest> decode_request(std::string_view payload) {
  PayloadReader in(payload, "request");
  serve::GenerationRequest request;
  request.id = in.str("id");
  request.prompt = in.array<int32_t>("prompt");
  request.max_tokens = in.i32("max_tokens");
  request.sampling = read_sampling(in);
  request.stop.resize(in.count("stop", kStringMinBytes));
  for (std::string& stop : request.stop) stop = in.str("stop string");
  request.eog_tokens = in.array<int32_t>("eog_tokens");
  request.logprobs = in.boolean("logprobs");
  request.top_logprobs = in.i32("top_logprobs");
  request.request_class = in.enumeration("request_class", serve::RequestClass::kBackground);
  if (in.has("deadline")) {
    request.deadline = serve::Clock::time_point(serve::Clock::duration(in.i64("deadline")));
  }
  if (in.has("embedding")) {
    serve::EmbeddingSpec embedding;
    embedding.pooling = in.enumeration("embedding.pooling", PoolingType::kRank);
    embedding.normalize = in.boolean("embedding.normalize");
    embedding.token_types = in.array<int32_t>("embedding.token_types");
    request.embedding = std::move(embedding);
  }
  request.constraint_recipe = in.str("constraint_recipe");
  request.speculative = in.boolean("speculative");
  SYN_RETURN_IF_ERROR(in.finish());
  return request;
}

// ---- GenerationEvent: text string, tokens (count, then token i32 and optional logprobs each),
// step u64, final bool, finish_reason u8, error (the status layout), matched_stop (optional u64),
// usage (three u64), timings (four f64, two u64), embedding f32s.

std::string encode_event(const serve::GenerationEvent& event) {
  PayloadWriter out;
  out.str(event.text);
  out.count(event.tokens.size());
  for (const serve::GeneratedToken& token : event.tokens) {
    out.i32(token.token);
    out.has(token.logprobs.has_value());
    if (token.logprobs) write_logprobs(out, *token.logprobs);
  }
  out.u64(event.step);
  out.boolean(event.final);
  out.enumeration(event.finish_reason);
  write_status(out, event.error);
  out.has(event.matched_stop.has_value());
  if (event.matched_stop) out.u64(*event.matched_stop);
  out.u64(event.usage.prompt_tokens);
  out.u64(event.usage.cached_prompt_tokens);
  out.u64(event.usage.completion_tokens);
  out.f64(event.timings.queued_ms);
  out.f64(event.timings.time_to_first_token_ms);
  out.f64(event.timings.total_ms);
  out.f64(event.timings.decode_tokens_per_s);
  out.u64(event.timings.draft_tokens);
  out.u64(event.timings.draft_tokens_accepted);
  out.array<float>(event.embedding);
  return std::move(out).take();
}

Result<serve::GenerationEvent> decode_event(std::string_view payload) {
  PayloadReader in(payload, "event");
  serve::GenerationEvent event;
  event.text = in.str("text");
  event.tokens.resize(in.count("tokens", kGeneratedTokenMinBytes));
  for (serve::GeneratedToken& token : event.tokens) {
    token.token = in.i32("token");
    if (in.has("token logprobs")) token.logprobs = read_logprobs(in);
  }
  event.step = in.u64("step");
  event.final = in.boolean("final");
  event.finish_reason = in.enumeration("finish_reason", serve::FinishReason::kError);
  event.error = read_status(in);
  if (in.has("matched_stop")) event.matched_stop = in.u64("matched_stop");
  event.usage.prompt_tokens = in.u64("usage.prompt_tokens");
  event.usage.cached_prompt_tokens = in.u64("usage.cached_prompt_tokens");
  event.usage.completion_tokens = in.u64("usage.completion_tokens");
  event.timings.queued_ms = in.f64("timings.queued_ms");
  event.timings.time_to_first_token_ms = in.f64("timings.time_to_first_token_ms");
  event.timings.total_ms = in.f64("timings.total_ms");
  event.timings.decode_tokens_per_s = in.f64("timings.decode_tokens_per_s");
  event.timings.draft_tokens = in.u64("timings.draft_tokens");
  event.timings.draft_tokens_accepted = in.u64("timings.draft_tokens_accepted");
  event.embedding = in.array<float>("embedding");
  SYN_RETURN_IF_ERROR(in.finish());
  return event;
}

// ---- Status: empty for OK, else the status layout above (a code of 0 is refused: OK is empty).

std::string encode_status(const Status& status) {
  if (status.ok()) return {};
  PayloadWriter out;
  write_status(out, status);
  return std::move(out).take();
}

Status decode_status(std::string_view payload, Status& out) {
  if (payload.empty()) {
    out = ok_status();
    return ok_status();
  }
  PayloadReader in(payload, "status");
  Status status = read_status(in);
  if (in.ok() && status.ok()) in.fail("error code 0 (OK is an empty payload)");
  SYN_RETURN_IF_ERROR(in.finish());
  out = std::move(status);
  return ok_status();
}

// ---- u64: eight bytes.

std::string encode_u64(uint64_t value) {
  PayloadWriter out;
  out.u64(value);
  return std::move(out).take();
}

Result<uint64_t> decode_u64(std::string_view payload) {
  PayloadReader in(payload, "u64");
  const uint64_t value = in.u64("value");
  SYN_RETURN_IF_ERROR(in.finish());
  return value;
}

}  // namespace synapse::worker
