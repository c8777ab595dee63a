// The run record's compact histogram: only the non-empty bins of a QuantStats histogram, as
// pairs of LEB128 varints (bin index, count) in increasing bin order. A typical tensor fills
// 30-60 of the 1,111 bins, so a histogram takes ~100-200 bytes instead of ~1,100 CSV rows' worth.
#pragma once

#include "numerics/quant_stats.h"

#include <span>
#include <string>
#include <string_view>

namespace plab {

// Any histogram (the block statistics' too); decoding fills `bins`, which gives the bin count.
std::string encodeBins(std::span<const std::uint64_t> bins);
// Throws std::invalid_argument for a truncated blob or a bin out of range (a damaged record).
void decodeBins(std::string_view blob, std::span<std::uint64_t> bins);

std::string encodeHistogram(const std::array<std::uint64_t, kHistBinCount>& histogram);
std::array<std::uint64_t, kHistBinCount> decodeHistogram(std::string_view blob);

} // namespace plab
