// The fused quantise kernel built for the avx512 instruction set (flags set on this file alone in
// core/CMakeLists.txt); the quantiser picks the best one the CPU supports at run time.
#define PLAB_VECTOR_BYTES 64
#define PLAB_KERNEL_ENTRY quantizeRangeAvx512
#include "numerics/kernels/quantize_kernel.inl"
