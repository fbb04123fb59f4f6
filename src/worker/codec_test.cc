// SPDX-License-Identifier: Apache-2.0
// The payload codecs: fully populated values round-trip, and whatever a broken or killed worker
// might write (every truncation, trailing bytes, out-of-range enums and flags, unknown error
// codes, huge counts) is a protocol_error, never a crash or a large allocation. The largest
// allocation is watched through the test binary's replaced allocation functions
// (tests/support/allocation_counter.h).
#include "worker/codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "tests/support/allocation_counter.h"
#include "worker/frame.h"

namespace synapse::worker {
namespace {

using serve::FinishReason;
using serve::GeneratedToken;
using serve::GenerationEvent;
using serve::GenerationRequest;

constexpr float kInf = std::numeric_limits<float>::infinity();

Hello full_hello() {
  return Hello{.protocol = kProtocolVersion,
               .pid = 4242,
               .build = "synapse 0.9.1 (abc1234)",
               .kernel_level = "avx512+vnni",
               .model_path = "/models/qwen2.5-0.5b-q4_k_m.gguf",
               .model_digest = std::string(64, 'e'),
               .limits = {.n_vocab = 151936,
                          .n_ctx = 32768,
                          .n_token_types = 2,
                          .bidirectional = true,
                          .can_rerank = true},
               .n_embd = 896,
               .kv_capacity_bytes = 3ull << 32};
}

GenerationRequest full_request() {
  GenerationRequest r;
  r.id = "cmpl-7f3a";
  r.prompt = {1, 15043, 29892, -7, 2147483647};
  r.max_tokens = 256;
  r.sampling.temperature = 0.25f;
  r.sampling.top_k = 7;
  r.sampling.top_p = 0.5f;
  r.sampling.min_p = 0.125f;
  r.sampling.repeat_penalty = 1.5f;
  r.sampling.frequency_penalty = -0.75f;
  r.sampling.presence_penalty = 0.375f;
  r.sampling.penalty_last_n = -1;
  r.sampling.logit_bias = {{.token = 13, .bias = -kInf}, {.token = 99, .bias = 2.5f}};
  r.sampling.seed = 1234567890123ull;
  r.stop = {"\n\n", "</s>", ""};
  r.eog_tokens = {2, 151645};
  r.logprobs = true;
  r.top_logprobs = 5;
  r.request_class = serve::RequestClass::kBackground;
  r.deadline = serve::Clock::time_point(std::chrono::nanoseconds(987654321012345));
  r.embedding = serve::EmbeddingSpec{
      .pooling = PoolingType::kRank, .normalize = false, .token_types = {0, 0, 1, 1, 1}};
  r.constraint_recipe = R"({"kind":"json_schema","schema":{"type":"object"}})";
  r.speculative = false;
  return r;
}

Logprobs logprobs_with_top(int32_t n_top) {
  Logprobs lp;
  lp.chosen = {.token = 42, .logprob = -0.5f};
  lp.n_top = n_top;
  for (int32_t i = 0; i < n_top; ++i) {
    lp.top_storage[static_cast<size_t>(i)] = {.token = 100 + i,
                                              .logprob = i == 0 ? -kInf : -1.0f - float(i)};
  }
  return lp;
}

Status full_error() {
  ErrorWhere where;
  where.path = "/models/m.gguf";
  where.byte_offset = 812;
  where.key = "general.name";
  where.tensor = "blk.0.attn_q.weight";
  where.field = "top_logprobs";
  return Status(ErrorCode::kNumericFault, "logits hold NaN", std::move(where));
}

// A final event with every field set (tokens with and without logprobs, an error).
GenerationEvent full_event() {
  GenerationEvent e;
  e.text = "Hello, wörld ✓";
  e.tokens = {GeneratedToken{.token = 9906, .logprobs = logprobs_with_top(3)},
              GeneratedToken{.token = 11, .logprobs = std::nullopt},
              GeneratedToken{.token = 7, .logprobs = logprobs_with_top(kMaxTopLogprobs)},
              GeneratedToken{.token = 8, .logprobs = logprobs_with_top(0)}};
  e.step = 1ull << 40;
  e.final = true;
  e.finish_reason = FinishReason::kError;
  e.error = full_error();
  e.matched_stop = 2;
  e.usage = {.prompt_tokens = 120, .cached_prompt_tokens = 64, .completion_tokens = 33};
  e.timings = {.queued_ms = 1.25,
               .time_to_first_token_ms = 40.5,
               .total_ms = 812.0625,
               .decode_tokens_per_s = 97.3,
               .draft_tokens = 18,
               .draft_tokens_accepted = 11};
  e.embedding = {0.5f,
                 -0.0f,
                 -kInf,
                 kInf,
                 std::numeric_limits<float>::quiet_NaN(),
                 std::bit_cast<float>(0x7fa00001u),  // a signalling NaN with a payload
                 std::bit_cast<float>(0xffc12345u),
                 std::numeric_limits<float>::denorm_min()};
  return e;
}

void expect_same_status(const Status& a, const Status& b) {
  EXPECT_EQ(a.code(), b.code());
  EXPECT_EQ(a.message(), b.message());
  EXPECT_EQ(a.where().path, b.where().path);
  EXPECT_EQ(a.where().byte_offset, b.where().byte_offset);
  EXPECT_EQ(a.where().key, b.where().key);
  EXPECT_EQ(a.where().tensor, b.where().tensor);
  EXPECT_EQ(a.where().field, b.where().field);
}

void expect_same_request(const GenerationRequest& a, const GenerationRequest& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.prompt, b.prompt);
  EXPECT_EQ(a.max_tokens, b.max_tokens);
  EXPECT_EQ(a.sampling, b.sampling);
  EXPECT_EQ(a.stop, b.stop);
  EXPECT_EQ(a.eog_tokens, b.eog_tokens);
  EXPECT_EQ(a.logprobs, b.logprobs);
  EXPECT_EQ(a.top_logprobs, b.top_logprobs);
  EXPECT_EQ(a.request_class, b.request_class);
  EXPECT_EQ(a.deadline, b.deadline);
  EXPECT_EQ(a.embedding, b.embedding);
  EXPECT_EQ(a.constraint, nullptr);
  EXPECT_EQ(b.constraint, nullptr);
  EXPECT_EQ(a.constraint_recipe, b.constraint_recipe);
  EXPECT_EQ(a.speculative, b.speculative);
}

std::vector<uint32_t> float_bits(const std::vector<float>& values) {
  std::vector<uint32_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<uint32_t>(values[i]);
  return bits;
}

void expect_same_event(const GenerationEvent& a, const GenerationEvent& b) {
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.final, b.final);
  EXPECT_EQ(a.finish_reason, b.finish_reason);
  expect_same_status(a.error, b.error);
  EXPECT_EQ(a.matched_stop, b.matched_stop);
  EXPECT_EQ(a.usage, b.usage);
  EXPECT_EQ(a.timings, b.timings);
  EXPECT_EQ(float_bits(a.embedding), float_bits(b.embedding));  // NaN != NaN as floats
}

// The index of the one byte in which two payloads of the same layout differ: where a field sits,
// found without spelling out the layout.
size_t differing_byte(const std::string& a, const std::string& b) {
  EXPECT_EQ(a.size(), b.size());
  size_t found = a.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    EXPECT_EQ(found, a.size()) << "more than one byte differs";
    found = i;
  }
  EXPECT_LT(found, a.size());
  return found;
}

Status decode_any(std::string_view kind, std::string_view payload) {
  if (kind == "hello") return decode_hello(payload).status();
  if (kind == "heartbeat") return decode_heartbeat(payload).status();
  if (kind == "request") return decode_request(payload).status();
  if (kind == "event") return decode_event(payload).status();
  if (kind == "u64") return decode_u64(payload).status();
  Status out;
  return decode_status(payload, out);
}

TEST(WorkerCodec, HelloRoundTrips) {
  const Hello hello = full_hello();
  const Result<Hello> back = decode_hello(encode_hello(hello));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, hello);
}

TEST(WorkerCodec, HelloOfAnotherProtocolIsRefusedNamingBoth) {
  Hello hello = full_hello();
  hello.protocol = kProtocolVersion + 1;
  const Result<Hello> back = decode_hello(encode_hello(hello));
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(back.status().message().find("protocol " + std::to_string(kProtocolVersion + 1)),
            std::string::npos)
      << back.status().message();
}

TEST(WorkerCodec, HeartbeatRoundTrips) {
  const Heartbeat beat{.steps = 1,
                       .kv_pages_in_use = 2,
                       .kv_pages_total = 3,
                       .active = 4,
                       .waiting = 5,
                       .cached_sequences = 6,
                       .prefix_hits = UINT64_MAX};
  const Result<Heartbeat> back = decode_heartbeat(encode_heartbeat(beat));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, beat);
}

TEST(WorkerCodec, FullRequestRoundTripsWithoutItsCompiledConstraint) {
  const GenerationRequest request = full_request();
  const Result<GenerationRequest> back = decode_request(encode_request(request));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same_request(*back, request);
}

TEST(WorkerCodec, DefaultRequestRoundTrips) {
  const GenerationRequest request;
  const Result<GenerationRequest> back = decode_request(encode_request(request));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same_request(*back, request);
  EXPECT_FALSE(back->deadline.has_value());
  EXPECT_FALSE(back->embedding.has_value());
}

TEST(WorkerCodec, FullEventRoundTripsWithFloatBitPatterns) {
  const GenerationEvent event = full_event();
  const Result<GenerationEvent> back = decode_event(encode_event(event));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same_event(*back, event);
  // Only the listed top entries travel; the rest of the fixed array reads back as zeros.
  EXPECT_EQ(back->tokens[0].logprobs->top_storage[3], TokenLogprob{});
}

TEST(WorkerCodec, StepEventRoundTrips) {
  GenerationEvent event;
  event.text = "par";
  event.tokens = {GeneratedToken{.token = 1}};
  event.step = 3;
  const Result<GenerationEvent> back = decode_event(encode_event(event));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same_event(*back, event);
  EXPECT_TRUE(back->error.ok());
}

TEST(WorkerCodec, StatusRoundTrips) {
  EXPECT_EQ(encode_status(ok_status()), "");
  Status back(ErrorCode::kInternal, "stale");
  ASSERT_TRUE(decode_status("", back).ok());
  EXPECT_TRUE(back.ok());

  const Status error = full_error();
  ASSERT_TRUE(decode_status(encode_status(error), back).ok());
  expect_same_status(back, error);

  const Status bare(ErrorCode::kQueueFull, "interactive queue full");
  ASSERT_TRUE(decode_status(encode_status(bare), back).ok());
  expect_same_status(back, bare);
  EXPECT_FALSE(back.where().byte_offset.has_value());
}

TEST(WorkerCodec, EveryCodeOfTheTableRoundTrips) {
  for (const ErrorCodeInfo& info : error_code_table()) {
    if (info.code == ErrorCode::kOk) continue;
    const Status error(info.code, std::string(info.name));
    Status back;
    ASSERT_TRUE(decode_status(encode_status(error), back).ok()) << info.name;
    EXPECT_EQ(back.code(), info.code);
  }
}

TEST(WorkerCodec, U64RoundTrips) {
  for (const uint64_t value : {uint64_t{0}, uint64_t{30000}, UINT64_MAX}) {
    const Result<uint64_t> back = decode_u64(encode_u64(value));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, value);
  }
}

TEST(WorkerCodec, EveryTruncationIsAProtocolError) {
  const std::pair<std::string_view, std::string> payloads[] = {
      {"hello", encode_hello(full_hello())},
      {"heartbeat", encode_heartbeat(Heartbeat{.steps = 9})},
      {"request", encode_request(full_request())},
      {"event", encode_event(full_event())},
      {"status", encode_status(full_error())},
      {"u64", encode_u64(7)},
  };
  for (const auto& [kind, payload] : payloads) {
    ASSERT_TRUE(decode_any(kind, payload).ok()) << kind;
    // An empty status payload is OK by definition; every other prefix is short.
    for (size_t length = kind == "status" ? 1 : 0; length < payload.size(); ++length) {
      const Status status = decode_any(kind, std::string_view(payload).substr(0, length));
      EXPECT_EQ(status.code(), ErrorCode::kProtocolError)
          << kind << " cut to " << length << " of " << payload.size() << " bytes";
    }
  }
}

TEST(WorkerCodec, TrailingBytesAreRefused) {
  for (const auto& [kind, payload] :
       {std::pair<std::string_view, std::string>{"hello", encode_hello(full_hello())},
        {"request", encode_request(full_request())},
        {"event", encode_event(full_event())},
        {"status", encode_status(full_error())},
        {"u64", encode_u64(7)}}) {
    const Status status = decode_any(kind, payload + '\0');
    EXPECT_EQ(status.code(), ErrorCode::kProtocolError) << kind;
    EXPECT_NE(status.message().find("1 bytes after the end"), std::string::npos)
        << status.message();
  }
}

TEST(WorkerCodec, EnumsOutOfRangeAreRefused) {
  GenerationRequest a = full_request();
  GenerationRequest b = full_request();
  a.request_class = serve::RequestClass::kInteractive;
  b.request_class = serve::RequestClass::kBatch;
  std::string bad = encode_request(a);
  bad[differing_byte(bad, encode_request(b))] = 3;
  Result<GenerationRequest> request = decode_request(bad);
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(request.status().message().find("request_class 3 out of range"), std::string::npos)
      << request.status().message();

  a = full_request();
  b = full_request();
  a.embedding->pooling = PoolingType::kNone;
  b.embedding->pooling = PoolingType::kMean;
  bad = encode_request(a);
  bad[differing_byte(bad, encode_request(b))] = 5;
  request = decode_request(bad);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("embedding.pooling 5"), std::string::npos)
      << request.status().message();

  GenerationEvent e1 = full_event();
  GenerationEvent e2 = full_event();
  e1.finish_reason = FinishReason::kStop;
  e2.finish_reason = FinishReason::kLength;
  std::string bad_event = encode_event(e1);
  bad_event[differing_byte(bad_event, encode_event(e2))] = 4;
  const Result<GenerationEvent> event = decode_event(bad_event);
  ASSERT_FALSE(event.ok());
  EXPECT_NE(event.status().message().find("finish_reason 4"), std::string::npos)
      << event.status().message();
}

TEST(WorkerCodec, BoolsAndPresenceFlagsOtherThanZeroOrOneAreRefused) {
  GenerationRequest a = full_request();
  GenerationRequest b = full_request();
  b.speculative = !a.speculative;
  std::string bad = encode_request(a);
  bad[differing_byte(bad, encode_request(b))] = 2;
  Result<GenerationRequest> request = decode_request(bad);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("speculative 2 is not a bool"), std::string::npos)
      << request.status().message();

  // The deadline's flag: a deadline of 0 ns against none differs in the flag and eight bytes,
  // so the flag is the first differing byte.
  a = full_request();
  a.deadline.reset();
  bad = encode_request(a);
  b = full_request();
  b.deadline = serve::Clock::time_point{};
  const std::string with = encode_request(b);
  size_t flag = 0;
  while (bad[flag] == with[flag]) ++flag;
  bad[flag] = 7;
  request = decode_request(bad);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("deadline presence flag 7"), std::string::npos)
      << request.status().message();
}

TEST(WorkerCodec, UnknownAndZeroErrorCodesAreRefused) {
  std::string payload = encode_status(Status(ErrorCode::kInternal, "x"));
  Status out;
  const uint16_t unknown = 9999;
  std::memcpy(payload.data(), &unknown, sizeof unknown);
  Status status = decode_status(payload, out);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  EXPECT_NE(status.message().find("error code 9999 is not a known error code"), std::string::npos)
      << status.message();

  // 807 is a retired number: error_code_info would map it to internal; the decoder refuses it.
  const uint16_t retired = 807;
  std::memcpy(payload.data(), &retired, sizeof retired);
  EXPECT_EQ(decode_status(payload, out).code(), ErrorCode::kProtocolError);

  // OK travels as an empty payload, never as code 0.
  EXPECT_EQ(decode_status(std::string(2, '\0'), out).code(), ErrorCode::kProtocolError);

  // An unknown code inside an event.
  GenerationEvent e1 = full_event();
  GenerationEvent e2 = full_event();
  e1.error = Status(ErrorCode::kInvalidArgument, "x");
  e2.error = Status(ErrorCode::kNotFound, "x");
  std::string bad = encode_event(e1);
  bad[differing_byte(bad, encode_event(e2))] = 99;  // code 99: none
  const Result<GenerationEvent> event = decode_event(bad);
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.status().code(), ErrorCode::kProtocolError);
}

TEST(WorkerCodec, MoreTopLogprobsThanTheLimitAreRefused) {
  // A token with 0 top entries, then enough embedding floats that 21 entries would fit in the
  // bytes left: the limit, not the payload's end, refuses the count.
  GenerationEvent event;
  event.tokens = {GeneratedToken{.token = 5, .logprobs = logprobs_with_top(0)}};
  event.embedding.assign(64, 1.0f);
  std::string payload = encode_event(event);
  // text length 4 + token count 4 + token 4 + logprobs flag 1 + chosen 8: the top count.
  const size_t top_count_at = 4 + 4 + 4 + 1 + 8;
  const uint32_t too_many = kMaxTopLogprobs + 1;
  std::memcpy(payload.data() + top_count_at, &too_many, sizeof too_many);
  const Result<GenerationEvent> back = decode_event(payload);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(back.status().message().find("logprobs top count 21 over 20"), std::string::npos)
      << back.status().message();
}

TEST(WorkerCodec, HugeCountsAreRefusedWithoutAllocating) {
  // An event whose text length, then whose token count, claims 4 G with 8 bytes behind it.
  const std::string huge_text = std::string("\xff\xff\xff\xff", 4) + std::string(8, 'x');
  const std::string huge_tokens =
      std::string(4, '\0') + std::string("\xff\xff\xff\xff", 4) + std::string(8, 'x');
  const std::string huge_prompt = std::string(4, '\0') + std::string("\x00\x00\x00\x40", 4);
  testing::reset_largest_allocation();
  const Result<GenerationEvent> text = decode_event(huge_text);
  const Result<GenerationEvent> tokens = decode_event(huge_tokens);
  const Result<GenerationRequest> prompt = decode_request(huge_prompt);
  const size_t largest = testing::largest_allocation();
  ASSERT_FALSE(text.ok());
  ASSERT_FALSE(tokens.ok());
  ASSERT_FALSE(prompt.ok());
  EXPECT_EQ(text.status().message(),
            "worker frame: event text length 4294967295 past the payload's end (8 bytes left)");
  EXPECT_EQ(tokens.status().message(),
            "worker frame: event tokens count 4294967295 past the payload's end (8 bytes left)");
  EXPECT_EQ(prompt.status().message(),
            "worker frame: request prompt count 1073741824 past the payload's end (0 bytes left)");
  // Only the errors (their state and messages) were allocated; nonzero shows the watch is live.
  EXPECT_GT(largest, 0u);
  EXPECT_LT(largest, 1024u);
}

// A field added to any of these structs changes its size here and fails this test, so that it
// cannot be dropped silently between the two processes. (Sizes of x86-64 with libstdc++; a bool
// added into padding escapes this check.)
TEST(WorkerCodec, FieldGuardEveryEncodedStructHasTheSizeTheCodecKnows) {
  constexpr const char* kAdded = "a field was added: encode it in codec.cc and update this test";
  EXPECT_EQ(sizeof(SamplingParams), 64u) << kAdded;
  // on_start (32 bytes) is not encoded: the worker sets its own (worker_host.cc).
  EXPECT_EQ(sizeof(serve::GenerationRequest), 336u) << kAdded;
  EXPECT_EQ(sizeof(serve::EmbeddingSpec), 32u) << kAdded;
  EXPECT_EQ(sizeof(serve::GenerationEvent), 192u) << kAdded;
  EXPECT_EQ(sizeof(serve::GeneratedToken), 180u) << kAdded;
  EXPECT_EQ(sizeof(Logprobs), 172u) << kAdded;
  EXPECT_EQ(sizeof(serve::Usage), 24u) << kAdded;
  EXPECT_EQ(sizeof(serve::Timings), 48u) << kAdded;
  EXPECT_EQ(sizeof(serve::ModelLimits), 16u) << kAdded;
  EXPECT_EQ(sizeof(ErrorWhere), 144u) << kAdded;
  EXPECT_EQ(sizeof(Hello), 168u) << kAdded;
  EXPECT_EQ(sizeof(Heartbeat), 56u) << kAdded;
}

}  // namespace
}  // namespace synapse::worker
