// SPDX-License-Identifier: Apache-2.0
#include "base/os_error.h"

#include <string.h>  // strerror_r (the GNU form, which returns the text), sigdescr_np

namespace synapse {

std::string errno_text(int err) {
  char buffer[256];
  return strerror_r(err, buffer, sizeof buffer);
}

std::string signal_text(int sig) {
  const char* text = sigdescr_np(sig);  // glibc 2.32+: a constant string, no buffer
  return text != nullptr ? std::string(text) : "signal " + std::to_string(sig);
}

}  // namespace synapse
