// The CPU's vector extensions and the code path the core takes on them, decided in one place:
// the CPU is probed once and PLAB_CPU_KERNEL read once, and every hand-written per-ISA path (the
// quantise kernels' table in numerics/quantizer.cpp, the block passes' in
// numerics/block_range_passes.cpp, the block statistics) asks here. Loops whose bits do not depend
// on the vector width leave the choice to the compiler (util/vector_clones.h).
#pragma once

#include <vector>

namespace plab {

// A code path, narrowest first. Auto: the widest this process runs (autoCpuKernel()).
enum class CpuKernel { Auto, Generic, Avx2, Avx512 };
const char* toString(CpuKernel kernel);

// What the CPU has, as probed once.
struct CpuFeatures {
    bool avx2 = false;     // AVX2 with FMA and BMI2 (x86-64-v3's vector part)
    bool avx512 = false;   // AVX-512 F, BW, VL and DQ (x86-64-v4's)
    bool avx512cd = false; // AVX-512 CD (conflict detection), which the block lanes also use
};
const CpuFeatures& cpuFeatures();

// The paths this build has and this CPU can run, Generic first (only Generic off x86-64).
std::vector<CpuKernel> supportedCpuKernels();
// The widest supported path, capped by PLAB_CPU_KERNEL=generic|avx2|avx512 so that the whole
// suite can run as on a CPU with fewer extensions (docs/testing.md); a cap above the CPU gives
// the widest there is. Throws std::invalid_argument naming the variable when it names no path.
CpuKernel autoCpuKernel();

} // namespace plab
