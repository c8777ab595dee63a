// The format what-if of the GUI: a sample of a live tensor (tensor_sample.h) cast to every
// element format and every block format at once, with the shares a researcher compares (flushed,
// subnormal, overflow) and the signal-to-quantisation-noise ratio, so that one sees which format
// would suit the tensor without retraining. Milliseconds for a 4,096-value sample.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace plab {

struct FormatOutcome {
    std::string name;
    bool blockFormat = false;
    double flushed = 0.0;   // of the nonzero values (QuantStats::flushedShare)
    double subnormal = 0.0; // of all values, as the element format sees them
    double overflow = 0.0;  // of all values (saturated or Inf)
    double sqnrDb = 0.0;    // +Inf for an exact cast
};

// runLength: the sample's values form rows of this length (block formats make blocks within a
// row; a trailing partial row is a row of its own). Element formats use their default overflow
// (Inf where they have it), block formats saturate.
std::vector<FormatOutcome> compareFormats(std::span<const float> sample, std::size_t runLength);

} // namespace plab
