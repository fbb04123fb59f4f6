// SPDX-License-Identifier: Apache-2.0
#include "hub/hub_ref.h"

#include <gtest/gtest.h>

namespace synapse::hub {
namespace {

TEST(HubRef, ParsesEveryHubSpelling) {
  for (const char* ref : {"hf.co/org/Repo-GGUF", "huggingface.co/org/Repo-GGUF",
                          "https://huggingface.co/org/Repo-GGUF", "hf://org/Repo-GGUF",
                          "org/Repo-GGUF", "hf.co/org/Repo-GGUF:latest"}) {
    const Result<HubRef> parsed = parse_hub_ref(ref);
    ASSERT_TRUE(parsed.ok()) << ref << ": " << parsed.status().to_string();
    EXPECT_EQ(parsed->repo, "org/Repo-GGUF") << ref;
    EXPECT_EQ(parsed->tag, "") << ref;
  }
  const Result<HubRef> tagged = parse_hub_ref("hf.co/org/repo:q8_0");
  ASSERT_TRUE(tagged.ok());
  EXPECT_EQ(tagged->tag, "q8_0");
  EXPECT_EQ(store_name({"org/repo", "Q8_0"}), "hf.co/org/repo:Q8_0");
  for (const char* bad : {"repo", "hf.co/org", "org/repo/extra", "org/../x",
                          "org/repo:", "org/re po", "../repo", "org/repo:a/b"}) {
    EXPECT_EQ(parse_hub_ref(bad).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(HubRef, SplitNamesAndQuantizations) {
  const auto split = parse_split_name("dir/Model-Q8_0-00002-of-00003.gguf");
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->prefix, "dir/Model-Q8_0");
  EXPECT_EQ(split->index, 2u);
  EXPECT_EQ(split->count, 3u);
  EXPECT_EQ(split_part_name(*split, 1), "dir/Model-Q8_0-00001-of-00003.gguf");
  EXPECT_FALSE(parse_split_name("Model-Q8_0.gguf"));
  EXPECT_FALSE(parse_split_name("Model-00004-of-00003.gguf"));
  EXPECT_FALSE(parse_split_name("Model-00000-of-00003.gguf"));

  EXPECT_EQ(quantization_of("Llama-3.2-1B-Instruct-Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(quantization_of("model.iq4_xs.gguf"), "iq4_xs");
  EXPECT_EQ(quantization_of("Model-BF16-00001-of-00002.gguf"), "BF16");
  EXPECT_EQ(quantization_of("tinyllama.gguf"), "");
  EXPECT_TRUE(file_matches_tag("Model-UD-Q4_K_XL.gguf", "ud-q4_k_xl"));
  EXPECT_TRUE(file_matches_tag("Model-UD-Q4_K_XL.gguf", "Q4_K_XL"));
  EXPECT_FALSE(file_matches_tag("Model-Q4_K_M.gguf", "K_M"));  // '_' is no separator
  EXPECT_FALSE(file_matches_tag("Model-Q4_K_M.gguf", "Q4_K"));
}

TEST(HubRef, ChoosesTheDefaultQuantizationThenTagThenFile) {
  const std::vector<std::string> files = {"README.md",
                                          "Model-F16.gguf",
                                          "Model-Q8_0.gguf",
                                          "Model-Q4_K_M.gguf",
                                          "mmproj-Model-Q4_K_M.gguf",
                                          "big/Model-Q6_K-00001-of-00002.gguf",
                                          "big/Model-Q6_K-00002-of-00002.gguf"};
  const auto by_default = choose_gguf(files, "", "", "org/m");
  ASSERT_TRUE(by_default.ok()) << by_default.status().to_string();
  EXPECT_EQ(by_default->files, std::vector<std::string>{"Model-Q4_K_M.gguf"});
  EXPECT_EQ(by_default->tag, "Q4_K_M");

  const auto tagged = choose_gguf(files, "q8_0", "", "org/m");
  ASSERT_TRUE(tagged.ok());
  EXPECT_EQ(tagged->files, std::vector<std::string>{"Model-Q8_0.gguf"});
  EXPECT_EQ(tagged->tag, "Q8_0") << "the file's spelling, so one stored name per quantization";

  const auto split = choose_gguf(files, "Q6_K", "", "org/m");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->files, (std::vector<std::string>{"big/Model-Q6_K-00001-of-00002.gguf",
                                                    "big/Model-Q6_K-00002-of-00002.gguf"}));
  const auto by_part = choose_gguf(files, "", "big/Model-Q6_K-00002-of-00002.gguf", "org/m");
  ASSERT_TRUE(by_part.ok());
  EXPECT_EQ(by_part->files.size(), 2u);

  const auto exact = choose_gguf(files, "", "Model-F16.gguf", "org/m");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->files, std::vector<std::string>{"Model-F16.gguf"});
  EXPECT_EQ(exact->tag, "F16");

  const auto missing = choose_gguf(files, "Q2_K", "", "org/m");
  EXPECT_EQ(missing.status().code(), ErrorCode::kHubNotFound);
  EXPECT_NE(missing.status().message().find("Q4_K_M"), std::string::npos)
      << "the error lists what there is: " << missing.status().message();
  EXPECT_EQ(choose_gguf(files, "", "nope.gguf", "org/m").status().code(), ErrorCode::kHubNotFound);
  EXPECT_EQ(choose_gguf(files, "", "README.md", "org/m").status().code(),
            ErrorCode::kInvalidArgument);
  // An incomplete split set is refused, naming the missing part.
  const std::vector<std::string> broken = {"M-Q4_K_M-00001-of-00003.gguf",
                                           "M-Q4_K_M-00003-of-00003.gguf"};
  EXPECT_EQ(choose_gguf(broken, "", "", "org/m").status().code(), ErrorCode::kHubNotFound);
  // One GGUF of no known quantization is the default; several need a choice.
  const std::vector<std::string> one = {"tiny.gguf"};
  ASSERT_TRUE(choose_gguf(one, "", "", "org/m").ok());
  EXPECT_EQ(choose_gguf(one, "", "", "org/m")->tag, "tiny");
  const std::vector<std::string> two = {"a.gguf", "b.gguf"};
  EXPECT_EQ(choose_gguf(two, "", "", "org/m").status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace synapse::hub
