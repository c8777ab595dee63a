// The CUDA backend (plab_cuda): device discovery and the quantise-with-counting kernel behind
// the core's ComputeBackend interface. Executables built with it call registerCudaBackend() once.
#pragma once

#include "device/compute_backend.h"

#include <memory>

namespace plab {

std::unique_ptr<ComputeBackend> makeCudaBackend();
void registerCudaBackend(); // registerBackend(makeCudaBackend())

} // namespace plab
