#include "util/cpu_features.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace plab {
namespace {

CpuFeatures probe() {
    CpuFeatures f;
#if defined(PLAB_HAVE_X86_KERNELS)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2");
    f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    f.avx512cd = __builtin_cpu_supports("avx512cd");
#endif
    return f;
}

// The cap's outcome, read once: the path, or the one-line error every call repeats.
struct AutoChoice {
    CpuKernel kernel = CpuKernel::Generic;
    std::string error;
};

AutoChoice chooseAuto() {
    const std::vector<CpuKernel> supported = supportedCpuKernels();
    const char* cap = std::getenv("PLAB_CPU_KERNEL");
    if (cap == nullptr || *cap == '\0')
        return {supported.back(), {}};
    for (auto it = supported.rbegin(); it != supported.rend(); ++it)
        if (std::string_view(toString(*it)) == cap)
            return {*it, {}};
    for (CpuKernel k : {CpuKernel::Generic, CpuKernel::Avx2, CpuKernel::Avx512})
        if (std::string_view(toString(k)) == cap) // known, but above this CPU: the best there is
            return {supported.back(), {}};
    return {CpuKernel::Generic,
            std::string("PLAB_CPU_KERNEL=\"") + cap + "\": expected generic, avx2 or avx512"};
}

} // namespace

const char* toString(CpuKernel kernel) {
    switch (kernel) {
    case CpuKernel::Auto:
        return "auto";
    case CpuKernel::Generic:
        return "generic";
    case CpuKernel::Avx2:
        return "avx2";
    case CpuKernel::Avx512:
        return "avx512";
    }
    return "?";
}

const CpuFeatures& cpuFeatures() {
    static const CpuFeatures features = probe();
    return features;
}

std::vector<CpuKernel> supportedCpuKernels() {
    std::vector<CpuKernel> kernels{CpuKernel::Generic};
    if (cpuFeatures().avx2)
        kernels.push_back(CpuKernel::Avx2);
    if (cpuFeatures().avx512)
        kernels.push_back(CpuKernel::Avx512);
    return kernels;
}

CpuKernel autoCpuKernel() {
    static const AutoChoice choice = chooseAuto();
    if (!choice.error.empty())
        throw std::invalid_argument(choice.error);
    return choice.kernel;
}

} // namespace plab
