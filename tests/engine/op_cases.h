// The op table: every TensorOps operation against a reference written from its contract
// (op_cases.cpp), for any engine.
#pragma once

#include "engine_parity.h"

namespace plab::parity {

// Runs every row on a fresh engine from candidate, and fails a virtual of tensor_ops.h that no
// row covers.
void opTable(const OpsFactory& candidate, Report& report);

} // namespace plab::parity
