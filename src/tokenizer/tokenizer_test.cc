// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

namespace synapse::tokenizer {
namespace {

TEST(Tokenizer, Placeholder) { SUCCEED(); }

}  // namespace
}  // namespace synapse::tokenizer
