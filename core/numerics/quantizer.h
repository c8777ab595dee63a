// Quantizer: float32 arrays -> a format -> float32, counting every element's class, amax and the
// log2|x| histogram of the inputs in the same pass. This is the primitive every tensor role of
// the training engine goes through.
#pragma once

#include "numerics/quant_stats.h"
#include "numerics/rounding.h"
#include "util/cpu_features.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace plab {

class ThreadPool;

struct QuantizeOptions {
    std::uint64_t seed = 0;       // stochastic rounding: key of the random stream
    std::uint64_t stream = 0;     // e.g. a hash of (step, tensor id)
    std::uint64_t firstIndex = 0; // element index of in[0] for the random bits
    ThreadPool* pool = nullptr;   // null: the calling thread does all the work
    // With statistics: also add the cast's error sums (measureError(in, out), the same bits)
    // to stats->error, measured in the cast's own pass (the input need not be kept for them).
    bool measureError = false;
    // With statistics: false leaves stats->histogram as it is. The histogram bins the (scaled)
    // input, the same for every element format, so a caller casting one tensor in several
    // formats counts it once (the watcher's counting thread: a fifth of each cast).
    bool countHistogram = true;
    // A scaled cast in one pass: the input multiplied by inputScale before the cast (the counts,
    // histogram, amax and error sums are of those values) and the result by outputScale, bit
    // for bit as three passes would (amax_scaling.h's quantizeScaled). 1: not scaled.
    float inputScale = 1.0f;
    float outputScale = 1.0f;
};

namespace kernels {
struct KernelCounters;
}

// Counters summed over many quantizePiece calls on one thread, folded into QuantStats once: for
// callers that cast one tensor in many small pieces (the block quantiser's cache-sized chunks),
// where a QuantStats per piece would cost more than the piece. Its histogram copies are kept
// across the pieces too (zeroing and folding 4 x 1,111 bins per 4,096-element piece cost about
// as much as counting the piece).
class QuantTally {
public:
    QuantTally();
    ~QuantTally();
    QuantTally(QuantTally&&) noexcept;
    QuantTally& operator=(QuantTally&&) noexcept;
    // Adds the counts so far to stats.
    void addTo(QuantStats& stats) const;

private:
    friend class Quantizer;
    struct Copies;
    // Folds the histogram copies into the counters' histogram and zeroes them.
    void foldCopies();
    std::unique_ptr<kernels::KernelCounters> m_counters;
    std::unique_ptr<Copies> m_copies;
    std::uint64_t m_elements = 0;
    std::uint64_t m_elementsInCopies = 0; // kept below 2^32 so that no 32-bit copy overflows
};

class Quantizer {
public:
    // Throws FormatError if `kernel` is not supported on this CPU.
    explicit Quantizer(const QuantConfig& config, CpuKernel kernel = CpuKernel::Auto);

    const QuantConfig& config() const { return m_config; }
    CpuKernel kernel() const { return m_kernel; }

    // QuantConfig::isIdentity(): every value passes through unchanged, so without statistics
    // quantize() is a copy (or nothing, in place).
    bool isIdentity() const { return m_identity; }

    // out may be the same array as in. When stats is not null the counts are added to it.
    // Throws std::invalid_argument if the sizes differ.
    void quantize(std::span<const float> in, std::span<float> out, QuantStats* stats,
                  const QuantizeOptions& options = {}) const;

    // One piece of a larger tensor, on the calling thread (options.pool is ignored); the
    // piece's first element has random word options.firstIndex. tally may be null. clipped, when
    // not null, gets one byte per element: 1 where the cast rounded it past the max (its class
    // is Overflow; an unsigned format's negative inputs, Overflow too, are not), else 0 (the
    // block cast's saturated elements under stochastic rounding).
    void quantizePiece(std::span<const float> in, std::span<float> out, QuantTally* tally,
                       const QuantizeOptions& options, std::uint8_t* clipped = nullptr) const;

private:
    QuantConfig m_config;
    CpuKernel m_kernel;
    bool m_identity = false;
    struct Impl;
    std::shared_ptr<const Impl> m_impl;
};

} // namespace plab
