// The format what-if of the GUI: a sample of a live tensor (tensor_sample.h) cast to every
// element format as it is, to those narrower than FP32's range under a per-tensor amax scale, to
// every block format, with the shares a researcher compares (flushed, subnormal, overflow) and
// the signal-to-quantisation-noise ratio, so that one sees which format and which scaling
// granularity would suit the tensor without retraining. Milliseconds for a 4,096-value sample.
#pragma once

#include "numerics/format_spec.h"
#include "numerics/quant_stats.h"

#include <span>
#include <string>
#include <vector>

namespace plab {

struct FormatOutcome {
    std::string name;
    bool blockFormat = false;
    bool tensorScaled = false; // an element format under a per-tensor amax scale
    // Shares of the nonzero values, as the gradient view's shares line gives them (a ReLU's
    // zeros dilute none of them): flushed (QuantStats::flushedShare), subnormal (as the element
    // format sees them), overflow (saturated or Inf).
    double flushed = 0.0;
    double subnormal = 0.0;
    double overflow = 0.0;
    double sqnrDb = 0.0;      // +Inf for an exact cast
    std::uint64_t values = 0; // how many values the shares count (a sample's or a tensor's)
};

// runLength: the sample's values form rows of this length (block formats make blocks within a
// row; a trailing partial row is a row of its own). Element formats use their default overflow
// (Inf where they have it); the scaled ones saturate. A tensor-scaled row (named like
// "fp8-e4m3, tensor amax") follows its format's row: the sample times (format max / amax) /
// 2^amaxMargin, cast, and scaled back (Transformer Engine's current scaling, as the amax
// policies cast), with the amax of the tensor the sample came from (tensorAmax) where known
// (> 0), else the sample's own (lower, where the tensor's largest values fell outside it).
std::vector<FormatOutcome> compareFormats(std::span<const float> sample, std::size_t runLength,
                                          int amaxMargin = 0, double tensorAmax = 0.0);

// A format's row from counts recorded over the whole tensor (a watched run judges every tensor
// in each of its formats: the record holds the counts and error sums, not the values): the same
// shares as compareFormats' rows, SQNR NaN where the error was not measured.
FormatOutcome recordedOutcome(std::string name, bool blockFormat, const ClassCounts& counts,
                              const QuantError& error);

// Whether `format` gets a tensor-scaled row (narrower than FP32's range, as the amax policies
// scale: FP16, FP8, FP6, FP4), and that row's name.
bool hasTensorScaledRow(const FormatSpec& format);
std::string tensorScaledName(const std::string& format);

} // namespace plab
