// SPDX-License-Identifier: Apache-2.0
// Writes the fuzzers' seed corpus: a few dozen small, deterministic, valid GGUF files covering
// every value type, nested arrays, every tensor type, custom alignments, vocabulary-only files and
// tiny synthetic models of each architecture. Seeds are generated at test time, never committed.
// Built a second time as make_package_seeds (SYNAPSE_SEEDS_AS_PACKAGES), it converts each seed
// into a .synapse package for the package reader's fuzzer.
//   make_gguf_seeds OUT_DIR
//   make_package_seeds OUT_DIR
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "format/gguf/gguf_writer.h"
#include "format/package/package_writer.h"
#include "synth/synth_model.h"
#include "synth/synthetic_vocab.h"

namespace synapse {
namespace {

using Bytes = std::vector<uint8_t>;

#ifdef SYNAPSE_SEEDS_AS_PACKAGES
constexpr const char* kProgram = "make_package_seeds";
#else
constexpr const char* kProgram = "make_gguf_seeds";
#endif

// Deterministic filler: tensor bytes only need to exist, not to mean anything.
Bytes pattern(uint64_t n, uint8_t seed) {
  Bytes out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + i * 37);
  return out;
}

class SeedWriter {
 public:
  explicit SeedWriter(std::string dir) : dir_(std::move(dir)) {}

  // Builds one file with `fill` and writes it as seed `name`.
  void write(const std::string& name, const std::function<Status(GgufWriter&)>& fill) {
    GgufWriter writer;
    // Tensor bytes must outlive write_file(); `fill` adds them through add_tensor_data().
    data_.clear();
    current_ = &writer;
    Status status = fill(writer);
    if (status.ok()) status = writer.write_file(path(name));
    current_ = nullptr;
    report(name, status);
  }

  // Adds a tensor with patterned data of the right size to the file being built.
  Status add_tensor_data(std::string_view name, TensorType type, std::vector<uint64_t> dims) {
    const Result<uint64_t> bytes = tensor_byte_size(type, dims);
    if (!bytes.ok()) return bytes.status();
    data_.push_back(pattern(*bytes, static_cast<uint8_t>(data_.size() + 1)));
    return current_->add_tensor(name, type, dims, data_.back());
  }

  void synth(const std::string& name, const SynthOptions& options) {
    report(name, synthesize_model(options, path(name)));
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name + ".gguf"; }
  int written() const { return written_; }
  int failed() const { return failed_; }

 private:
  void report(const std::string& name, const Status& status) {
    if (status.ok()) {
      ++written_;
    } else {
      ++failed_;
      std::fprintf(stderr, "make_gguf_seeds: %s: %s\n", name.c_str(), status.to_string().c_str());
    }
  }

  std::string dir_;
  GgufWriter* current_ = nullptr;
  // Each tensor's bytes, alive until the file is written (inner buffers never move).
  std::vector<Bytes> data_;
  int written_ = 0;
  int failed_ = 0;
};

Status every_scalar(GgufWriter& w) {
  SYN_RETURN_IF_ERROR(w.set_scalar("u8", uint8_t{200}));
  SYN_RETURN_IF_ERROR(w.set_scalar("i8", int8_t{-100}));
  SYN_RETURN_IF_ERROR(w.set_scalar("u16", uint16_t{60000}));
  SYN_RETURN_IF_ERROR(w.set_scalar("i16", int16_t{-30000}));
  SYN_RETURN_IF_ERROR(w.set_scalar("u32", uint32_t{4000000000u}));
  SYN_RETURN_IF_ERROR(w.set_scalar("i32", int32_t{-2000000000}));
  SYN_RETURN_IF_ERROR(w.set_scalar("f32", 3.25f));
  SYN_RETURN_IF_ERROR(w.set_scalar("bool", true));
  SYN_RETURN_IF_ERROR(w.set_scalar("u64", uint64_t{1} << 60));
  SYN_RETURN_IF_ERROR(w.set_scalar("i64", -(int64_t{1} << 60)));
  SYN_RETURN_IF_ERROR(w.set_scalar("f64", -1e-300));
  return w.set_string("string", "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \"quoted\"\n");
}

Status every_array(GgufWriter& w) {
  SYN_RETURN_IF_ERROR(w.set("a.u8", GgufValue::array(std::vector<uint8_t>{0, 1, 255})));
  SYN_RETURN_IF_ERROR(w.set("a.i8", GgufValue::array(std::vector<int8_t>{-128, 127})));
  SYN_RETURN_IF_ERROR(w.set("a.u16", GgufValue::array(std::vector<uint16_t>{1, 65535})));
  SYN_RETURN_IF_ERROR(w.set("a.i16", GgufValue::array(std::vector<int16_t>{-1, 2})));
  SYN_RETURN_IF_ERROR(w.set("a.u32", GgufValue::array(std::vector<uint32_t>{7, 8, 9})));
  SYN_RETURN_IF_ERROR(w.set("a.i32", GgufValue::array(std::vector<int32_t>{-7, 8})));
  SYN_RETURN_IF_ERROR(w.set("a.f32", GgufValue::array(std::vector<float>{0.5f, -0.25f})));
  SYN_RETURN_IF_ERROR(w.set("a.bool", GgufValue::array(std::vector<bool>{true, false})));
  SYN_RETURN_IF_ERROR(w.set("a.u64", GgufValue::array(std::vector<uint64_t>{uint64_t{1} << 63})));
  SYN_RETURN_IF_ERROR(w.set("a.i64", GgufValue::array(std::vector<int64_t>{-1})));
  SYN_RETURN_IF_ERROR(w.set("a.f64", GgufValue::array(std::vector<double>{1e300, -0.0})));
  SYN_RETURN_IF_ERROR(w.set("a.string", GgufValue::string_array({"", "a", "<0x0A>", "\xC3\xA9"})));
  return w.set("a.empty", GgufValue::array(std::vector<float>{}));
}

// Arrays of arrays down to the reader's depth limit (4), mixing element types.
Status nested_arrays(GgufWriter& w) {
  GgufValue inner = GgufValue::array(std::vector<int32_t>{1, 2, 3});
  for (int depth = 2; depth <= 4; ++depth) {
    inner = GgufValue::array_of_arrays(
        {inner, GgufValue::string_array({"x"}), GgufValue::array(std::vector<uint8_t>{})});
    SYN_RETURN_IF_ERROR(w.set("nested." + std::to_string(depth), inner));
  }
  return w.set("nested.empty", GgufValue::array_of_arrays({}));
}

// The smallest valid shape of a type: one block, two rows.
std::vector<uint64_t> tiny_dims(const TensorTypeInfo& info) { return {info.block_elements, 2}; }

int run(const std::string& dir) {
  std::filesystem::create_directories(dir);
  SeedWriter seeds(dir);

  seeds.write("empty", [](GgufWriter&) { return ok_status(); });
  seeds.write("scalars", every_scalar);
  seeds.write("arrays", every_array);
  seeds.write("nested_arrays", nested_arrays);
  seeds.write("all_values", [](GgufWriter& w) {
    SYN_RETURN_IF_ERROR(every_scalar(w));
    SYN_RETURN_IF_ERROR(every_array(w));
    return nested_arrays(w);
  });

  // One file per tensor type, and one with all of them.
  for (const TensorTypeInfo& info : tensor_type_table()) {
    seeds.write("tensor_" + std::string(info.name), [&](GgufWriter& w) {
      SYN_RETURN_IF_ERROR(w.set_string("general.architecture", "llama"));
      return seeds.add_tensor_data("t", info.type, tiny_dims(info));
    });
  }
  seeds.write("tensor_all_types", [&](GgufWriter&) {
    for (const TensorTypeInfo& info : tensor_type_table()) {
      SYN_RETURN_IF_ERROR(seeds.add_tensor_data(info.name, info.type, tiny_dims(info)));
    }
    return ok_status();
  });
  seeds.write("tensor_shapes", [&](GgufWriter& w) {
    SYN_RETURN_IF_ERROR(every_scalar(w));
    SYN_RETURN_IF_ERROR(seeds.add_tensor_data("d1", TensorType::kF32, {3}));
    SYN_RETURN_IF_ERROR(seeds.add_tensor_data("d2", TensorType::kF16, {5, 3}));
    SYN_RETURN_IF_ERROR(seeds.add_tensor_data("d3", TensorType::kQ8_0, {32, 1, 2}));
    return seeds.add_tensor_data("d4", TensorType::kBF16, {2, 2, 2, 2});
  });

  for (uint32_t alignment : {1u, 8u, 64u, 256u}) {
    seeds.write("alignment_" + std::to_string(alignment), [&](GgufWriter& w) {
      SYN_RETURN_IF_ERROR(w.set_scalar("general.alignment", alignment));
      SYN_RETURN_IF_ERROR(seeds.add_tensor_data("a", TensorType::kF32, {3}));
      SYN_RETURN_IF_ERROR(seeds.add_tensor_data("b", TensorType::kQ4_0, {32}));
      return seeds.add_tensor_data("c", TensorType::kI8, {5});
    });
  }

  // Vocabulary-only files, as llama.cpp's ggml-vocab-*.gguf.
  seeds.write("vocab_bpe", [](GgufWriter& w) {
    SYN_RETURN_IF_ERROR(w.set_string("general.architecture", "qwen2"));
    SYN_ASSIGN_OR_RETURN(const SyntheticVocab vocab, make_byte_level_bpe_vocab(300));
    return write_byte_level_bpe_vocab(vocab, w);
  });
  seeds.write("vocab_wordpiece", [](GgufWriter& w) {
    SYN_RETURN_IF_ERROR(w.set_string("general.architecture", "bert"));
    SYN_ASSIGN_OR_RETURN(const SyntheticVocab vocab, make_wordpiece_vocab(120));
    return write_wordpiece_vocab(vocab, w);
  });

  // Tiny synthetic models: the hyper-parameter reader and the tensor check see real layouts.
  for (const char* arch : {"llama", "qwen2", "qwen3", "bert"}) {
    SynthOptions o;
    o.arch = arch;
    o.n_ctx = 64;
    o.n_embd = 16;
    o.n_ff = 32;
    o.n_layer = 1;
    o.n_head = 2;
    o.n_head_kv = std::string(arch) == "bert" ? 2 : 1;
    seeds.synth("model_" + std::string(arch), o);
    o.type_embedding = TensorType::kF16;
    o.type_attention = TensorType::kBF16;
    o.type_feed_forward = TensorType::kF16;
    o.type_output = TensorType::kF16;
    o.tied_output = std::string(arch) == "llama";
    seeds.synth("model_" + std::string(arch) + "_f16", o);
  }

  int failed = seeds.failed();
#ifdef SYNAPSE_SEEDS_AS_PACKAGES
  std::vector<std::filesystem::path> ggufs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".gguf") ggufs.push_back(entry.path());
  }
  for (const std::filesystem::path& gguf : ggufs) {
    std::filesystem::path package = gguf;
    package.replace_extension(".synapse");
    const auto written = convert_to_package(gguf.string(), package.string());
    if (!written.ok()) {
      std::fprintf(stderr, "make_package_seeds: %s: %s\n", gguf.c_str(),
                   written.status().to_string().c_str());
      ++failed;
    }
    std::filesystem::remove(gguf);
  }
#endif
  std::printf("%s: wrote %d seeds to %s\n", kProgram, seeds.written(), dir.c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace synapse

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_gguf_seeds OUT_DIR\n");
    return 2;
  }
  return synapse::run(argv[1]);
}
