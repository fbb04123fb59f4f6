// SPDX-License-Identifier: Apache-2.0
#include "base/os_error.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>

namespace synapse {
namespace {

TEST(OsError, NamesErrnoValuesAndSignals) {
  EXPECT_EQ(errno_text(ENOENT), "No such file or directory");
  EXPECT_EQ(signal_text(SIGKILL), "Killed");
  EXPECT_EQ(signal_text(SIGSEGV), "Segmentation fault");
  EXPECT_EQ(signal_text(1000), "signal 1000");
  EXPECT_NE(errno_text(100000).find("100000"), std::string::npos);  // "Unknown error 100000"
}

}  // namespace
}  // namespace synapse
