// Plain data handed from the quantiser to its per-ISA kernels: the format's constants as float32
// bit patterns, precomputed once per call, and the kernels' counters. Only C arrays and scalars:
// the kernel files are built with different instruction sets and must share no inline code.
#pragma once

#include "numerics/quant_stats.h"

#include <cstddef>
#include <cstdint>

namespace plab::kernels {

using plab::ErrorLanes;

struct QuantKernelParams {
    std::int32_t mantissaBits;
    std::int32_t minNormalExponent; // values below 2^this use the subnormal quantum
    std::int32_t subQuantumExponent;
    std::uint32_t maxBits;            // |max finite|
    std::uint32_t minNormalBits;      // smaller nonzero results are subnormal
    std::uint32_t finiteOverflowBits; // magnitude for a finite input rounding past max finite
    std::uint32_t infInputBits;       // magnitude for an Inf input
    std::uint32_t zeroResultBits;     // magnitude when the rounded value is 0 (min for nozero)
    std::uint32_t nanBits;            // whole result for a NaN input
    std::uint32_t negativeBits;       // whole result for a negative input to an unsigned format
    std::uint32_t signMask;           // sign kept on nonzero results
    std::uint32_t zeroSignMask;       // sign kept on zero results (0 for FNUZ and unsigned)
    std::uint32_t isUnsigned;         // 1: negative inputs are out of range
    std::uint32_t countSubnormals;    // 1 when the format has subnormals
    // Formats without mantissa bits break nearest-even ties on the exponent field's parity
    // (the code's last bit), not on the significand's.
    std::uint32_t tiesOnExponentField;
    std::int32_t bias;

    // Fast path (signed formats with a zero and an ordinary -0, inputs without float32
    // subnormals): round the float32 bits directly in the normal range, and with a float
    // add of subAddend (Fast2Sum) below it.
    std::uint32_t fastPath;
    std::uint32_t hasSubRange; // min normal above float32's, so some normal inputs fall below
    std::int32_t droppedBits;  // 23 - mantissa bits
    std::uint32_t roundHalf;   // 1 << (droppedBits - 1), or 0
    std::uint32_t keepMask;    // clears the dropped bits
    float subAddend;           // 2^(subQuantumExponent + 23)
    float subQuantum;          // 2^subQuantumExponent
    float subHalfQuantum;      // 2^(subQuantumExponent - 1)
    // 1 for QuantConfig::isIdentity(): every value comes out as its own bits, so the cast is a
    // copy with counting (countIdentityBlock) and its error sums are its signal sum alone (error
    // 0, output = signal, the same bits).
    std::uint32_t identity;
    std::uint64_t seed;
    std::uint64_t stream;
    // A scaled cast in the one pass (issue 66 item 1): each block's input multiplied by inScale
    // in an L1-resident copy, cast and counted there, the result multiplied by outScale as it
    // is written: the bits of the three passes (scale, cast, unscale) it replaces.
    float inScale;
    float outScale;
};

// The histogram as four interleaved 32-bit copies (element i into copy i % 4): a tensor's
// values crowd into a few bins, and consecutive increments of one counter would wait for each
// other (store to load); four copies break the chain.
using HistogramCopies = std::uint32_t[4][kHistBinCount];

// Per-thread counters; the class counts leave Normal to be derived from the total.
struct KernelCounters {
    std::uint64_t zero;
    std::uint64_t underflow;
    std::uint64_t subnormal;
    std::uint64_t overflow;
    std::uint64_t nan;
    std::uint32_t amaxBits;
    std::uint64_t histogram[kHistBinCount];
    // When set, the histogram is counted into these copies, kept across calls and folded into
    // `histogram` by their owner (QuantTally): a caller that casts a tensor in many small pieces
    // then zeroes and folds them once, not per piece. The owner keeps every count below 2^32.
    HistogramCopies* copies;
    // When set, the error sums of this call's (input, output) pairs (finite pairs only) are
    // added to it, a chunk at a time (the call starts on a chunk boundary of its tensor).
    ErrorLanes* error;
    // Nonzero: the histogram is left as it is (the caller has it from another cast of the same
    // input: every element format bins the same values).
    std::uint32_t skipHistogram;
};

// Quantises in[0..n) into out (which may alias in); element i uses random word `firstIndex + i`.
// `rounding` is the integer value of plab::Rounding. counters may be null (no statistics).
// clipped, when not null, gets one byte per element: 1 where the element rounded past the max
// (class Overflow; NaN never, nor an unsigned format's negative inputs, which are Overflow too but
// out of range below), 0 elsewhere.
using QuantizeRangeFn = void (*)(const QuantKernelParams& params, int rounding, const float* in,
                                 float* out, std::size_t n, std::uint64_t firstIndex,
                                 KernelCounters* counters, std::uint8_t* clipped);

void quantizeRangeGeneric(const QuantKernelParams&, int, const float*, float*, std::size_t,
                          std::uint64_t, KernelCounters*, std::uint8_t*);
#if defined(PLAB_HAVE_X86_KERNELS)
void quantizeRangeAvx2(const QuantKernelParams&, int, const float*, float*, std::size_t,
                       std::uint64_t, KernelCounters*, std::uint8_t*);
void quantizeRangeAvx512(const QuantKernelParams&, int, const float*, float*, std::size_t,
                         std::uint64_t, KernelCounters*, std::uint8_t*);
#endif

} // namespace plab::kernels
