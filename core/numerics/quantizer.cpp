// Quantizer: turns a QuantConfig into the kernels' bit-pattern constants, picks the kernel for
// this CPU, and splits large arrays into fixed chunks whose counters are merged in order, so the
// result is the same for any thread count.
#include "numerics/quantizer.h"

#include "numerics/kernels/quantize_kernel_params.h"
#include "util/thread_pool.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

namespace plab {
namespace {

constexpr std::uint32_t kQuietNaNBits = 0x7FC00000u;
constexpr std::uint32_t kInfBits = 0x7F800000u;
// Chunks are a multiple of 4 elements (one Philox block) and big enough to amortise a task;
// the error sums' chunks, so that a task's sums are one chunk's.
constexpr std::size_t kChunk = kErrorChunk;

std::uint32_t floatBits(double v) {
    return std::bit_cast<std::uint32_t>(static_cast<float>(v));
}

kernels::QuantKernelParams makeParams(const QuantConfig& c) {
    const FormatSpec& f = c.format;
    kernels::QuantKernelParams p{};
    p.mantissaBits = f.mantissaBits;
    p.minNormalExponent = f.minNormalExponent();
    p.subQuantumExponent =
        (f.hasZero && f.subnormals) ? p.minNormalExponent - f.mantissaBits : p.minNormalExponent;
    p.maxBits = floatBits(f.maxFinite());
    p.minNormalBits = floatBits(f.minNormal());
    const bool saturate = c.overflow == Overflow::Saturate || (!f.hasInf() && !f.hasNan());
    const std::uint32_t overflowBits = f.hasInf() ? kInfBits : kQuietNaNBits;
    p.finiteOverflowBits =
        (saturate || c.rounding == Rounding::TowardZero) ? p.maxBits : overflowBits;
    p.infInputBits = saturate ? p.maxBits : overflowBits;
    p.zeroResultBits = f.hasZero ? 0u : floatBits(f.minPositive());
    p.nanBits = kQuietNaNBits;
    p.negativeBits = (saturate || !f.hasNan()) ? p.zeroResultBits : kQuietNaNBits;
    p.signMask = f.isSigned ? 0x80000000u : 0u;
    p.zeroSignMask = f.hasNegativeZero() ? 0x80000000u : 0u;
    p.isUnsigned = f.isSigned ? 0u : 1u;
    p.countSubnormals = (f.hasZero && f.subnormals && f.mantissaBits > 0) ? 1u : 0u;
    p.tiesOnExponentField = f.mantissaBits == 0 ? 1u : 0u;
    p.bias = f.bias;
    p.fastPath = (f.isSigned && f.hasZero && f.hasNegativeZero()) ? 1u : 0u;
    p.hasSubRange = p.minNormalExponent > -126 ? 1u : 0u;
    p.droppedBits = 23 - f.mantissaBits;
    p.roundHalf = p.droppedBits > 0 ? 1u << (p.droppedBits - 1) : 0u;
    p.keepMask = ~((1u << p.droppedBits) - 1u);
    // Only used when hasSubRange, where subQuantumExponent >= -149 + 23 keeps these normal.
    p.subAddend = std::ldexp(1.0f, p.subQuantumExponent + 23);
    p.subQuantum = std::ldexp(1.0f, p.subQuantumExponent);
    p.subHalfQuantum = std::ldexp(1.0f, p.subQuantumExponent - 1);
    p.identity = c.isIdentity() ? 1u : 0u;
    p.inScale = 1.0f;
    p.outScale = 1.0f;
    return p;
}

// The quantise kernels, one per code path (util/cpu_features.h), indexed by CpuKernel: one source
// (kernels/quantize_kernel.inl) built per instruction set. Off x86-64 only the generic one is
// built, and only it is ever supported there.
#if defined(PLAB_HAVE_X86_KERNELS)
constexpr kernels::QuantizeRangeFn kQuantizeKernels[] = {nullptr, kernels::quantizeRangeGeneric,
                                                         kernels::quantizeRangeAvx2,
                                                         kernels::quantizeRangeAvx512};
#else
constexpr kernels::QuantizeRangeFn kQuantizeKernels[] = {nullptr, kernels::quantizeRangeGeneric,
                                                         kernels::quantizeRangeGeneric,
                                                         kernels::quantizeRangeGeneric};
#endif
static_assert(std::size(kQuantizeKernels) == static_cast<std::size_t>(CpuKernel::Avx512) + 1);

void addCounters(const kernels::KernelCounters& k, std::size_t n, QuantStats& stats) {
    auto& c = stats.counts;
    c[static_cast<std::size_t>(QuantClass::Zero)] += k.zero;
    c[static_cast<std::size_t>(QuantClass::Underflow)] += k.underflow;
    c[static_cast<std::size_t>(QuantClass::Subnormal)] += k.subnormal;
    c[static_cast<std::size_t>(QuantClass::Overflow)] += k.overflow;
    c[static_cast<std::size_t>(QuantClass::NaN)] += k.nan;
    c[static_cast<std::size_t>(QuantClass::Normal)] +=
        n - (k.zero + k.underflow + k.subnormal + k.overflow + k.nan);
    for (int b = 0; b < kHistBinCount; ++b)
        stats.histogram[static_cast<std::size_t>(b)] += k.histogram[b];
    const float amax = std::bit_cast<float>(k.amaxBits);
    stats.amax = amax > stats.amax ? amax : stats.amax;
}

} // namespace

struct Quantizer::Impl {
    kernels::QuantKernelParams params;
    kernels::QuantizeRangeFn run;
};

Quantizer::Quantizer(const QuantConfig& config, CpuKernel kernel) : m_config(config) {
    const std::vector<CpuKernel> supported = supportedCpuKernels();
    if (kernel == CpuKernel::Auto) {
        kernel = autoCpuKernel();
    } else if (std::find(supported.begin(), supported.end(), kernel) == supported.end()) {
        throw FormatError(std::string("cpu kernel \"") + toString(kernel) +
                          "\" is not supported by this build or CPU");
    }
    m_kernel = kernel;
    m_identity = config.isIdentity();
    m_impl = std::make_shared<const Impl>(
        Impl{makeParams(config), kQuantizeKernels[static_cast<std::size_t>(kernel)]});
}

void Quantizer::quantize(std::span<const float> in, std::span<float> out, QuantStats* stats,
                         const QuantizeOptions& options) const {
    if (in.size() != out.size())
        throw std::invalid_argument("quantize: input has " + std::to_string(in.size()) +
                                    " elements but output has " + std::to_string(out.size()));
    const bool scaled = options.inputScale != 1.0f || options.outputScale != 1.0f;
    if (stats == nullptr && m_identity && !scaled) {
        if (in.data() != out.data())
            std::copy(in.begin(), in.end(), out.begin());
        return;
    }
    kernels::QuantKernelParams params = m_impl->params;
    params.seed = options.seed;
    params.stream = options.stream;
    params.inScale = options.inputScale;
    params.outScale = options.outputScale;
    const int rounding = static_cast<int>(m_config.rounding);
    const std::size_t n = in.size();
    const std::size_t chunks = (n + kChunk - 1) / kChunk;

    if (options.pool == nullptr || options.pool->threadCount() == 1 || chunks <= 1) {
        if (stats == nullptr) {
            quantizePiece(in, out, nullptr, options);
            return;
        }
        QuantTally tally;
        ErrorLanes error{};
        if (options.measureError)
            tally.m_counters->error = &error;
        quantizePiece(in, out, &tally, options);
        tally.addTo(*stats);
        if (options.measureError)
            stats->error.merge(error.total());
        return;
    }

    std::vector<kernels::KernelCounters> counters(stats ? chunks : 0);
    std::vector<ErrorLanes> errors(stats && options.measureError ? chunks : 0);
    for (std::size_t chunk = 0; chunk < errors.size(); ++chunk)
        counters[chunk].error = &errors[chunk];
    for (kernels::KernelCounters& chunk : counters)
        chunk.skipHistogram = options.countHistogram ? 0 : 1;
    options.pool->parallelFor(chunks, [&](std::size_t chunk) {
        const std::size_t begin = chunk * kChunk;
        const std::size_t len = std::min(kChunk, n - begin);
        m_impl->run(params, rounding, in.data() + begin, out.data() + begin, len,
                    options.firstIndex + begin, stats ? &counters[chunk] : nullptr, nullptr);
    });
    for (std::size_t chunk = 0; chunk < counters.size(); ++chunk)
        addCounters(counters[chunk], std::min(kChunk, n - chunk * kChunk), *stats);
    if (!errors.empty()) {
        ErrorLanes error{};
        for (const ErrorLanes& chunk : errors) // in chunk order
            error.add(chunk);
        stats->error.merge(error.total());
    }
}

struct QuantTally::Copies {
    alignas(64) kernels::HistogramCopies bins{};
};

QuantTally::QuantTally()
    : m_counters(std::make_unique<kernels::KernelCounters>()),
      m_copies(std::make_unique<Copies>()) {
    m_counters->copies = &m_copies->bins;
}
QuantTally::~QuantTally() = default;
QuantTally::QuantTally(QuantTally&&) noexcept = default;
QuantTally& QuantTally::operator=(QuantTally&&) noexcept = default;

namespace {
void addCopies(const kernels::HistogramCopies& copies, std::uint64_t* histogram) {
    for (std::size_t b = 0; b < kHistBinCount; ++b)
        histogram[b] += std::uint64_t{copies[0][b]} + copies[1][b] + copies[2][b] + copies[3][b];
}
} // namespace

void QuantTally::foldCopies() {
    addCopies(m_copies->bins, m_counters->histogram);
    std::memset(m_copies->bins, 0, sizeof m_copies->bins);
    m_elementsInCopies = 0;
}

void QuantTally::addTo(QuantStats& stats) const {
    addCounters(*m_counters, m_elements, stats);
    addCopies(m_copies->bins, stats.histogram.data());
}

void Quantizer::quantizePiece(std::span<const float> in, std::span<float> out, QuantTally* tally,
                              const QuantizeOptions& options, std::uint8_t* clipped) const {
    if (in.size() != out.size())
        throw std::invalid_argument("quantize: input has " + std::to_string(in.size()) +
                                    " elements but output has " + std::to_string(out.size()));
    kernels::QuantKernelParams params = m_impl->params;
    params.seed = options.seed;
    params.stream = options.stream;
    params.inScale = options.inputScale;
    params.outScale = options.outputScale;
    // A piece never brings a copy past 2^32 counts: its elements fit, or it counts without them.
    constexpr std::uint64_t kCopyLimit = std::uint64_t{1} << 32;
    if (tally != nullptr && tally->m_elementsInCopies + in.size() >= kCopyLimit)
        tally->foldCopies();
    const bool pieceFits = in.size() < kCopyLimit;
    if (tally != nullptr) {
        tally->m_counters->copies = pieceFits ? &tally->m_copies->bins : nullptr;
        tally->m_counters->skipHistogram = options.countHistogram ? 0 : 1;
    }
    m_impl->run(params, static_cast<int>(m_config.rounding), in.data(), out.data(), in.size(),
                options.firstIndex, tally != nullptr ? tally->m_counters.get() : nullptr, clipped);
    if (tally != nullptr) {
        tally->m_elements += in.size();
        if (pieceFits)
            tally->m_elementsInCopies += in.size();
    }
}

} // namespace plab
