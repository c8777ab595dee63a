// Fuzz target: the block-scaled cast (quantizeBlocks: MX, NVFP4, FP32 blocks, as the engine runs
// them) against the scalar reference written from the formulas (tests/numerics/block_reference.h)
// on whatever tensor, shape, block size and element format the fuzzer makes: the values' bits,
// the class counts and histogram, every block's facts; then the same cast recording scales only,
// and as the engine casts (scratch records), with statistics and without.
//
// Input layout: the element format's text up to the first '\n'; byte 0 the scheme (bits 0-1: MX,
// NVFP4, FP32 blocks; bit 2: MX ceil, NVFP4 4/6 or FP32 power-of-two scales; bit 3: square tiles;
// bits 4-5: the rounding, whose random seed is the whole byte); byte 1 the block size (bits 0-3
// pick one of kBlockSizes); byte 2 the columns (0: one row of everything); the rest float32
// values, as many whole rows as there are.
#include "../numerics/block_reference.h"
#include "fuzz_checks.h"
#include "numerics/block_quantizer.h"
#include "numerics/format_spec.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

using plab::fuzz::failCheck;
using plab::fuzz::sameBits;

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!sameBits(a[i], b[i]))
            return false;
    return true;
}

// The recipes' sizes first (NVFP4 16, MX 32, FP32 blocks 128), then small and odd ones, which
// put partial blocks and partial 16-block groups everywhere.
constexpr std::array<int, 16> kBlockSizes = {16, 32, 128, 1,  2,  3,  4,  5,
                                             7,  8,  9,   15, 17, 31, 33, 64};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = input.find('\n');
    if (newline == std::string_view::npos || size - newline - 1 < 3 + sizeof(float))
        return 0;
    plab::FormatSpec element;
    try {
        element = plab::parseFormat(input.substr(0, newline));
    } catch (const plab::FormatError&) {
        return 0; // the format parser has a fuzz target of its own
    }
    const std::uint8_t* header = data + newline + 1;
    const std::uint8_t schemeByte = header[0];

    plab::BlockScheme scheme;
    constexpr plab::BlockScaleKind kKinds[] = {
        plab::BlockScaleKind::Mx, plab::BlockScaleKind::Nvfp4, plab::BlockScaleKind::Fp32,
        plab::BlockScaleKind::Mx};
    scheme.kind = kKinds[schemeByte & 3];
    const bool option = (schemeByte & 4) != 0;
    scheme.scaleRounding = option ? plab::ScaleRounding::Ceil : plab::ScaleRounding::Floor;
    scheme.fourOverSix = option && scheme.kind == plab::BlockScaleKind::Nvfp4;
    scheme.powerOfTwoScales = option && scheme.kind == plab::BlockScaleKind::Fp32;
    scheme.blockSize = kBlockSizes[header[1] & 15];
    const bool tiles = (schemeByte & 8) != 0;

    const std::size_t valueCount = (size - newline - 4) / sizeof(float);
    const std::size_t cols = header[2] == 0 ? valueCount : header[2];
    const std::size_t rows = valueCount / cols;
    if (rows == 0)
        return 0;
    std::vector<float> in(rows * cols);
    std::memcpy(in.data(), header + 3, in.size() * sizeof(float));

    // The element cast saturates, as block_quantizer.h asks and the engine does.
    const plab::QuantConfig config{element, plab::kAllRoundings[(schemeByte >> 4) & 3],
                                   plab::Overflow::Saturate};
    plab::QuantizeOptions options;
    options.seed = schemeByte;
    options.stream = 7;
    const plab::BlockLayout layout{rows, cols, tiles};
    const plab::Quantizer quantizer(config);

    const plab::block_reference::RefResult want = plab::block_reference::reference(
        config, scheme, in, rows, cols, tiles, options.seed, options.stream);
    std::vector<float> out(in.size());
    plab::QuantStats stats;
    std::vector<plab::BlockInfo> info;
    plab::quantizeBlocks(quantizer, scheme, in, out, layout, &stats, nullptr, options, info);
    if (!sameBits(out, want.out))
        failCheck("block cast disagrees with the reference");
    if (stats.counts != want.stats.counts || stats.histogram != want.stats.histogram)
        failCheck("block cast's counts or histogram disagree with the reference");
    if (info.size() != want.blocks.size())
        failCheck("block cast made another number of blocks than the reference");
    for (std::size_t b = 0; b < info.size(); ++b) {
        const plab::BlockInfo& got = info[b];
        const plab::block_reference::RefBlock& ref = want.blocks[b];
        if (!sameBits(got.amax, ref.amax) || !sameBits(got.finiteAmax, ref.finiteAmax) ||
            !sameBits(got.minNonzero, ref.minNonzero) ||
            !sameBits(got.scale.decoded, ref.decoded) || got.nonzero != ref.nonzero ||
            got.nonzeroOut != ref.nonzeroOut || got.saturated != ref.saturated)
            failCheck("a block's facts disagree with the reference");
    }

    // Scales only (no statistics): the same values and scales.
    std::vector<float> valuesOnly(in.size());
    std::vector<plab::BlockInfo> scales;
    plab::quantizeBlocks(quantizer, scheme, in, valuesOnly, layout, nullptr, nullptr, options,
                         scales, plab::BlockRecords::ScalesOnly);
    if (!sameBits(valuesOnly, want.out))
        failCheck("block cast recording scales only disagrees with the reference");
    if (scales.size() != info.size())
        failCheck("block cast recording scales only made another number of blocks");
    for (std::size_t b = 0; b < scales.size(); ++b)
        if (!sameBits(scales[b].scale.decoded, info[b].scale.decoded) ||
            !sameBits(scales[b].scale.toElement, info[b].scale.toElement))
            failCheck("block cast recording scales only chose other scales");

    // As the engine casts: scratch records, with statistics and without.
    plab::BlockStats wantBlocks;
    wantBlocks.addRange(info.data(), info.size());
    std::vector<float> scratchOut(in.size());
    std::vector<plab::BlockInfo> scratch;
    plab::QuantStats scratchStats;
    plab::BlockStats scratchBlocks;
    plab::quantizeBlocks(quantizer, scheme, in, scratchOut, layout, &scratchStats, &scratchBlocks,
                         options, scratch, plab::BlockRecords::Scratch);
    if (!sameBits(scratchOut, want.out) || scratchStats.counts != want.stats.counts ||
        scratchStats.histogram != want.stats.histogram)
        failCheck("block cast with scratch records disagrees with the reference");
    if (scratchBlocks.blocks != wantBlocks.blocks ||
        scratchBlocks.zeroBlocks != wantBlocks.zeroBlocks ||
        scratchBlocks.flushedBlocks != wantBlocks.flushedBlocks ||
        scratchBlocks.saturatedBlocks != wantBlocks.saturatedBlocks ||
        scratchBlocks.flushedInLiveBlocks != wantBlocks.flushedInLiveBlocks ||
        scratchBlocks.liveElements != wantBlocks.liveElements ||
        scratchBlocks.scaleHistogram != wantBlocks.scaleHistogram ||
        scratchBlocks.rangeHistogram != wantBlocks.rangeHistogram)
        failCheck("block statistics with scratch records disagree with the recorded blocks'");
    plab::quantizeBlocks(quantizer, scheme, in, scratchOut, layout, nullptr, nullptr, options,
                         scratch, plab::BlockRecords::Scratch);
    if (!sameBits(scratchOut, want.out))
        failCheck("block cast with scratch records, without statistics, disagrees");
    return 0;
}
