// Evenly spaced, aligned runs of a tensor.
#include "stats/tensor_sample.h"

namespace plab {

std::vector<SampleRun> sampleRuns(std::size_t n) {
    if (n <= kSampleRuns * kSampleRunLength)
        return n == 0 ? std::vector<SampleRun>{} : std::vector<SampleRun>{{0, n}};
    const std::size_t whole = n / kSampleRunLength; // runs that fit whole
    std::vector<SampleRun> runs;
    for (std::size_t i = 0; i < kSampleRuns; ++i) {
        const std::size_t run = i * (whole - 1) / (kSampleRuns - 1);
        runs.push_back({run * kSampleRunLength, kSampleRunLength});
    }
    return runs;
}

} // namespace plab
