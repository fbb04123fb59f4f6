// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of worker_frames_fuzz into a directory: valid frames of every type, one
// a file, a conversation of them all in one stream, and the bare payloads.
//   make_worker_seeds DIR
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "worker/codec.h"
#include "worker/frame.h"

namespace {

using namespace synapse;
using namespace synapse::worker;

serve::GenerationRequest chat_request() {
  serve::GenerationRequest r;
  r.id = "chatcmpl-1";
  r.prompt = {151644, 872, 198, 9707, 151645};
  r.max_tokens = 64;
  r.sampling.logit_bias = {{.token = 13, .bias = -std::numeric_limits<float>::infinity()}};
  r.sampling.seed = 42;
  r.stop = {"\n\n", "</s>"};
  r.eog_tokens = {151645};
  r.logprobs = true;
  r.top_logprobs = 2;
  r.request_class = serve::RequestClass::kBatch;
  r.deadline = serve::Clock::time_point(std::chrono::seconds(1000));
  r.constraint_recipe = R"({"kind":"json_object"})";
  return r;
}

serve::GenerationRequest embedding_request() {
  serve::GenerationRequest r;
  r.id = "embd-1";
  r.prompt = {101, 7592, 102, 2088, 102};
  r.embedding = serve::EmbeddingSpec{
      .pooling = PoolingType::kRank, .normalize = false, .token_types = {0, 0, 0, 1, 1}};
  r.speculative = false;
  return r;
}

serve::GenerationEvent token_event() {
  serve::GenerationEvent e;
  e.text = "Hello";
  Logprobs lp;
  lp.chosen = {.token = 9707, .logprob = -0.25f};
  lp.n_top = 2;
  lp.top_storage[0] = {.token = 9707, .logprob = -0.25f};
  lp.top_storage[1] = {.token = 13048, .logprob = -2.0f};
  e.tokens = {serve::GeneratedToken{.token = 9707, .logprobs = lp}};
  e.step = 3;
  return e;
}

serve::GenerationEvent final_event() {
  serve::GenerationEvent e;
  e.final = true;
  e.finish_reason = serve::FinishReason::kStop;
  e.matched_stop = 1;
  e.usage = {.prompt_tokens = 5, .cached_prompt_tokens = 0, .completion_tokens = 9};
  e.timings = {.queued_ms = 0.5,
               .time_to_first_token_ms = 12.0,
               .total_ms = 80.0,
               .decode_tokens_per_s = 110.0,
               .draft_tokens = 4,
               .draft_tokens_accepted = 3};
  return e;
}

serve::GenerationEvent error_event() {
  serve::GenerationEvent e;
  e.final = true;
  e.finish_reason = serve::FinishReason::kError;
  ErrorWhere where;
  where.field = "logits";
  where.byte_offset = 12;
  e.error = Status(ErrorCode::kNumericFault, "logits hold NaN", where);
  return e;
}

serve::GenerationEvent embedding_event() {
  serve::GenerationEvent e;
  e.final = true;
  e.embedding = {0.25f, -0.5f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  Hello hello{.protocol = kProtocolVersion,
              .pid = 1234,
              .build = "synapse test",
              .kernel_level = "avx2",
              .model_path = "/m.gguf",
              .model_digest = "ab",
              .limits = {.n_vocab = 151936, .n_ctx = 4096, .n_token_types = 0},
              .n_embd = 896,
              .kv_capacity_bytes = 1 << 26};
  const std::vector<Frame> frames = {
      {FrameType::kHello, 0, encode_hello(hello)},
      {FrameType::kSubmit, 1, encode_request(chat_request())},
      {FrameType::kSubmitReply, 1, encode_status(ok_status())},
      {FrameType::kEvent, 1, encode_event(token_event())},
      {FrameType::kEvent, 1, encode_event(final_event())},
      {FrameType::kSubmit, 2, encode_request(embedding_request())},
      {FrameType::kSubmitReply, 2, encode_status(Status(ErrorCode::kQueueFull, "queue full"))},
      {FrameType::kEvent, 2, encode_event(embedding_event())},
      {FrameType::kEvent, 3, encode_event(error_event())},
      {FrameType::kCancel, 1, ""},
      {FrameType::kHeartbeat, 0, encode_heartbeat(Heartbeat{.steps = 7, .active = 1})},
      {FrameType::kMetricsRequest, 4, ""},
      {FrameType::kMetricsReply, 4, "# TYPE synapse_steps counter\nsynapse_steps 7\n"},
      {FrameType::kShutdown, 0, encode_u64(30000)},
  };
  int written = 0;
  auto write = [&](const std::string& bytes) {
    std::ofstream(dir + "/seed_" + std::to_string(written++), std::ios::binary) << bytes;
  };
  std::string conversation;
  for (const Frame& frame : frames) {
    write(encode_frame(frame));
    write(frame.payload);
    conversation += encode_frame(frame);
  }
  write(conversation);
  return 0;
}
