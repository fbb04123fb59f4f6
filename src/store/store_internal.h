// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the store's translation units; not part of its interface.
#pragma once

#include <cstdint>

#include "sqlite/sqlite_db.h"
#include "store/model_store.h"

namespace synapse {

// A row of the columns in kBlobColumns order (path and aliases not filled).
StoredModel read_blob_row(const SqliteStatement& row);
int64_t store_now_seconds();

}  // namespace synapse
