// PLAB_VECTOR_CLONES: compile a hot loop for AVX-512 and AVX2 besides the baseline, the copy for
// this CPU picked when the program loads (GCC's target_clones), so that the core's plain C++
// loops vectorise where the CPU can without a per-ISA source file. Results must not depend on
// the copy: the files that use it are compiled with -ffp-contract=off (no fused multiply-add),
// and integer and exact float operations give the same bits at any width. That is also why the
// copy is GCC's choice, made before main from the CPU alone, and not util/cpu_features.h's:
// PLAB_CPU_KERNEL caps the hand-written kernels, whose code differs per path; these loops have
// one source and the same bits on every path.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define PLAB_VECTOR_CLONES                                                                         \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
// For code that has an AVX-512 version of its own elsewhere (block_range_passes.cpp): AVX2 and
// the baseline only, so an AVX-512 CPU sent here (PLAB_CPU_KERNEL=avx2) runs the AVX2 copy.
#define PLAB_VECTOR_CLONES_BELOW_AVX512 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PLAB_VECTOR_CLONES
#define PLAB_VECTOR_CLONES_BELOW_AVX512
#endif
