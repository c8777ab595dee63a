// The GPU engine's kernels, run on the host (KernelOps with the host policy), against the CPU
// engine: every layer's forward and backward, the loss and reductions, the scaled and MX
// quantisers (bit for bit), the optimisers, training runs of every preset (compared on several
// seeds: see engine_parity.h), and statistics that arrive a step late as a GPU's do. The CUDA
// build runs the same checks on a device (tests/gpu/test_gpu_engine.cpp); this one runs
// everywhere, so the kernels' arithmetic and indexing are tested on every CI run.
#include "engine/host_kernel_ops.h"
#include "engine_parity.h"

int main() {
    using namespace plab;
    parity::Report report;
    const parity::OpsFactory hostKernels = [] { return makeHostKernelOps(); };
    parity::layers(hostKernels, report);
    parity::lossAndReductions(hostKernels, report);
    parity::quantisers(hostKernels, report);
    parity::optimisers(hostKernels, report);
    // 150 steps of every preset on 3 seeds, on a narrower MLP and fewer CNN steps than the GPU
    // test so that the serial emulation takes seconds.
    parity::training(hostKernels, {150, 32, {64, 64}, 30, 16}, report);
    parity::lateStatistics([] { return makeHostKernelOps(HostStatistics::Late); }, hostKernels,
                           report);
    return parity::finish(report, "host emulation of the GPU engine vs the CPU engine");
}
