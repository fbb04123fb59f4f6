// SPDX-License-Identifier: Apache-2.0
#include "format/model_file.h"

#include <cstdio>

#include "format/gguf/gguf_file.h"

namespace synapse {

Result<std::unique_ptr<ModelFile>> open_model_file(const std::string& path) {
  // Every reader validates its own magic; today GGUF is the only format, so it reports a file of
  // another kind as bad_magic.
  SYN_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  return std::unique_ptr<ModelFile>(std::make_unique<GgufFile>(std::move(file)));
}

}  // namespace synapse
