// The CUDA training engine against the CPU engine (CTest label `gpu`): every layer's forward and
// backward within a normalised-error bound, the loss and reductions, the scaled and MX quantisers
// bit for bit, the optimisers, and 200 training steps of every preset on the full MLP and of the
// CNN, with the bounds stated in tests/engine/engine_parity.h. The same checks run against the
// host emulation of these kernels on every CI run (test_host_kernel_parity). Exit 77 (skip) with
// the reason when no GPU is usable.
#include "cuda/cuda_backend.h"
#include "cuda/cuda_ops.h"
#include "engine_parity.h"

#include <cstdio>

int main() {
    using namespace plab;
    registerCudaBackend();
    const DeviceChoice device = resolveDevice(parseDeviceSpec("auto"));
    if (!device.cuda) {
        std::printf("SKIP: %s\n", device.notice.c_str());
        return 77;
    }
    std::printf("device: %s\n", device.label.c_str());
    parity::Report report;
    const int index = device.index;
    const parity::OpsFactory gpu = [index] { return makeCudaOps(index); };
    std::printf("engine: %s\n", gpu()->name().c_str()); // says whether cuBLAS does the products
    parity::layers(gpu, report);
    parity::lossAndReductions(gpu, report);
    parity::quantisers(gpu, report);
    parity::optimisers(gpu, report);
    parity::training(gpu, {200, 128, {256, 256}, 200, 64}, report);
    parity::lateStatistics(gpu, false, report);
    return parity::finish(report, "CUDA engine vs the CPU engine");
}
