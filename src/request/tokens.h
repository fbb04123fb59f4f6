// SPDX-License-Identifier: Apache-2.0
// llama-server's /tokenize and /detokenize without HTTP, on the request's model (the first
// served model when the body names none): the JSON response, or the error with its field.
#pragma once

#include <string>
#include <string_view>

#include "api/requests.h"
#include "base/status.h"
#include "request/model_directory.h"

namespace synapse::request {

Result<std::string> run_tokenize(const ModelDirectory& models, std::string_view body,
                                 const api::RequestLimits& limits);
Result<std::string> run_detokenize(const ModelDirectory& models, std::string_view body,
                                   const api::RequestLimits& limits);

}  // namespace synapse::request
