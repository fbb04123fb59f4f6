// SPDX-License-Identifier: Apache-2.0
// Text for the operating system's error numbers and signals, safe on any thread (strerror and
// strsignal may share a static buffer between threads).
#pragma once

#include <string>

namespace synapse {

// "No such file or directory" for ENOENT.
std::string errno_text(int err);
// "Killed" for SIGKILL; "signal N" for a number the C library does not name.
std::string signal_text(int sig);

}  // namespace synapse
