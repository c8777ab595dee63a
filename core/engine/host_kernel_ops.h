// The GPU engine's kernels (KernelOps over kernel_bodies.h) run serially on the host: the same
// arithmetic and orchestration a GPU runs, checkable against the CPU engine on any machine.
// Slow by design; for tests.
#pragma once

#include "engine/tensor_ops.h"

#include <memory>

namespace plab {

std::unique_ptr<TensorOps> makeHostKernelOps();

} // namespace plab
