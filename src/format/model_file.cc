// SPDX-License-Identifier: Apache-2.0
#include "format/model_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>

#include "format/gguf/gguf_file.h"
#include "format/package/package_file.h"

namespace synapse {

std::string_view sniff_model_format(const std::string& path) {
  std::array<uint8_t, kPackageMagic.size()> magic{};
  ssize_t got = -1;
  if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); fd >= 0) {
    got = ::read(fd, magic.data(), magic.size());
    ::close(fd);
  }
  return got == static_cast<ssize_t>(magic.size()) && magic == kPackageMagic ? "synapse" : "gguf";
}

Result<std::unique_ptr<ModelFile>> open_model_file(const std::string& path) {
  // A file of neither kind goes to the GGUF reader, which reports bad_magic (and not_found,
  // permission_denied, ... for files it cannot open).
  if (sniff_model_format(path) == "synapse") {
    SYN_ASSIGN_OR_RETURN(PackageFile file, PackageFile::open(path));
    return std::unique_ptr<ModelFile>(std::make_unique<PackageFile>(std::move(file)));
  }
  SYN_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  return std::unique_ptr<ModelFile>(std::make_unique<GgufFile>(std::move(file)));
}

}  // namespace synapse
