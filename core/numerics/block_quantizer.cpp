// The CPU's block-scaled cast: the per-block bodies of block_kernels.h over the blocks (spread
// over the pool in fixed block ranges, so results do not depend on the thread count), with the
// fused element quantiser in between.
#include "numerics/block_quantizer.h"

#include "numerics/block_kernels.h"
#include "numerics/reference_quantize.h"
#include "util/thread_pool.h"
#include "util/vector_clones.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace plab {
namespace {} // namespace

blocks::Geometry blockGeometry(const BlockLayout& layout, std::size_t n, int blockSize) {
    if (blockSize < 1)
        throw std::invalid_argument("block size " + std::to_string(blockSize) +
                                    ": expected at least 1");
    blocks::Geometry g;
    g.rows = layout.cols == 0 ? 1 : layout.rows;
    g.cols = layout.cols == 0 ? n : layout.cols;
    g.side = static_cast<std::size_t>(blockSize);
    g.tiles = layout.tiles;
    if (g.rows * g.cols != n)
        throw std::invalid_argument("block layout " + std::to_string(g.rows) + " x " +
                                    std::to_string(g.cols) + " does not hold " + std::to_string(n) +
                                    " elements");
    return g;
}

namespace {

// The per-block bodies over a range of blocks, and NVFP4's tensor amax: the hot loops, cloned
// for AVX2 / AVX-512 (the bodies inline into each copy).
PLAB_VECTOR_CLONES
void scaleBlockRange(const blocks::ScaleBlocks& body, std::size_t first, std::size_t last) {
    for (std::size_t b = first; b < last; ++b)
        body(b);
}

PLAB_VECTOR_CLONES
void dequantizeBlockRange(const blocks::DequantizeBlocks& body, std::size_t first,
                          std::size_t last) {
    for (std::size_t b = first; b < last; ++b)
        body(b);
}

PLAB_VECTOR_CLONES
std::uint32_t nonNanAmaxBits(const float* in, std::size_t n) {
    const blocks::NonNanAmaxBits bits{in};
    std::uint32_t amax = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t a = bits(i);
        amax = a > amax ? a : amax;
    }
    return amax;
}

// Blocks per task: enough elements to amortise a task (as the element quantiser's chunks).
template <class Range>
void overBlocks(std::size_t blocks, std::size_t elements, ThreadPool* pool, const Range& range) {
    constexpr std::size_t kElementsPerTask = 1 << 16;
    const std::size_t perBlock =
        std::max<std::size_t>(1, elements / std::max<std::size_t>(1, blocks));
    const std::size_t blocksPerTask = std::max<std::size_t>(1, kElementsPerTask / perBlock);
    const std::size_t tasks = (blocks + blocksPerTask - 1) / blocksPerTask;
    auto run = [&](std::size_t task) {
        range(task * blocksPerTask, std::min(blocks, (task + 1) * blocksPerTask));
    };
    if (pool == nullptr || pool->threadCount() == 1 || tasks <= 1) {
        for (std::size_t t = 0; t < tasks; ++t)
            run(t);
        return;
    }
    pool->parallelFor(tasks, run);
}

} // namespace

std::size_t blockCount(const BlockLayout& layout, std::size_t n, int blockSize) {
    return blockGeometry(layout, n, blockSize).blockCount();
}

blocks::ScaleBlocks scaleBlocksBody(const Quantizer& element, const BlockScheme& scheme,
                                    const float* in, float* out, BlockInfo* info,
                                    const blocks::Geometry& geometry, float tensorScale,
                                    const QuantizeOptions& options) {
    blocks::ScaleBlocks body{};
    body.in = in;
    body.out = out;
    body.info = info;
    body.geometry = geometry;
    body.rule = makeScaleRule(scheme, element.config().format);
    body.tensorScale = tensorScale;
    body.fourOverSix = scheme.fourOverSix;
    body.elementRule = makeElementRule(element.config());
    body.stochastic = element.config().rounding == Rounding::Stochastic;
    body.seed = options.seed;
    body.stream = options.stream;
    body.firstIndex = options.firstIndex;
    return body;
}

void foldBlockFacts(std::span<const BlockInfo> blocks, const BlockScheme& scheme, QuantStats* stats,
                    BlockStats* blockStats) {
    for (const BlockInfo& b : blocks) {
        // NVFP4 blocks whose scale is 0 were cast as zeros (x * 0): their nonzero inputs were
        // flushed, not true zeros. A GPU's counters may still be on their way (added when they
        // land): unsigned arithmetic makes the order irrelevant.
        if (stats != nullptr && scheme.kind == BlockScaleKind::Nvfp4 && b.scale.decoded == 0.0f &&
            b.nonzero > 0) {
            stats->counts[static_cast<std::size_t>(QuantClass::Zero)] -= b.nonzero;
            stats->counts[static_cast<std::size_t>(QuantClass::Underflow)] += b.nonzero;
        }
        if (blockStats != nullptr)
            blockStats->add(b);
    }
}

BlockQuantizeResult quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                   std::span<const float> in, std::span<float> out,
                                   const BlockLayout& layout, QuantStats* stats,
                                   BlockStats* blockStats, const QuantizeOptions& options,
                                   std::vector<BlockInfo>& blocksOut) {
    if (in.size() != out.size())
        throw std::invalid_argument("quantizeBlocks: input has " + std::to_string(in.size()) +
                                    " elements but output has " + std::to_string(out.size()));
    const std::size_t n = in.size();
    const blocks::Geometry g = blockGeometry(layout, n, scheme.blockSize);
    const std::size_t count = n == 0 ? 0 : g.blockCount();
    blocksOut.assign(count, BlockInfo{});

    BlockQuantizeResult result;
    if (scheme.kind == BlockScaleKind::Nvfp4)
        result.tensorScale =
            blocks::nvfp4TensorScale(element::floatOf(nonNanAmaxBits(in.data(), n)),
                                     static_cast<float>(element.config().format.maxFinite()));
    const blocks::ScaleBlocks scale = scaleBlocksBody(
        element, scheme, in.data(), out.data(), blocksOut.data(), g, result.tensorScale, options);
    overBlocks(count, n, options.pool,
               [&](std::size_t first, std::size_t last) { scaleBlockRange(scale, first, last); });
    element.quantize(out, out, stats, options);
    const blocks::DequantizeBlocks dequantize{out.data(), blocksOut.data(), g, result.tensorScale};
    overBlocks(count, n, options.pool, [&](std::size_t first, std::size_t last) {
        dequantizeBlockRange(dequantize, first, last);
    });

    foldBlockFacts(blocksOut, scheme, stats, blockStats);
    return result;
}

} // namespace plab
