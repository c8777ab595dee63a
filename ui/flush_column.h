// FlushColumn: one column of the flush heat map: at a statistics step, per stage, the share of
// nonzero activation gradients flushed to zero.
#pragma once

#include <cstdint>
#include <vector>

namespace plab {

struct FlushColumn {
    std::int64_t step;
    std::vector<double> flushed;
};

} // namespace plab
