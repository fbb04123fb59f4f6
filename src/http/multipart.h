// SPDX-License-Identifier: Apache-2.0
// multipart/form-data bodies (RFC 7578), as clients upload files: the parts' names, file names,
// content types and contents. Parts are views into the body (an upload is not copied), bounded
// in count and in header size; anything malformed is an error that says what.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse::http {

struct FormPart {
  std::string name;      // Content-Disposition's name
  std::string filename;  // its filename, empty when not a file
  std::string content_type;
  std::string_view content;  // into the body given to parse_multipart_form
};

// The boundary of a "multipart/form-data; boundary=..." Content-Type; invalid_value otherwise.
Result<std::string> multipart_boundary(std::string_view content_type);

// Every part of `body`, in order. invalid_value (field "body") when malformed.
Result<std::vector<FormPart>> parse_multipart_form(std::string_view content_type,
                                                   std::string_view body);

}  // namespace synapse::http
