// The CUDA training engine against the CPU engine (CTest label `gpu`): every layer's forward and
// backward within a normalised-error bound, the loss and reductions, the scaled and MX quantisers
// bit for bit, the optimisers, the whole GPT's forward and backward, and 200 training steps of
// every preset on the full MLP and on a small GPT, and of the CNN, on 3 seeds, with the bounds
// stated in tests/engine/engine_parity.h. The same checks run
// against the host emulation of these kernels on every CI run (test_host_kernel_parity). Exit 77
// (skip) with the reason when no GPU is usable.
#include "cuda/cuda_backend.h"
#include "cuda/cuda_ops.h"
#include "engine_parity.h"
#include "op_cases.h"
#include "require_gpu.h"

#include "nn/linear.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace plab;

// The engine's own GEMM kernel sums each product in k order with fused multiply-adds, then adds
// the bias: with that kernel (PLAB_NO_CUBLAS=1) a linear layer's forward equals this host twin
// bit for bit, the same arithmetic in the same order. (cuBLAS's order is its own: the other
// checks compare it within bounds.)
void ownGemmBitExact(const parity::OpsFactory& gpu, parity::Report& report) {
    const std::unique_ptr<TensorOps> ops = gpu();
    if (ops->name().find("own GEMM kernel") == std::string::npos)
        return;
    const int batch = 37, inputs = 53, outputs = 29; // not multiples of the 16-wide tiles
    Linear layer(inputs, outputs);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> in(static_cast<std::size_t>(batch) * inputs),
        w(static_cast<std::size_t>(outputs) * inputs + outputs);
    for (float& v : in)
        v = normal(rng);
    for (float& v : w)
        v = normal(rng);
    const Tensor tin = ops->allocate(in.size()), tw = ops->allocate(w.size()),
                 tout = ops->allocate(static_cast<std::size_t>(batch) * outputs);
    ops->upload(tin, in.data());
    ops->upload(tw, w.data());
    ops->forward(layer, tout.data, tin.data, tw.data, batch, Accumulation{});
    std::vector<float> got(tout.size), want(tout.size);
    ops->download(got.data(), tout);
    for (int r = 0; r < batch; ++r)
        for (int o = 0; o < outputs; ++o) {
            float sum = 0.0f;
            for (int i = 0; i < inputs; ++i)
                sum = std::fma(in[static_cast<std::size_t>(r) * inputs + i],
                               w[static_cast<std::size_t>(o) * inputs + i], sum);
            want[static_cast<std::size_t>(r) * outputs + o] =
                sum + w[static_cast<std::size_t>(outputs) * inputs + o];
        }
    const bool same = std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0;
    std::printf("own GEMM kernel: linear forward %s its host twin bit for bit\n",
                same ? "equals" : "DIFFERS FROM");
    report.expect(same, "own GEMM kernel: linear forward differs from its host twin (k-order "
                        "fused multiply-adds, then the bias)");
}

} // namespace

int main() {
    using namespace plab;
    registerCudaBackend();
    const DeviceChoice device = resolveDevice(parseDeviceSpec("auto"));
    if (!device.cuda)
        return gpu_test::noUsableGpu(device.notice);
    std::printf("device: %s\n", device.label.c_str());
    parity::Report report;
    const int index = device.index;
    const parity::OpsFactory gpu = [index] { return makeCudaOps(index); };
    const std::string engine = gpu()->name();
    std::printf("engine: %s\n", engine.c_str()); // says whether cuBLAS does the products
    // On the device check's machine cuBLAS is part of the toolkit: the own kernel in its place
    // (the name says why) is a fault there, not a variant, unless this run asked for it.
    if (gpu_test::gpuRequired() && std::getenv("PLAB_NO_CUBLAS") == nullptr)
        report.expect(engine.find("own GEMM kernel") == std::string::npos,
                      "cuBLAS expected (PLAB_REQUIRE_GPU, PLAB_NO_CUBLAS unset): " + engine);
    ownGemmBitExact(gpu, report);
    parity::opTable(gpu, report);
    parity::layers(gpu, report);
    parity::gptModel(gpu, report);
    parity::lossAndReductions(gpu, report);
    parity::quantisers(gpu, report);
    parity::optimisers(gpu, report);
    parity::training(gpu, {200, 128, {256, 256}, 200, 64, 200, 8}, report);
    parity::lateStatistics(gpu, {}, report); // cuBLAS sums in another order: no exact counts
    parity::replays(gpu, report); // deterministic reductions: a GPU run replays bit for bit
    return parity::finish(report, "CUDA engine vs the CPU engine");
}
