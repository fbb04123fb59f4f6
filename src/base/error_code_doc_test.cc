// SPDX-License-Identifier: Apache-2.0
// docs/errors.md holds the error table as generated from src/base/error_code.cc. When they
// disagree this test fails and says how to regenerate the document's generated part:
//   SYNAPSE_UPDATE_DOCS=1 <build>/src/base/base_test --gtest_filter='ErrorCodeDoc.*'
#include "base/error_code_doc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/error_code.h"

namespace synapse {
namespace {

const std::string kDocPath = std::string(SYNAPSE_SOURCE_DIR) + "/docs/errors.md";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ErrorCodeDoc, SummariesFitATableCell) {
  for (const ErrorCodeInfo& info : error_code_table()) {
    EXPECT_EQ(info.summary.find_first_of("|\n"), std::string_view::npos) << info.name;
  }
}

TEST(ErrorCodeDoc, DocsErrorsMdAgreesWithTheTable) {
  std::string doc = read_text(kDocPath);
  ASSERT_FALSE(doc.empty()) << "cannot read " << kDocPath;
  const size_t begin = doc.find(kErrorDocBegin);
  const size_t end = doc.find(kErrorDocEnd);
  ASSERT_NE(begin, std::string::npos) << kDocPath << " lacks the line " << kErrorDocBegin;
  ASSERT_NE(end, std::string::npos) << kDocPath << " lacks the line " << kErrorDocEnd;
  ASSERT_LT(begin, end);
  const size_t body = begin + kErrorDocBegin.size() + 1;  // after the marker's newline
  const std::string generated = "\n" + error_codes_markdown() + "\n";
  const std::string current = doc.substr(body, end - body);
  if (current == generated) return;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before any thread of this test starts
  if (const char* update = std::getenv("SYNAPSE_UPDATE_DOCS");
      update && update == std::string("1")) {
    doc.replace(body, end - body, generated);
    std::ofstream(kDocPath, std::ios::binary | std::ios::trunc) << doc;
    std::printf("rewrote the generated part of %s\n", kDocPath.c_str());
    return;
  }
  ADD_FAILURE() << kDocPath << " disagrees with the error table in src/base/error_code.cc.\n"
                << "Regenerate its generated part with\n"
                << "  SYNAPSE_UPDATE_DOCS=1 <build>/src/base/base_test "
                   "--gtest_filter='ErrorCodeDoc.*'\n"
                << "and review the diff. Expected:\n"
                << generated;
}

}  // namespace
}  // namespace synapse
