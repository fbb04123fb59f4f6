// SPDX-License-Identifier: Apache-2.0
// The architectures this build supports; each is defined in its own file.
#pragma once

#include "model/arch/architecture.h"

namespace synapse::arch {

const Architecture& llama_architecture();
const Architecture& qwen2_architecture();
const Architecture& qwen3_architecture();
const Architecture& bert_architecture();
const Architecture& phi3_architecture();
const Architecture& gemma2_architecture();
const Architecture& gemma3_architecture();
const Architecture& qwen3moe_architecture();
const Architecture& lfm2_architecture();

}  // namespace synapse::arch
