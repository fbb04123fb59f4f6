// SPDX-License-Identifier: Apache-2.0
#include "http/multipart.h"

#include <gtest/gtest.h>

namespace synapse::http {
namespace {

constexpr std::string_view kType = "multipart/form-data; boundary=----b0undary";

TEST(Multipart, PartsAsCurlAndTheSdksSendThem) {
  const std::string body =
      "preamble\r\n------b0undary\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
      "batch\r\n------b0undary\r\nContent-Disposition: form-data; name=\"file\"; "
      "filename=\"in \\\"1\\\".jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
      "{\"a\":1}\r\n{\"b\":2}\r\n\r\n------b0undary--\r\n";
  Result<std::vector<FormPart>> parts = parse_multipart_form(kType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().to_string();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "purpose");
  EXPECT_EQ((*parts)[0].content, "batch");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "in \"1\".jsonl");
  EXPECT_EQ((*parts)[1].content_type, "application/jsonl");
  EXPECT_EQ((*parts)[1].content, "{\"a\":1}\r\n{\"b\":2}\r\n");
}

TEST(Multipart, MalformedBodiesAreErrorsThatSayWhat) {
  const auto error = [](std::string_view type, std::string_view body) {
    Result<std::vector<FormPart>> parts = parse_multipart_form(type, body);
    return parts.ok() ? std::string() : parts.status().message();
  };
  EXPECT_NE(error("application/json", "{}"), "");
  EXPECT_NE(error("multipart/form-data", "x"), "");  // no boundary
  EXPECT_NE(error(kType, ""), "");
  EXPECT_NE(error(kType, "------b0undary\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx"),
            "");  // never closed
  EXPECT_NE(error(kType, "------b0undary\r\nX: y\r\n\r\nx\r\n------b0undary--"), "");
  EXPECT_NE(error(kType,
                  "------b0undary\r\nContent-Disposition: form-data\r\n\r\nx\r\n"
                  "------b0undary--"),
            "");  // no name
  EXPECT_NE(error(kType,
                  "------b0undary\r\nContent-Disposition: form-data; name=\"unclosed\r\n"
                  "\r\nx\r\n------b0undary--"),
            "");
}

}  // namespace
}  // namespace synapse::http
