// Sparse varint histogram encoding.
#include "record/histogram_blob.h"

#include <algorithm>
#include <stdexcept>

namespace plab {
namespace {

void putVarint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

std::uint64_t getVarint(std::string_view blob, std::size_t& pos) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= blob.size())
            throw std::invalid_argument("histogram blob ends inside a number");
        const auto byte = static_cast<unsigned char>(blob[pos++]);
        v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    throw std::invalid_argument("histogram blob holds a number longer than 64 bits");
}

} // namespace

std::string encodeBins(std::span<const std::uint64_t> bins) {
    std::string out;
    for (std::size_t b = 0; b < bins.size(); ++b)
        if (const std::uint64_t n = bins[b]) {
            putVarint(out, b);
            putVarint(out, n);
        }
    return out;
}

void decodeBins(std::string_view blob, std::span<std::uint64_t> bins) {
    std::fill(bins.begin(), bins.end(), 0);
    std::size_t pos = 0;
    while (pos < blob.size()) {
        const std::uint64_t bin = getVarint(blob, pos);
        const std::uint64_t count = getVarint(blob, pos);
        if (bin >= bins.size())
            throw std::invalid_argument("histogram blob names bin " + std::to_string(bin) +
                                        " (the histogram has " + std::to_string(bins.size()) + ")");
        bins[bin] = count;
    }
}

std::string encodeHistogram(const std::array<std::uint64_t, kHistBinCount>& histogram) {
    return encodeBins(histogram);
}

std::array<std::uint64_t, kHistBinCount> decodeHistogram(std::string_view blob) {
    std::array<std::uint64_t, kHistBinCount> histogram{};
    decodeBins(blob, histogram);
    return histogram;
}

} // namespace plab
