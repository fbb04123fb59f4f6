// SPDX-License-Identifier: Apache-2.0
// A durable job's item run without HTTP: its url is looked up in the endpoint table (only the
// endpoints marked job_item run; another url is unsupported_parameter on field "url") and its
// body runs exactly as that endpoint's route would run it, in the job's class, to the JSON the
// route would answer. This is the ItemCall the JobWorker executes items with.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "api/requests.h"
#include "base/status.h"
#include "request/job_worker.h"
#include "request/model_directory.h"

namespace synapse::request {

Result<std::string> run_job_item(const ModelDirectory& models, std::string_view url,
                                 std::string_view body, serve::RequestClass request_class,
                                 const std::function<bool()>& cancelled,
                                 const api::RequestLimits& limits = {});

// run_job_item bound to `models` (which must outlive the call) and `limits`.
ItemCall job_item_call(const ModelDirectory& models, const api::RequestLimits& limits = {});

}  // namespace synapse::request
