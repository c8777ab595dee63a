// GPU parity of the quantiser (CTest label `gpu`): for every named format, rounding mode and
// overflow mode, the CUDA kernel's values must equal the CPU quantiser's bit for bit (stochastic
// rounding included: both take Philox words by element index), with identical class counts,
// histogram and amax. Plain C++ (no Qt), because GPU machines have no Qt. Exit 77 (CTest's skip)
// with a one-line reason when no usable GPU is present.
#include "cuda/cuda_backend.h"
#include "numerics/quantizer.h"
#include "require_gpu.h"
#include "util/thread_pool.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace plab;

namespace {

// Gradient-like values over ~80 binades, every special value, float32 subnormals, and values on
// and next to the rounding boundaries of the narrow formats.
std::vector<float> makeInputs(std::size_t n) {
    std::vector<float> v;
    v.reserve(n);
    const float specials[] = {0.0f,
                              -0.0f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::max(),
                              std::numeric_limits<float>::denorm_min(),
                              1e-40f,
                              -3e-39f,
                              65504.0f,
                              65520.0f,
                              448.0f,
                              464.0f,
                              57344.0f,
                              6.0f,
                              7.0f,
                              28.0f,
                              30.0f,
                              7.5f,
                              0.25f,
                              0.0625f,
                              0.375f};
    for (float s : specials)
        v.push_back(s);
    std::mt19937 rng(2026);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> binade(-60.0f, 20.0f);
    std::uniform_int_distribution<std::uint32_t> bits;
    while (v.size() < n) {
        if (v.size() % 16 == 0) { // arbitrary bit patterns: ties, NaN payloads, subnormals
            const std::uint32_t b = bits(rng);
            float x;
            std::memcpy(&x, &b, 4);
            v.push_back(x);
        } else {
            v.push_back(normal(rng) * std::exp2(binade(rng)));
        }
    }
    return v;
}

bool sameBits(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, 4) == 0;
}

} // namespace

// Optional argument: elements per buffer (the device script's smoke stage uses 2^20).
int main(int argc, char** argv) {
    const std::size_t elements =
        argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{1} << 22;
    if (elements == 0) {
        std::printf("usage: %s [elements > 0]\n", argv[0]);
        return 2;
    }
    registerCudaBackend();
    const ComputeBackend* cuda = findBackend("cuda");
    const DeviceChoice device = resolveDevice(parseDeviceSpec("auto"));
    if (!device.cuda)
        return gpu_test::noUsableGpu(device.notice);
    std::printf("device: %s\n", device.label.c_str());
    ThreadPool pool(0);
    const std::vector<float> in = makeInputs(elements);
    std::vector<float> cpuOut(in.size()), gpuOut(in.size());
    int checked = 0, failed = 0;
    for (const FormatSpec& format : namedFormats()) {
        for (const Rounding rounding : kAllRoundings) {
            for (const Overflow overflow : {Overflow::Saturate, Overflow::Inf}) {
                QuantConfig config = QuantConfig::forFormat(format, rounding);
                config.overflow = overflow;
                QuantizeOptions options;
                options.seed = 0x5eed;
                options.stream = 41;
                options.firstIndex = 1000003; // not a multiple of 4: words start mid-block
                options.pool = &pool;
                QuantStats cpuStats, gpuStats;
                Quantizer(config).quantize(in, cpuOut, &cpuStats, options);
                cuda->quantize(device.index, config, in, gpuOut, &gpuStats, options);
                ++checked;
                std::size_t firstBad = in.size();
                for (std::size_t i = 0; i < in.size() && firstBad == in.size(); ++i)
                    if (!sameBits(cpuOut[i], gpuOut[i]))
                        firstBad = i;
                const bool statsEqual = cpuStats.counts == gpuStats.counts &&
                                        cpuStats.histogram == gpuStats.histogram &&
                                        sameBits(cpuStats.amax, gpuStats.amax);
                if (firstBad != in.size() || !statsEqual) {
                    ++failed;
                    std::printf("FAIL %s %s %s:", format.name.c_str(),
                                std::string(toString(rounding)).c_str(),
                                std::string(toString(overflow)).c_str());
                    if (firstBad != in.size())
                        std::printf(" element %zu: x=%a cpu=%a gpu=%a", firstBad,
                                    static_cast<double>(in[firstBad]),
                                    static_cast<double>(cpuOut[firstBad]),
                                    static_cast<double>(gpuOut[firstBad]));
                    if (!statsEqual)
                        std::printf(" statistics differ");
                    std::printf("\n");
                }
            }
        }
    }
    std::printf("%d of %d format x rounding x overflow combinations bit-identical to the CPU on "
                "%zu elements each\n",
                checked - failed, checked, in.size());
    return failed == 0 ? 0 : 1;
}
