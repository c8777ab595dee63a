// The fused quantise-and-count kernel, written once with vector extensions and built per
// instruction set. Each including file defines PLAB_KERNEL_ENTRY and PLAB_VECTOR_BYTES;
// everything else here has internal linkage so that the per-ISA copies never meet at link time.
//
// Per element, in float32 bit space: split |x| into significand `sig` and exponent, choose the
// format's quantum 2^qe for that exponent, drop the s = qe - ulp(sig) low bits of sig with the
// rounding rule, rebuild k * 2^qe (exact in float32), then apply the range rules. The readable
// double-precision version of the same rules is numerics/reference_quantize.cpp.

#include "numerics/kernels/quantize_kernel_params.h"
#include "numerics/philox.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace {

using plab::kernels::KernelCounters;
using plab::kernels::QuantKernelParams;

constexpr std::size_t kBlock = 512;
static_assert(plab::kErrorChunk % kBlock == 0, "a block never straddles two error chunks");
// Smallest float32 mantissa fields at or above 2^(1/4), 2^(2/4), 2^(3/4): the quarter-binade edges.
constexpr std::uint32_t kQuarter1 = 0x1837F1u, kQuarter2 = 0x3504F4u, kQuarter3 = 0x5744FDu;

// Rounding values match plab::Rounding.
enum : int { kNearestEven = 0, kNearestAway = 1, kTowardZero = 2, kStochastic = 3 };

struct BlockCounts {
    std::uint64_t zero = 0, underflow = 0, subnormal = 0, overflow = 0, nan = 0;
    std::uint32_t amaxBits = 0;
    // The error sums of the chunk in progress, carried from block to block.
    alignas(64) plab::ErrorLanes chunk{};
};

// Where the histogram increments go: four interleaved 32-bit copies (the counters' own, or the
// call's for calls of kSplitHistogramMin elements or more; element i into copy i % 4), else the
// counters' 64-bit histogram; nowhere when the counters skip the histogram.
struct HistogramSink {
    std::uint32_t (*copies)[plab::kHistBinCount] = nullptr;
    std::uint64_t* direct = nullptr;

    // Counts bins[0, count), the bins of consecutive elements starting at a multiple of 4.
    template <class Bin>
    void add(const Bin* bins, std::size_t count) const {
        if (copies != nullptr) {
            for (std::size_t l = 0; l < count; ++l)
                ++copies[l & 3][bins[l]];
        } else if (direct != nullptr) {
            for (std::size_t l = 0; l < count; ++l)
                ++direct[bins[l]];
        }
    }
};

// The vector lanes and their helpers, then Philox for a vector of counters: files of their own,
// included here, inside this file's anonymous namespace, so each per-ISA copy has its own.
#include "numerics/kernels/vector_lanes.inl"
#include "numerics/kernels/philox_lanes.inl"

// ---- error sums, fused: measureError's arithmetic (numerics/quant_stats.cpp) on the values
// in registers, instead of a pass of its own over a copy of the input kept for it. Built with
// -ffp-contract=off (core/CMakeLists.txt): a fused multiply-add would round differently from
// measureError's copies. The kErrorLanes lanes are one vector of doubles; a 16-lane vector adds
// its two halves in element order, a 4-lane one alternates between the lanes' two halves.
constexpr std::size_t kErrorPart = kLanes < plab::kErrorLanes ? kLanes : plab::kErrorLanes;
constexpr std::size_t kErrorParts = plab::kErrorLanes / kErrorPart;
typedef double VDPart __attribute__((vector_size(kErrorPart * 8)));
typedef float VFPart __attribute__((vector_size(kErrorPart * 4)));

struct ErrorSums {
    VDPart signal[kErrorParts], error[kErrorParts], output[kErrorParts];
    VU count; // finite pairs per vector lane (integers: their order does not matter)

    void load(const BlockCounts& bc) {
        std::memcpy(signal, bc.chunk.signal, sizeof signal);
        std::memcpy(error, bc.chunk.error, sizeof error);
        std::memcpy(output, bc.chunk.output, sizeof output);
        count = VU{};
    }
    void store(BlockCounts& bc, bool signalOnly = false) const {
        std::memcpy(bc.chunk.signal, signal, sizeof signal);
        std::memcpy(bc.chunk.error, error, sizeof error);
        std::memcpy(bc.chunk.output, signalOnly ? signal : output, sizeof output);
        for (std::size_t l = 0; l < kLanes; ++l)
            bc.chunk.count += count[l];
    }
};

template <std::size_t kFirst, std::size_t... I>
inline VFPart errorPart(VF v, std::index_sequence<I...>) {
    return __builtin_shufflevector(v, v, (kFirst + I)...);
}

// Lanes [kHalf * kErrorPart, (kHalf + 1) * kErrorPart) of v as doubles (exact). Returned through
// a reference: a vector wider than the baseline's registers passed by value changes the ABI.
template <std::size_t kHalf>
inline void errorPartAsDouble(VF v, VDPart& d) {
#if defined(__AVX512F__) && PLAB_VECTOR_BYTES == 64
    // One conversion of eight floats to eight doubles: GCC lowers the generic form below to four
    // conversions of four and two inserts per half (the sums were a third of the fused kernel's
    // instructions in a full-FP8 step with statistics).
    // (The zero-masked form with every lane kept: GCC 12's plain _mm512_cvtps_pd passes an
    // undefined vector that -Wuninitialized reports.)
    d = (VDPart)_mm512_maskz_cvtps_pd(
        0xFF, (__m256)errorPart<kHalf * kErrorPart>(v, std::make_index_sequence<kErrorPart>{}));
#else
    d = __builtin_convertvector(
        errorPart<kHalf * kErrorPart>(v, std::make_index_sequence<kErrorPart>{}), VDPart);
#endif
}

template <std::size_t kHalf, bool kSignal>
inline void addErrorPart(ErrorSums& sums, std::size_t part, VF x, VF q) {
    VDPart xd;
    errorPartAsDouble<kHalf>(x, xd);
    sums.signal[part] += xd * xd;
    if constexpr (!kSignal) {
        VDPart qd;
        errorPartAsDouble<kHalf>(q, qd);
        sums.error[part] += (qd - xd) * (qd - xd);
        sums.output[part] += qd * qd;
    }
}

// How a block sums the error: not at all, all three sums, or (a float32 cast, which returns every
// finite value unchanged) the signal alone: each (q - x)^2 is +0, each q^2 is x^2, so the error
// sum stays 0 and the output sum is the signal sum, bit for bit.
enum : int { kNoError = 0, kFullError = 1, kSignalOnly = 2 };

// Adds the finite (x, q) pairs of one vector at element i of the call (valid: its lanes in use).
template <int kError = kFullError>
inline void addError(ErrorSums& sums, std::size_t i, VU x, VU q, VU valid) {
    const VU ex = x & 0x7F800000u, eq = q & 0x7F800000u;
    const VU finite = toU((ex > eq ? ex : eq) != 0x7F800000u) & valid;
    sums.count -= finite;
    const VF xf = floatOf(x & finite), qf = floatOf(q & finite); // +0 where not finite
    constexpr bool kSignal = kError == kSignalOnly;
    if constexpr (kLanes > plab::kErrorLanes) {
        addErrorPart<0, kSignal>(sums, 0, xf, qf);
        addErrorPart<1, kSignal>(sums, 0, xf, qf);
    } else {
        addErrorPart<0, kSignal>(sums, (i / kLanes) % kErrorParts, xf, qf);
    }
}

template <int kRounding, bool kStats, bool kError = false>
inline void quantizeBlockGeneral(const QuantKernelParams& p, const float* in, float* out,
                                 std::size_t n, const std::uint32_t* rnd, std::uint32_t* bins,
                                 std::uint8_t* clipped, BlockCounts& bc) {
    const VI mant = splat(p.mantissaBits), emin = splat(p.minNormalExponent);
    const VI subQe = splat(p.subQuantumExponent);
    const VU maxBits = splat(p.maxBits), minNormalBits = splat(p.minNormalBits);
    const VU finiteOvfBits = splat(p.finiteOverflowBits), infBits = splat(p.infInputBits);
    const VU zeroBits = splat(p.zeroResultBits), nanBits = splat(p.nanBits);
    const VU negBits = splat(p.negativeBits), signMask = splat(p.signMask);
    const VU zeroSignMask = splat(p.zeroSignMask);
    const VU unsignedMask = splat(p.isUnsigned != 0 ? ~0u : 0u);
    const VU countSubMask = splat(p.countSubnormals != 0 ? ~0u : 0u);
    const VU exponentTies = splat(p.tiesOnExponentField != 0 ? ~0u : 0u);
    const VI bias = splat(p.bias);
    const VU one = splat(1u), lanes = laneIndex();
    VU cZero{}, cUnder{}, cSub{}, cOvf{}, cNan{}, vAmax{};
    ErrorSums sums;
    if constexpr (kError)
        sums.load(bc);

    for (std::size_t i = 0; i < n; i += kLanes) {
        const std::size_t len = n - i < kLanes ? n - i : kLanes;
        const VU valid = toU(lanes < splat(static_cast<std::uint32_t>(len)));
        const bool full = len == kLanes; // fixed-size copies compile to plain vector moves
        VU x{};
        if (full)
            std::memcpy(&x, in + i, sizeof x);
        else
            std::memcpy(&x, in + i, len * 4);

        const VU a = x & 0x7FFFFFFFu;
        const VI ef = toI(a >> 23);
        const VI efIsZero = ef == 0;
        // A float32 subnormal lies in binade floor(log2 a) - 149; an exact int->float finds it.
        const VU t = bitsOf(__builtin_convertvector(toI(a), VF));
        const VI e = efIsZero ? toI(t >> 23) - 276 : ef - 127; // floor(log2 |x|)
        const VI ulpExp = (efIsZero ? splat(1) : ef) - 150;    // exponent of sig's last bit
        const VU sig = (a & 0x7FFFFFu) | (~toU(efIsZero) & 0x800000u);
        const VI qe = e >= emin ? e - mant : subQe;
        const VI sRaw = qe - ulpExp;
        const VI s = sRaw < 0 ? splat(0) : sRaw; // finer quantum than float32's: exact already
        const VU sc = toU(s < 31 ? s : splat(31));
        const VU kept = sig >> sc;
        const VU rem = sig & ((one << sc) - 1u);
        const VU half = (one << sc) >> 1;
        VU up;
        if constexpr (kRounding == kNearestEven) {
            const VU onField = toU(e >= emin) & exponentTies;
            const VU odd =
                (onField & toU(((e + bias) & 1) != 0)) | (~onField & toU((kept & 1u) != 0));
            up = toU((rem > half) | ((rem == half) & (half != 0) & toI(odd))) & 1u;
        } else if constexpr (kRounding == kNearestAway)
            up = toU((rem >= half) & (half != 0)) & 1u;
        else if constexpr (kRounding == kTowardZero)
            up = VU{};
        else {
            // frac32 = floor(2^32 * rem / 2^s); round up when frac32 + random word carries, so
            // P(up) = rem / 2^s to within 2^-32 of the quantum.
            VU rw;
            std::memcpy(&rw, rnd + i, sizeof rw);
            const VI leftShift = 32 - s, rightShift = s - 32;
            const VU left =
                rem << toU(leftShift < 0 ? splat(0) : (leftShift > 31 ? splat(31) : leftShift));
            const VU right =
                rem >> toU(rightShift < 0 ? splat(0) : (rightShift > 31 ? splat(31) : rightShift));
            const VU frac32 = s <= 32 ? left : right;
            up = toU((frac32 + rw) < frac32) & 1u;
        }
        const VU k = kept + up;
        const VU pow2 = qe >= -126 ? toU(qe + 127) << 23 : one << (toU(qe + 149) & 31u);
        const VU mag = bitsOf(__builtin_convertvector(toI(k), VF) * floatOf(pow2));

        const VU isNan = toU(a > 0x7F800000u);
        const VU isInf = toU(a == 0x7F800000u);
        const VU special = isNan | isInf;
        const VU finiteOvf = ~special & toU(mag > maxBits);
        const VU negative = unsignedMask & toU(x > 0x80000000u) & ~isNan;
        const VU kZero = toU(k == 0);
        VU r = kZero != 0 ? zeroBits : mag;
        r = finiteOvf != 0 ? finiteOvfBits : r;
        r = isInf != 0 ? infBits : r;
        VU result = r | (x & (r == 0 ? zeroSignMask : signMask));
        result = negative != 0 ? negBits : result;
        result = isNan != 0 ? nanBits : result;
        if (full)
            std::memcpy(out + i, &result, sizeof result);
        else
            std::memcpy(out + i, &result, len * 4);
        // Rounded past the max: the Overflow class, as counted below, but for an unsigned
        // format's negative inputs (also Overflow, but out of range below).
        if (clipped != nullptr)
            storeFlags(clipped + i, (finiteOvf | isInf) & ~negative, len);
        if constexpr (kError)
            addError(sums, i, x, result, valid);

        if constexpr (kStats) {
            const VU ordinary = ~(special | negative) & valid;
            // Masks are all ones (-1): subtracting one adds one.
            cZero -= toU(a == 0) & valid;
            cNan -= isNan & valid;
            cOvf -= (finiteOvf | isInf | negative) & valid;
            cUnder -= ordinary & toU(a != 0) & kZero;
            cSub -= ordinary & countSubMask & ~kZero & toU(r < minNormalBits);
            const VU finiteA = a & ~isNan & valid;
            vAmax = finiteA > vAmax ? finiteA : vAmax;

            // Histogram bin: binade e, quarter from the (renormalised) mantissa field.
            const VU m = (efIsZero != 0 ? t : a) & 0x7FFFFFu;
            const VI quarter = -((m >= kQuarter1) + (m >= kQuarter2) + (m >= kQuarter3));
            VI bin = 1 + (e - plab::kHistMinExponent) * plab::kHistBinsPerBinade + quarter;
            bin = toI(a) == 0 ? splat(plab::kHistZeroBin) : bin;
            bin = isInf != 0 ? splat(plab::kHistInfBin) : bin;
            bin = isNan != 0 ? splat(plab::kHistNanBin) : bin;
            std::memcpy(bins + i, &bin, sizeof bin); // bins has room for a whole vector
        }
    }
    if constexpr (kStats) {
        for (std::size_t l = 0; l < kLanes; ++l) {
            bc.zero += cZero[l];
            bc.underflow += cUnder[l];
            bc.subnormal += cSub[l];
            bc.overflow += cOvf[l];
            bc.nan += cNan[l];
            bc.amaxBits = vAmax[l] > bc.amaxBits ? vAmax[l] : bc.amaxBits;
        }
    }
    if constexpr (kError)
        sums.store(bc);
}

// One vector holding a float32 subnormal, inside a block on the fast path: cast and count it
// with the general kernel, its histogram straight into the sink. Out of line: rare, and the fast
// loop stays small.
template <int kRounding, bool kStats>
[[gnu::noinline]] void quantizeVectorGeneral(const QuantKernelParams& p, const float* in,
                                             float* out, std::size_t len, const std::uint32_t* rnd,
                                             const HistogramSink& hist, std::uint8_t* clipped,
                                             BlockCounts& bc) {
    alignas(PLAB_VECTOR_BYTES) std::uint32_t bins[kLanes];
    quantizeBlockGeneral<kRounding, kStats>(p, in, out, len, rnd, bins, clipped, bc);
    if constexpr (kStats)
        hist.add(bins, len);
}

// The fast path: about a third of the general kernel's instructions. Precondition: params.fastPath.
// Its rounding assumes normal float32 inputs, so a vector holding a float32 subnormal goes to the
// general kernel instead (quantizeVectorGeneral; one mask test per vector, where a scan of the
// whole block first cost a second pass over it, and one subnormal sent all 512 elements down
// the general path: 0.13-0.17x copy instead of 0.22-0.28x with one input in 97 special, `bench
// quantize --specials`). Counts are derived from
// a few cheap masks: underflow = (result 0) - (input 0), subnormal = (below min normal) -
// (result 0), overflow = (past max finite) minus NaNs.
// The histogram is counted in the same loop as the vector work (each vector's bins right after
// they are computed): its loads and stores then run on the memory ports while the next vector's
// arithmetic runs on the vector ports, instead of a second loop over the block (measured: 6-7%
// more elements per second with counting).
template <int kRounding, bool kStats, bool kSubRange, int kError>
inline void quantizeBlockFast(const QuantKernelParams& p, const float* in, float* out,
                              std::size_t n, const std::uint32_t* rnd, const HistogramSink& hist,
                              std::uint8_t* clipped, BlockCounts& bc) {
    const VI maxBits = splat(static_cast<std::int32_t>(p.maxBits));
    const VI minNormalBits = splat(static_cast<std::int32_t>(p.minNormalBits));
    const VI ovfBits = splat(static_cast<std::int32_t>(p.finiteOverflowBits));
    const VI infBits = splat(static_cast<std::int32_t>(p.infInputBits));
    const VI nanBits = splat(static_cast<std::int32_t>(p.nanBits));
    const int dropped = p.droppedBits;
    const VI half = splat(static_cast<std::int32_t>(p.roundHalf));
    const std::int32_t lsbMask = p.roundHalf != 0 ? 1 : 0; // nothing dropped: nothing to round
    const VI halfMinusOne = half - lsbMask;
    const VI keep = splat(static_cast<std::int32_t>(p.keepMask));
    const VF addend = splatF(p.subAddend), quantum = splatF(p.subQuantum);
    const VF halfQuantum = splatF(p.subHalfQuantum);
    const VI subShiftBase = splat(p.subQuantumExponent + 150);
    const VI binBase = splat(1 - (plab::kHistMinExponent + 127) * plab::kHistBinsPerBinade);
    VI cZero{}, cZeroOut{}, cBelow{}, cOvf{}, cNan{}, vAmax{};
    ErrorSums sums;
    if constexpr (kError != kNoError)
        sums.load(bc);

    // One vector of lanes; kPartial (the block's last, short vector) is the only case that needs
    // a lane mask, so full vectors skip it.
    auto step = [&](std::size_t i, std::size_t len, auto partialTag) {
        constexpr bool kPartial = decltype(partialTag)::value;
        const bool full = !kPartial;
        VI x{};
        if (full)
            std::memcpy(&x, in + i, sizeof x);
        else
            std::memcpy(&x, in + i, len * 4);
        VU rw{};
        if constexpr (kRounding == kStochastic)
            std::memcpy(&rw, rnd + i, sizeof rw);

        const VI a = x & 0x7FFFFFFF;
        if (anyLane(toI(toU(a) - 1u < 0x7FFFFFu))) [[unlikely]] { // a float32 subnormal
            quantizeVectorGeneral<kRounding, kStats>(p, in + i, out + i, len, rnd + i, hist,
                                                     clipped != nullptr ? clipped + i : nullptr,
                                                     bc);
            if constexpr (kError != kNoError) { // its results from out; x holds the input
                VU q{};
                std::memcpy(&q, out + i, len * 4);
                addError<kError>(sums, i, toU(x), q,
                                 kPartial ? toU(laneIndex() < static_cast<std::uint32_t>(len))
                                          : ~VU{});
            }
            return;
        }
        const VI sign = x ^ a;
        // Normal range: drop `dropped` bits of the float32 encoding; a carry moves into the
        // exponent by itself, and for formats without mantissa bits the last kept bit is the
        // exponent's, so ties go to the even code either way.
        // The sums are unsigned: for NaN and huge inputs they pass 2^31 (the lanes are replaced
        // below), which as int32 arithmetic would be undefined behaviour.
        const VU au = toU(a);
        VI rn;
        if constexpr (kRounding == kNearestEven)
            rn = toI(au + toU(halfMinusOne) + toU((a >> dropped) & lsbMask)) & keep;
        else if constexpr (kRounding == kNearestAway)
            rn = toI(au + toU(half)) & keep;
        else if constexpr (kRounding == kTowardZero)
            rn = a & keep;
        else // add `dropped` uniform random bits, then truncate: P(up) = dropped fraction
            rn = toI(au + ((rw >> 1) >> (31 - dropped))) & keep;

        VI r = rn;
        if constexpr (kSubRange) {
            // Below min normal the quantum is fixed: C + |x| rounds |x| to it (nearest-even),
            // and |x| - z is the exact rounding error (Fast2Sum, C >= |x|).
            const VF fa = asFloat(a);
            const VF z = (fa + addend) - addend;
            VI rs;
            if constexpr (kRounding == kNearestEven) {
                rs = asInt(z);
            } else if constexpr (kRounding == kNearestAway) {
                rs = asInt((fa - z) == halfQuantum ? z + quantum : z);
            } else if constexpr (kRounding == kTowardZero) {
                rs = asInt((fa - z) < 0.0f ? z - quantum : z);
            } else {
                // Normal inputs (zeros take rn, below): the implicit bit is set.
                const VU sig = toU((a & 0x7FFFFF) | 0x800000);
                const VI s = subShiftBase - (a >> 23); // bits below the quantum
                const VI sClamped = s < 31 ? s : splat(31);
                const VU kept = sig >> toU(sClamped);
                const VU rem = sig - (kept << toU(sClamped));
                const VI left = 32 - s, right = s - 32;
                const VU frac32 = s <= 32 ? rem << toU(left > 31 ? splat(31) : left)
                                          : rem >> toU(right > 31 ? splat(31) : right);
                const VU up = toU((frac32 + rw) < frac32) & 1u;
                rs = asInt(__builtin_convertvector(toI(kept + up), VF) * quantum);
            }
            if constexpr (kRounding == kStochastic)
                // Zeros keep rn (0: the random bits added lie below `keep`): the stochastic rs
                // gives a zero an implicit bit, and a format whose quantum lies a few binades
                // below 2^-126 rounded zeros up (found by fuzz_format: e5m7:bias=122 gave 2^-127
                // for 0). a - 1 wraps for a zero.
                r = toU(a) - 1u < toU(minNormalBits) - 1u ? rs : rn;
            else
                r = a < minNormalBits ? rs : rn;
        }

        const VI isNan = a > 0x7F800000;
        const VI ovf = r > maxBits; // also every Inf and (most) NaN inputs
        VI res = ovf ? ovfBits : r;
        if constexpr (kRounding == kTowardZero) // only here do Inf inputs differ from overflows
            res = a == 0x7F800000 ? infBits : res;
        const VI result = isNan ? nanBits : (res | sign);
        if (full)
            std::memcpy(out + i, &result, sizeof result);
        else
            std::memcpy(out + i, &result, len * 4);
        if (clipped != nullptr) // the Overflow class, as counted below
            storeFlags(clipped + i, toU(ovf & ~isNan), len);
        if constexpr (kError != kNoError)
            addError<kError>(sums, i, toU(x), toU(result),
                             kPartial ? toU(laneIndex() < static_cast<std::uint32_t>(len)) : ~VU{});

        if constexpr (kStats) {
            const VI valid = kPartial ? toI(laneIndex() < static_cast<std::uint32_t>(len)) : ~VI{};
            const VI aZero = a == 0;
            cZero -= aZero & valid;
            cNan -= isNan & valid;
            cOvf -= ovf & ~isNan & valid;
            cZeroOut -= (r == 0) & valid;
            cBelow -= (r < minNormalBits) & ~isNan & valid;
            const VI finiteA = a & ~isNan & valid;
            vAmax = finiteA > vAmax ? finiteA : vAmax;
            const VI m = a & 0x7FFFFF;
            const VI quarter = (m >= kQuarter1) + (m >= kQuarter2) + (m >= kQuarter3); // -0..-3
            VI bin = ((a >> 23) << 2) + binBase - quarter;
            bin = aZero ? splat(plab::kHistZeroBin) : bin;
            bin = isNan ? splat(plab::kHistNanBin) : bin; // Inf lands on kHistInfBin by itself
            alignas(PLAB_VECTOR_BYTES) std::int32_t b[kLanes];
            std::memcpy(b, &bin, sizeof b);
#if PLAB_VECTOR_BYTES == 64
            // Read the 16 bins back from memory (the load ports) rather than letting GCC take
            // each out of the register (two vector operations a bin, on the ports the cast
            // itself is short of): 6% more elements per second with counting on AVX-512. The
            // 8-lane copy runs 10% slower that way, so it keeps GCC's extraction.
            __asm__("" : "+m"(b));
#endif
            hist.add(b, kPartial ? len : kLanes);
        }
    };
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        step(i, kLanes, std::false_type{});
    if (i < n)
        step(i, n - i, std::true_type{});
    if constexpr (kStats) {
        for (std::size_t l = 0; l < kLanes; ++l) {
            const auto zero = static_cast<std::uint32_t>(cZero[l]);
            const auto zeroOut = static_cast<std::uint32_t>(cZeroOut[l]);
            bc.zero += zero;
            bc.underflow += zeroOut - zero;
            bc.subnormal += static_cast<std::uint32_t>(cBelow[l]) - zeroOut;
            bc.overflow += static_cast<std::uint32_t>(cOvf[l]);
            bc.nan += static_cast<std::uint32_t>(cNan[l]);
            const auto amax = static_cast<std::uint32_t>(vAmax[l]);
            bc.amaxBits = amax > bc.amaxBits ? amax : bc.amaxBits;
        }
    }
    if constexpr (kError != kNoError)
        sums.store(bc, kError == kSignalOnly);
}

// ---- float32 itself (params.identity, QuantConfig::isIdentity): nothing is rounded, so the cast
// is a copy (nothing at all in place) and only the counting is left (`bench quantize --formats
// fp32`: 1.76-1.80 G elem/s through the fast path, 2.31-2.38 here). A vector holding a float32
// subnormal, an Inf or a NaN (rare) is counted by the general kernel, whose own output (NaNs
// made canonical) goes to scratch; in every other vector a lane is a zero or a normal, so one
// comparison and the amax are all the classes need. The bins are left for the caller's loop
// after the block (read back a whole block after their vector store, not straight after it:
// 5% faster for float32 when measured on the fast path). Out of line: inlined into
// quantizeRange's loop it ran 12% slower (the loop's registers and layout).
template <int kError>
[[gnu::noinline]] void countIdentityBlock(const QuantKernelParams& p, const float* in, float* out,
                                          std::size_t n, std::uint32_t* bins, std::uint8_t* clipped,
                                          BlockCounts& bc) {
    const VI binBase = splat(1 - (plab::kHistMinExponent + 127) * plab::kHistBinsPerBinade);
    const bool copy = in != out;
    VI cZero{}, vAmax{};
    ErrorSums sums;
    if constexpr (kError != kNoError)
        sums.load(bc);

    auto step = [&](std::size_t i, std::size_t len, auto partialTag) {
        constexpr bool kPartial = decltype(partialTag)::value;
        VI x{}; // lanes past a partial vector's end stay +0
        if (!kPartial)
            std::memcpy(&x, in + i, sizeof x);
        else
            std::memcpy(&x, in + i, len * 4);
        if (copy)
            std::memcpy(out + i, &x, kPartial ? len * 4 : sizeof x);
        const VU valid = kPartial ? toU(laneIndex() < static_cast<std::uint32_t>(len)) : ~VU{};
        const VI a = x & 0x7FFFFFFF;
        if (anyLane(toI(toU(a) - 1u < 0x7FFFFFu) | (a >= 0x7F800000))) [[unlikely]] {
            alignas(PLAB_VECTOR_BYTES) float scratch[kLanes];
            quantizeBlockGeneral<kNearestEven, true>(p, in + i, scratch, len, nullptr, bins + i,
                                                     clipped != nullptr ? clipped + i : nullptr,
                                                     bc);
        } else {
            const VI aZero = a == 0;
            cZero -= aZero & toI(valid);
            vAmax = a > vAmax ? a : vAmax;
            const VI m = a & 0x7FFFFF;
            const VI quarter = (m >= kQuarter1) + (m >= kQuarter2) + (m >= kQuarter3); // -0..-3
            VI bin = ((a >> 23) << 2) + binBase - quarter;
            bin = aZero ? splat(plab::kHistZeroBin) : bin;
            std::memcpy(bins + i, &bin, sizeof bin); // bins has room for a whole vector
            if (clipped != nullptr)
                std::memset(clipped + i, 0, len);
        }
        if constexpr (kError != kNoError)
            addError<kError>(sums, i, toU(x), toU(x), valid);
    };
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        step(i, kLanes, std::false_type{});
    if (i < n)
        step(i, n - i, std::true_type{});
    for (std::size_t l = 0; l < kLanes; ++l) {
        bc.zero += static_cast<std::uint32_t>(cZero[l]);
        const auto amax = static_cast<std::uint32_t>(vAmax[l]);
        bc.amaxBits = amax > bc.amaxBits ? amax : bc.amaxBits;
    }
    if constexpr (kError != kNoError)
        sums.store(bc, kError == kSignalOnly);
}

// Without counting: the input's bits, and clip flags for the Inf inputs (class Overflow).
inline void copyIdentity(const float* in, float* out, std::size_t n, std::uint8_t* clipped) {
    if (in != out)
        std::memcpy(out, in, n * sizeof(float));
    if (clipped == nullptr)
        return;
    const VU lanes = laneIndex();
    for (std::size_t i = 0; i < n; i += kLanes) {
        const std::size_t len = n - i < kLanes ? n - i : kLanes;
        VU x{};
        std::memcpy(&x, in + i, len * 4);
        storeFlags(clipped + i,
                   toU((x & 0x7FFFFFFFu) == 0x7F800000u) &
                       toU(lanes < static_cast<std::uint32_t>(len)),
                   len);
    }
}

// Returns whether the block's histogram was counted (the fast path counts it as it goes; the
// general path and float32's leave their bins for the caller).
template <int kRounding, bool kStats, int kError = kNoError>
inline bool quantizeBlock(const QuantKernelParams& p, const float* in, float* out, std::size_t n,
                          const std::uint32_t* rnd, std::uint32_t* bins, const HistogramSink& hist,
                          std::uint8_t* clipped, BlockCounts& bc) {
    if constexpr (kStats) {
        if (p.identity != 0) { // float32 itself: nothing to round, the signal alone to sum
            countIdentityBlock<kError == kNoError ? kNoError : kSignalOnly>(p, in, out, n, bins,
                                                                            clipped, bc);
            return false;
        }
    }
    if (p.fastPath == 0) {
        quantizeBlockGeneral<kRounding, kStats, kError != kNoError>(p, in, out, n, rnd, bins,
                                                                    clipped, bc);
        return false;
    }
    if (p.hasSubRange != 0)
        quantizeBlockFast<kRounding, kStats, true, kError>(p, in, out, n, rnd, hist, clipped, bc);
    else
        quantizeBlockFast<kRounding, kStats, false, kError>(p, in, out, n, rnd, hist, clipped, bc);
    return true;
}

// Random words for elements [first, first + n) into rnd[0..n), n <= kBlock; rnd has room for
// kBlock + 16 * kLanes words (whole vectors are written past n).
inline void fillRandom(std::uint64_t first, std::size_t n, const QuantKernelParams& p,
                       std::uint32_t* __restrict rnd) {
    alignas(64) std::uint32_t words[kBlock + 8 * kLanes];
    const std::uint64_t group0 = first / 4;
    const std::size_t offset = static_cast<std::size_t>(first % 4);
    const std::size_t groups = (offset + n + 3) / 4;
    // Element i's word is word (first + i) % 4 of counter (first + i) / 4: with first a multiple
    // of 4 (every call but a piece starting mid-group) the words go straight into rnd.
    std::uint32_t* to = offset == 0 ? rnd : words;
    for (std::size_t g = 0; g < groups; g += kLanes) {
        VU w[4], ordered[4];
        philoxLanes(group0 + g, p.stream, p.seed, w);
        wordsInElementOrder(w, ordered);
        std::memcpy(to + 4 * g, ordered, sizeof ordered);
    }
    if (offset != 0)
        std::memcpy(rnd, words + offset, n * sizeof(std::uint32_t));
}

// Calls of at least this many elements count their histogram in four interleaved copies of
// their own (HistogramCopies) when the counters bring none. Below it, zeroing and merging the
// copies would cost more than they save. (Below 2^31 elements per call: 32-bit copies.)
constexpr std::size_t kSplitHistogramMin = 4096;

// A scaled cast's block result, unscaled where it lies (still in L1).
inline void unscaleBlock(float* out, std::size_t len, float outScale) {
    for (std::size_t j = 0; j < len; ++j)
        out[j] *= outScale;
}

template <int kRounding>
void quantizeRange(const QuantKernelParams& p, const float* in, float* out, std::size_t n,
                   std::uint64_t firstIndex, KernelCounters* counters, std::uint8_t* clipped) {
    // Random words, stochastic rounding only (fillRandom writes whole vectors past a block's
    // end); zeroed there because a short last vector reads lanes it does not use.
    alignas(64) std::uint32_t rnd[kBlock + 16 * kLanes];
    if constexpr (kRounding == kStochastic)
        std::memset(rnd, 0, sizeof rnd);
    alignas(64) std::uint32_t bins[kBlock + kLanes];
    BlockCounts bc;
    alignas(64) plab::kernels::HistogramCopies ownCopies; // zeroed only when used
    // The bins are still computed (a few vector operations); their increments, most of the
    // histogram's cost, are what skipping saves.
    const bool histogram = counters != nullptr && counters->skipHistogram == 0;
    const bool useOwn = histogram && counters->copies == nullptr && n >= kSplitHistogramMin &&
                        n < (std::size_t{1} << 31);
    if (useOwn)
        std::memset(ownCopies, 0, sizeof ownCopies);
    std::uint32_t(*copies)[plab::kHistBinCount] =
        useOwn ? ownCopies
               : (histogram && counters->copies != nullptr ? *counters->copies : nullptr);
    const bool split = copies != nullptr;
    const bool scaled = p.inScale != 1.0f || p.outScale != 1.0f;
    if (p.identity != 0 && counters == nullptr && !scaled) {
        copyIdentity(in, out, n, clipped);
        return;
    }
    alignas(64) float scaledIn[kBlock]; // a scaled cast's block input (inScale applied)
    HistogramSink sink;
    if (split)
        sink.copies = copies;
    else if (histogram)
        sink.direct = counters->histogram;
    for (std::size_t start = 0; start < n; start += kBlock) {
        const std::size_t len = n - start < kBlock ? n - start : kBlock;
        // Ask for the next block's cache lines now, as the subnormal scan that read each block
        // before its cast used to: without either the cast waited on memory a little longer
        // (2-4% with counting).
        if (n - start > kBlock) {
            const std::size_t next = n - start - kBlock < kBlock ? n - start - kBlock : kBlock;
            for (std::size_t j = 0; j < next; j += 64 / sizeof(float))
                __builtin_prefetch(in + start + kBlock + j);
        }
        if constexpr (kRounding == kStochastic)
            fillRandom(firstIndex + start, len, p, rnd);
        const float* src = in + start;
        if (scaled) {
            for (std::size_t j = 0; j < len; ++j)
                scaledIn[j] = src[j] * p.inScale;
            src = scaledIn;
        }
        if (counters == nullptr) {
            if (p.identity != 0)
                copyIdentity(src, out + start, len, clipped != nullptr ? clipped + start : nullptr);
            else
                quantizeBlock<kRounding, false>(p, src, out + start, len, rnd, bins, sink,
                                                clipped != nullptr ? clipped + start : nullptr, bc);
            if (scaled)
                unscaleBlock(out + start, len, p.outScale);
            continue;
        }
        std::uint8_t* const flags = clipped != nullptr ? clipped + start : nullptr;
        bool counted;
        if (counters->error != nullptr) {
            counted = quantizeBlock<kRounding, true, kFullError>(p, src, out + start, len, rnd,
                                                                 bins, sink, flags, bc);
            // A finished chunk joins the call's sums; the next starts from zero. Blocks never
            // straddle a chunk: kErrorChunk is a multiple of kBlock.
            if ((start + len) % plab::kErrorChunk == 0 || start + len == n) {
                counters->error->add(bc.chunk);
                bc.chunk = {};
            }
        } else {
            counted = quantizeBlock<kRounding, true>(p, src, out + start, len, rnd, bins, sink,
                                                     flags, bc);
        }
        if (scaled)
            unscaleBlock(out + start, len, p.outScale);
        if (counted || !histogram)
            continue; // counted as it went, or not counted
        if (split) {
            std::size_t i = 0;
            for (; i + 4 <= len; i += 4) {
                ++copies[0][bins[i]];
                ++copies[1][bins[i + 1]];
                ++copies[2][bins[i + 2]];
                ++copies[3][bins[i + 3]];
            }
            for (; i < len; ++i)
                ++copies[0][bins[i]];
            continue;
        }
        std::uint64_t* hist = counters->histogram;
#pragma GCC unroll 8
        for (std::size_t i = 0; i < len; ++i)
            ++hist[bins[i]];
    }
    if (useOwn)
        for (std::size_t b = 0; b < plab::kHistBinCount; ++b)
            counters->histogram[b] +=
                std::uint64_t{copies[0][b]} + copies[1][b] + copies[2][b] + copies[3][b];
    if (counters != nullptr) {
        counters->zero += bc.zero;
        counters->underflow += bc.underflow;
        counters->subnormal += bc.subnormal;
        counters->overflow += bc.overflow;
        counters->nan += bc.nan;
        counters->amaxBits = bc.amaxBits > counters->amaxBits ? bc.amaxBits : counters->amaxBits;
    }
}

} // namespace

namespace plab::kernels {

void PLAB_KERNEL_ENTRY(const QuantKernelParams& p, int rounding, const float* in, float* out,
                       std::size_t n, std::uint64_t firstIndex, KernelCounters* counters,
                       std::uint8_t* clipped) {
#if defined(__SSE2__)
    // The kernels rely on IEEE float arithmetic with subnormals. A host program that set
    // flush-to-zero / denormals-are-zero (some math libraries do) would silently change results,
    // so both are cleared for the duration of the call.
    const unsigned savedCsr = _mm_getcsr();
    constexpr unsigned kFlushBits = 0x8040u; // FTZ | DAZ
    if ((savedCsr & kFlushBits) != 0)
        _mm_setcsr(savedCsr & ~kFlushBits);
    struct RestoreCsr {
        unsigned csr;
        ~RestoreCsr() {
            if (_mm_getcsr() != csr)
                _mm_setcsr(csr);
        }
    } restore{savedCsr};
#endif
    if (p.identity != 0) // every rounding leaves float32's own values as they are
        rounding = kNearestEven;
    switch (rounding) {
    case kNearestEven:
        quantizeRange<kNearestEven>(p, in, out, n, firstIndex, counters, clipped);
        break;
    case kNearestAway:
        quantizeRange<kNearestAway>(p, in, out, n, firstIndex, counters, clipped);
        break;
    case kTowardZero:
        quantizeRange<kTowardZero>(p, in, out, n, firstIndex, counters, clipped);
        break;
    default:
        quantizeRange<kStochastic>(p, in, out, n, firstIndex, counters, clipped);
        break;
    }
}

} // namespace plab::kernels
