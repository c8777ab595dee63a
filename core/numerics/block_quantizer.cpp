// The CPU's block-scaled cast: the per-block bodies of block_kernels.h over the blocks (spread
// over the pool in fixed block ranges, so results do not depend on the thread count), with the
// fused element quantiser in between.
#include "numerics/block_quantizer.h"

#include "numerics/block_kernels.h"
#include "numerics/block_range_passes.h"
#include "numerics/reference_quantize.h"
#include "util/thread_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace plab {

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
    body.clipBits =
        blocks::clipThresholdBits(body.elementRule, body.rule.maxElement, body.stochastic);
    body.magnitudeMask = element.config().format.isSigned ? 0x7FFFFFFFu : 0xFFFFFFFFu;
    return body;
}

namespace {

// Stochastic rounding: each block's saturated elements, from the cast's clip flags of the chunk
// that starts at element chunkBegin (the scale pass left the candidates in `saturated`; a block
// without candidates has none).
void countStochasticClips(BlockInfo* info, const blocks::Geometry& g, std::size_t first,
                          std::size_t last, std::size_t chunkBegin, const std::uint8_t* clipped) {
    blocks::Geometry::Place at = g.place(first);
    for (std::size_t b = first; b < last; ++b, g.advance(at)) {
        if (info[b].saturated == 0)
            continue;
        std::uint32_t count = 0;
        g.forEachSpan(at, [&](std::size_t begin, std::size_t length) {
            const std::uint8_t* flags = clipped + (begin - chunkBegin);
            for (std::size_t i = 0; i < length; ++i)
                count += flags[i];
        });
        info[b].saturated = count;
    }
}

} // namespace

std::uint64_t foldBlockStats(std::span<const BlockInfo> blocks, const BlockScheme& scheme,
                             BlockStats* blockStats) {
    // NVFP4 blocks whose scale is 0 were cast as zeros (x * 0): their nonzero inputs were
    // flushed, not true zeros. (No other kind has a zero scale.)
    const bool zeroScales = scheme.kind == BlockScaleKind::Nvfp4;
    if (blockStats != nullptr) {
        const std::uint64_t flushed = blockStats->addRange(blocks.data(), blocks.size());
        return zeroScales ? flushed : 0;
    }
    std::uint64_t flushed = 0;
    if (zeroScales)
        for (const BlockInfo& b : blocks)
            flushed += b.scale.decoded == 0.0f ? b.nonzero : 0u;
    return flushed;
}

void countZeroScaleFlushes(QuantStats* stats, std::uint64_t flushed) {
    // A GPU's counters may still be on their way (added when they land): unsigned arithmetic
    // makes the order irrelevant.
    if (stats == nullptr)
        return;
    stats->counts[static_cast<std::size_t>(QuantClass::Zero)] -= flushed;
    stats->counts[static_cast<std::size_t>(QuantClass::Underflow)] += flushed;
}

void foldBlockFacts(std::span<const BlockInfo> blocks, const BlockScheme& scheme, QuantStats* stats,
                    BlockStats* blockStats) {
    countZeroScaleFlushes(stats, foldBlockStats(blocks, scheme, blockStats));
}

BlockQuantizeResult quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                   std::span<const float> in, std::span<float> out,
                                   const BlockLayout& layout, QuantStats* stats,
                                   BlockStats* blockStats, const QuantizeOptions& options,
                                   std::vector<BlockInfo>& blocksOut, BlockRecords records) {
    const bool counting = stats != nullptr || blockStats != nullptr;
    if (records == BlockRecords::ScalesOnly && counting)
        throw std::invalid_argument("quantizeBlocks: scales only with statistics asked for");
    const bool scalesOnly = !counting && records != BlockRecords::All;
    if (in.size() != out.size())
        throw std::invalid_argument("quantizeBlocks: input has " + std::to_string(in.size()) +
                                    " elements but output has " + std::to_string(out.size()));
    const std::size_t n = in.size();
    const blocks::Geometry g = blockGeometry(layout, n, scheme.blockSize);
    const std::size_t count = n == 0 ? 0 : g.blockCount();

    BlockQuantizeResult result;
    blocks::ScaleBlocks scale =
        scaleBlocksBody(element, scheme, in.data(), out.data(), nullptr, g, 1.0f, options);
    scale.deferStochasticClips = scale.stochastic; // counted from the cast's flags below
    scale.scalesOnly = scalesOnly;
    scale.prefetch = n >= (std::size_t{1} << 19); // 2 MiB of input: past a core's L2
    const bool fused = blocks::fusesFactsAndScale(scale);
    // Scratch records per task where the passes are fused (they need no other task's blocks)
    // and rows hold whole blocks (a task's blocks are then a flat run of equal blocks).
    const bool taskRecords = records == BlockRecords::Scratch && fused && g.cols % g.side == 0;
    if (!taskRecords)
        blocksOut.resize(count); // every field of every block is written by the passes
    scale.info = blocksOut.data();
    const bool clipFlags = scale.stochastic && !scalesOnly;
    // The three passes run on one cache-sized chunk of whole units (a block, or a row group of
    // tiles) at a time, so the tensor goes through memory once instead of three times. Chunks
    // are grouped into tasks of fixed ranges: the result does not depend on the thread count.
    constexpr std::size_t kChunkElements = 4096, kTaskElements = 1 << 16;
    const std::size_t unit = g.blocksPerUnit();
    const std::size_t units = (count + unit - 1) / unit;
    const std::size_t unitElements = std::max<std::size_t>(1, n / std::max<std::size_t>(1, units));
    const std::size_t unitsPerChunk = std::max<std::size_t>(1, kChunkElements / unitElements);
    const std::size_t chunks = (units + unitsPerChunk - 1) / unitsPerChunk;
    const std::size_t chunksPerTask =
        std::max<std::size_t>(1, kTaskElements / (unitsPerChunk * unitElements));
    const std::size_t tasks = (chunks + chunksPerTask - 1) / chunksPerTask;
    const bool parallel = options.pool != nullptr && options.pool->threadCount() > 1 && tasks > 1;
    auto overTasks = [&](const auto& runTask) {
        if (parallel) {
            options.pool->parallelFor(tasks, runTask);
        } else {
            for (std::size_t t = 0; t < tasks; ++t)
                runTask(t);
        }
    };
    auto chunkBlocks = [&](std::size_t c) {
        return std::pair{c * unitsPerChunk * unit, std::min(count, (c + 1) * unitsPerChunk * unit)};
    };
    auto taskChunks = [&](std::size_t task) {
        return std::pair{task * chunksPerTask, std::min(chunks, (task + 1) * chunksPerTask)};
    };

    // NVFP4 needs the tensor amax before any scale. Where the facts and the scales are found in
    // one pass per chunk (fusesFactsAndScale), a pass of its own finds the amax; elsewhere the
    // blocks' facts are found first, over the whole tensor, and the amax taken from them.
    const bool factsFirst = scheme.kind == BlockScaleKind::Nvfp4 && !fused;
    if (scheme.kind == BlockScaleKind::Nvfp4) {
        std::vector<std::uint32_t> taskAmax(tasks, 0); // of non-NaN |x|, Inf included
        overTasks([&](std::size_t task) {
            const auto [firstChunk, lastChunk] = taskChunks(task);
            if (firstChunk >= lastChunk)
                return;
            const std::size_t first = chunkBlocks(firstChunk).first,
                              last = chunkBlocks(lastChunk - 1).second;
            if (fused) {
                const std::size_t begin = g.elementBegin(first);
                taskAmax[task] =
                    blocks::nonNanAmaxBits(in.data() + begin, g.elementBegin(last) - begin);
                return;
            }
            blocks::findFactsRange(scale, first, last);
            for (std::size_t b = first; b < last; ++b)
                taskAmax[task] = std::max(taskAmax[task], element::bitsOf(blocksOut[b].amax));
        });
        const std::uint32_t amax =
            taskAmax.empty() ? 0u : *std::max_element(taskAmax.begin(), taskAmax.end());
        result.inputAmax = element::floatOf(amax);
        result.tensorScale = blocks::nvfp4TensorScale(
            result.inputAmax, static_cast<float>(element.config().format.maxFinite()));
        scale.tensorScale = result.tensorScale;
    }
    const blocks::DequantizeBlocks dequantize{out.data(), blocksOut.data(), g, result.tensorScale,
                                              scalesOnly};

    // Each task's blocks go into the statistics while their facts are in cache (a task's are
    // at most 2^16 / 16 blocks of 32 bytes): per task when tasks run in parallel, merged in task
    // order afterwards (integer sums: any order gives the same).
    std::vector<QuantTally> tallies(stats == nullptr ? 0 : (parallel ? tasks : 1));
    std::vector<BlockStats> taskBlockStats(blockStats != nullptr && parallel ? tasks : 0);
    // Per task, the inputs flushed by NVFP4 blocks whose scale is 0 (foldBlockStats).
    std::vector<std::uint64_t> zeroScaleFlushed(tasks, 0);
    overTasks([&](std::size_t task) {
        const auto [firstChunk, lastChunk] = taskChunks(task);
        if (firstChunk >= lastChunk)
            return;
        QuantTally* tally = tallies.empty() ? nullptr : &tallies[parallel ? task : 0];
        BlockStats* taskStats =
            parallel && blockStats != nullptr ? &taskBlockStats[task] : blockStats;
        const std::size_t taskFirst = chunkBlocks(firstChunk).first,
                          taskLast = chunkBlocks(lastChunk - 1).second;
        // The passes see the task's blocks through taskScale / taskDequantize: the whole tensor
        // (block b at b), or with task records its flat run of blocks (block b at b - base, in
        // the thread's scratch).
        blocks::ScaleBlocks taskScale = scale;
        blocks::DequantizeBlocks taskDequantize = dequantize;
        std::size_t base = 0;
        BlockInfo* info = blocksOut.data();
        if (taskRecords) {
            thread_local std::vector<BlockInfo> scratch; // at most 2^16 / 16 blocks: 128 KiB
            scratch.resize(std::max(scratch.size(), taskLast - taskFirst));
            base = taskFirst;
            info = scratch.data();
            const blocks::Geometry flat{1, (taskLast - taskFirst) * g.side, g.side, false};
            const std::size_t offset = g.elementBegin(taskFirst);
            taskScale.in = in.data() + offset;
            taskScale.out = out.data() + offset;
            taskScale.info = info;
            taskScale.geometry = flat;
            taskDequantize.values = out.data() + offset;
            taskDequantize.info = info;
            taskDequantize.geometry = flat;
        }
        std::vector<std::uint8_t> clipped; // stochastic rounding: the cast's clip flags
        for (std::size_t c = firstChunk; c < lastChunk; ++c) {
            const auto [first, last] = chunkBlocks(c);
            if (fused) {
                blocks::factsAndScaleRange(taskScale, first - base, last - base);
            } else {
                if (!factsFirst)
                    blocks::findFactsRange(taskScale, first, last);
                blocks::scaleRange(taskScale, first, last);
            }
            const std::size_t begin = g.elementBegin(first), end = g.elementBegin(last);
            QuantizeOptions piece = options;
            piece.firstIndex += begin;
            const std::span<float> chunk = out.subspan(begin, end - begin);
            if (clipFlags)
                clipped.resize(end - begin);
            element.quantizePiece(chunk, chunk, tally, piece, clipFlags ? clipped.data() : nullptr);
            if (clipFlags)
                countStochasticClips(info, taskScale.geometry, first - base, last - base,
                                     taskScale.geometry.elementBegin(first - base), clipped.data());
            blocks::dequantizeRange(taskDequantize, first - base, last - base);
        }
        if (!scalesOnly)
            zeroScaleFlushed[task] += foldBlockStats(
                std::span<const BlockInfo>(info + (taskFirst - base), taskLast - taskFirst), scheme,
                taskStats);
    });
    for (const BlockStats& s : taskBlockStats)
        blockStats->merge(s);
    if (stats != nullptr) {
        for (const QuantTally& tally : tallies)
            tally.addTo(*stats);
        for (const std::uint64_t flushed : zeroScaleFlushed)
            countZeroScaleFlushes(stats, flushed);
    }
    return result;
}

} // namespace plab
