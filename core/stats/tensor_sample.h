// The sample of a live tensor kept on statistics steps for the format what-if (what_if_formats.h):
// up to kSampleRuns runs of kSampleRunLength consecutive values at evenly spaced offsets, each
// starting at a multiple of kSampleRunLength, so that the blocks of 16, 32 and 128 a block format
// forms along a row stay whole in the sample. A tensor of at most kSampleRuns x kSampleRunLength
// values is kept whole. Deterministic: the same tensor gives the same sample.
#pragma once

#include <cstddef>
#include <vector>

namespace plab {

inline constexpr std::size_t kSampleRunLength = 128;
inline constexpr std::size_t kSampleRuns = 32;

struct SampleRun {
    std::size_t offset = 0, length = 0;
};

// The runs of a tensor of n values.
std::vector<SampleRun> sampleRuns(std::size_t n);

} // namespace plab
