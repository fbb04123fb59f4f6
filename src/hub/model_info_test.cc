// SPDX-License-Identifier: Apache-2.0
#include "hub/model_info.h"

#include <gtest/gtest.h>

#include "hub/local_models.h"

namespace synapse::hub {
namespace {

const std::string kSha = "0123456789abcdef0123456789abcdef01234567";
const std::string kOid = std::string(64, 'a');
const std::string kBlob = "ce013625030ba8dba906f756967f9e9ca394464a";

TEST(ModelInfo, ParsesSiblingsWithBlobs) {
  const std::string json = R"({"id":"org/m","sha":")" + kSha +
                           R"(","siblings":[{"rfilename":"README.md","size":12,"blobId":")" +
                           kBlob + R"("},
      {"rfilename":"sub/m-Q4_K_M.gguf","size":1000,"lfs":{"sha256":")" +
                           kOid + R"(","size":1000,"pointerSize":134}}]})";
  const Result<ModelInfo> info = parse_model_info(json);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->commit, kSha);
  ASSERT_EQ(info->files.size(), 2u);
  EXPECT_EQ(info->files[0].path, "README.md");
  EXPECT_EQ(info->files[0].size, 12u);
  EXPECT_TRUE(info->files[0].lfs_sha256.empty());
  EXPECT_EQ(info->files[0].git_blob_id, kBlob);
  EXPECT_TRUE(info->files[1].git_blob_id.empty());
  EXPECT_EQ(info->files[1].lfs_sha256, kOid);
  EXPECT_EQ(info->files[1].size, 1000u);
  // Without blobs=true: names only.
  const auto plain =
      parse_model_info(R"({"sha":")" + kSha + R"(","siblings":[{"rfilename":"a"}]})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->files[0].size.has_value());
}

TEST(ModelInfo, RefusesWhatCouldEscapeOrLie) {
  const auto with = [](const std::string& sibling) {
    return parse_model_info(R"({"sha":")" + kSha + R"(","siblings":[)" + sibling + "]}");
  };
  for (const std::string& bad :
       {std::string(R"({"rfilename":"../x.gguf"})"), std::string(R"({"rfilename":"/etc/x"})"),
        std::string(R"({"rfilename":"a//b"})"), std::string(R"({"rfilename":"a\\b"})"),
        std::string(R"({"rfilename":7})"), std::string(R"({"rfilename":"a","size":-1})"),
        std::string(R"({"rfilename":"a","lfs":{"sha256":"xyz"}})"),
        std::string(R"({"rfilename":"a","blobId":"ABC"})"),
        std::string(R"({"rfilename":"a","blobId":7})"),
        std::string(R"({"rfilename":"a","size":5,"lfs":{"sha256":")") + kOid + R"(","size":6}})",
        std::string("7")}) {
    EXPECT_EQ(with(bad).status().code(), ErrorCode::kHubUnavailable) << bad;
  }
  EXPECT_FALSE(parse_model_info("").ok());
  EXPECT_FALSE(parse_model_info(R"({"sha":"main","siblings":[]})").ok());
  EXPECT_FALSE(parse_model_info(R"({"sha":")" + kSha + R"("})").ok());
  EXPECT_FALSE(parse_model_info(std::string(100000, '[')).ok());
}

TEST(OllamaManifest, FindsTheModelLayer) {
  const std::string json = R"({"schemaVersion":2,
    "mediaType":"application/vnd.docker.distribution.manifest.v2+json",
    "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" +
                           std::string(64, 'c') + R"(","size":485},
    "layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" +
                           std::string(64, 'd') + R"(","size":10},
      {"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
                           kOid + R"(","size":2019377376}]})";
  const Result<OllamaModelLayer> layer = parse_ollama_manifest(json);
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  EXPECT_EQ(layer->sha256, kOid);
  EXPECT_EQ(layer->size, 2019377376u);
  EXPECT_FALSE(parse_ollama_manifest(R"({"layers":[]})").ok());
  EXPECT_FALSE(parse_ollama_manifest(
                   R"({"layers":[{"mediaType":"application/vnd.ollama.image.model",
                       "digest":"sha256:../../etc"}]})")
                   .ok());
  EXPECT_FALSE(parse_ollama_manifest("not json").ok());
}

}  // namespace
}  // namespace synapse::hub
