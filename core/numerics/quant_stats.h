// What the fused quantise pass counts: each element's class, amax, and a log2|x| histogram of the
// unquantised inputs. True zeros are kept apart from values the cast flushed to zero.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace plab {

enum class QuantClass : std::uint8_t {
    Zero,      // input was +-0: not an underflow
    Underflow, // nonzero input that the cast flushed to zero (or clamped, for formats with no zero)
    Subnormal, // result is a subnormal of the format
    Normal,    // result is a normal finite value
    Overflow,  // finite input rounded past max finite (saturated, Inf or NaN), or an Inf input;
               // for unsigned formats also negative inputs
    NaN,       // input was NaN
};
inline constexpr std::size_t kQuantClassCount = 6;
const char* toString(QuantClass c);

// log2|x| histogram layout: 4 bins per binade over float32's whole range, 2^-149 .. 2^128, with
// separate bins for zero, Inf and NaN. Bin b (1 <= b <= kHistLogBins) holds
// 2^(kHistMinExponent + (b-1)/4) <= |x| < 2^(kHistMinExponent + b/4), so multiplying every value
// by 2^(k/4) shifts the histogram by exactly k bins.
inline constexpr int kHistBinsPerBinade = 4;
inline constexpr int kHistMinExponent = -149;
inline constexpr int kHistMaxExponent = 127;
inline constexpr int kHistLogBins = (kHistMaxExponent - kHistMinExponent + 1) * kHistBinsPerBinade;
inline constexpr int kHistZeroBin = 0;
inline constexpr int kHistInfBin = kHistLogBins + 1;
inline constexpr int kHistNanBin = kHistLogBins + 2;
inline constexpr int kHistBinCount = kHistLogBins + 3;

// The bin of one value; the readable definition the fused kernels are tested against.
int histogramBin(float x);
// log2 of the lower edge of log bin b (1 <= b <= kHistLogBins).
double histogramBinLowerLog2(int bin);

// How far a cast moved a tensor, measured on statistics steps against the unquantised values
// (finite pairs only: Inf and NaN are counted as classes instead).
struct QuantError {
    std::uint64_t count = 0; // finite (input, output) pairs measured; 0: not measured
    double signalSq = 0.0;   // sum x^2
    double errorSq = 0.0;    // sum (q - x)^2
    double outputSq = 0.0;   // sum q^2

    bool measured() const { return count > 0; }
    double mse() const;               // errorSq / count
    double sqnrDb() const;            // 10 log10(signalSq / errorSq); +Inf for an exact cast
    double normRelativeError() const; // (||q|| - ||x||) / ||x||, signed
    void merge(const QuantError& other);
};

// The sums of QuantError over a cast's input and output (same sizes), in a fixed order that
// every path keeps (the quantise kernels' fused sums too), so that a tensor's metrics do not
// depend on the instruction set or thread count: element i into lane i % kErrorLanes, each lane
// summed in element order within each chunk of kErrorChunk elements from the tensor's start,
// each chunk's lanes added into running lanes in chunk order (a chunk is one thread's task),
// and the lanes added up in lane order at the end.
inline constexpr std::size_t kErrorLanes = 8;
inline constexpr std::size_t kErrorChunk = std::size_t{1} << 16;
QuantError measureError(std::span<const float> input, std::span<const float> output);

// QuantError's sums in that order before the lanes are added up: one chunk's, or a tensor's
// chunks so far. Plain data without member initialisers (value-initialise it: `ErrorLanes e{}`):
// the quantise kernels, built per instruction set, fill it too and must share no inline code
// with each other, an implicit constructor included.
struct ErrorLanes {
    double signal[kErrorLanes];
    double error[kErrorLanes];
    double output[kErrorLanes];
    std::uint64_t count;

    void add(const ErrorLanes& chunk); // the next chunk's sums, lane by lane
    QuantError total() const;          // the lanes added up in lane order
};

using ClassCounts = std::array<std::uint64_t, kQuantClassCount>;
// QuantStats::flushedShare of these counts (for readers that keep counts without histograms).
double flushedShare(const ClassCounts& counts);

struct QuantStats {
    ClassCounts counts{};
    float amax = 0.0f; // largest |x| over non-NaN inputs (Inf if there was one)
    std::array<std::uint64_t, kHistBinCount> histogram{};
    QuantError error; // filled by the trainer on statistics steps (not by the fused pass)

    std::uint64_t count(QuantClass c) const { return counts[static_cast<std::size_t>(c)]; }
    std::uint64_t total() const;
    double fraction(QuantClass c) const; // of all elements (a class distribution)
    // The one definition of "flushed" that every table, plot, log and report uses: nonzero
    // inputs that came out as zero (QuantClass::Underflow) over the nonzero inputs (total minus
    // true zeros). A ReLU's zeros were never flushed, and do not dilute the share. 0 when every
    // input was zero.
    double flushedShare() const;
    void merge(const QuantStats& other);
    void reset() { *this = QuantStats{}; }
};

} // namespace plab
