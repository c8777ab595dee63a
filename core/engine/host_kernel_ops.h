// The GPU engine's kernels (KernelOps over kernel_bodies.h) run serially on the host: the same
// arithmetic and orchestration a GPU runs, checkable against the CPU engine on any machine.
// Slow by design; for tests.
#pragma once

#include "engine/tensor_ops.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace plab {

// Immediate: statistics are merged as they are counted. Late: they arrive as a GPU's do, after
// sendStatistics and not at the first poll, so tests can check the trainer and session logic
// for statistics that land a step later.
enum class HostStatistics { Immediate, Late };
// memoryBytes plays a device's memory: an allocation past it throws as cudaMalloc's failure
// does, so tests can check what happens when a GPU runs out.
std::unique_ptr<TensorOps> makeHostKernelOps(HostStatistics statistics = HostStatistics::Immediate,
                                             std::size_t memoryBytes = SIZE_MAX);

} // namespace plab
