// CpuOps: the CPU engine's functions behind TensorOps; host memory, so spans are direct.
#include "engine/cpu_ops.h"

#include "engine/kernel_bodies.h"
#include "nn/linear.h"
#include "nn/matmul.h"
#include "util/transpose.h"
#include "util/vector_clones.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace plab {
namespace {

std::span<float> span(Tensor t) {
    return {t.data, t.size};
}

} // namespace

Tensor CpuOps::allocate(std::size_t n) {
    m_buffers.push_back(std::make_unique<float[]>(n)); // value-initialised: zeros
    return {m_buffers.back().get(), n};
}

std::uint8_t* CpuOps::allocateLabels(std::size_t n) {
    m_labels.push_back(std::make_unique<std::uint8_t[]>(n));
    return m_labels.back().get();
}

void CpuOps::upload(Tensor dst, const float* host) {
    std::copy_n(host, dst.size, dst.data);
}

void CpuOps::uploadLabels(std::uint8_t* dst, const std::uint8_t* host, std::size_t n) {
    std::copy_n(host, n, dst);
}

void CpuOps::download(float* host, Tensor src) {
    std::copy_n(src.data, src.size, host);
}

void CpuOps::copy(Tensor dst, Tensor src) {
    std::copy_n(src.data, std::min(dst.size, src.size), dst.data);
}

Tensor CpuOps::residentRows(const float* host, std::size_t count, std::size_t rowSize) {
    // Host memory is the CPU engine's own: the data set itself, read only.
    return {const_cast<float*>(host), count * rowSize};
}

void CpuOps::gatherRows(Tensor dst, Tensor rows, std::size_t rowSize,
                        std::span<const std::uint32_t> indices) {
    // The rows are scattered over a data set larger than the caches, so each copy would start
    // with a wait on memory that the hardware prefetcher cannot foresee. Asking for the rows a
    // few copies ahead, one cache line at a time, overlaps those waits (a batch of 128
    // Fashion-MNIST rows in isolation: 44-51 -> 29-34 us; the gather is 3-5% of an FP32 step).
    constexpr std::size_t kRowsAhead = 4;
    constexpr std::size_t kLineFloats = 64 / sizeof(float);
    const auto prefetchRow = [&](std::size_t i) {
        const float* row = rows.data + static_cast<std::size_t>(indices[i]) * rowSize;
        for (std::size_t f = 0; f < rowSize; f += kLineFloats)
            __builtin_prefetch(row + f, 0, 3);
    };
    for (std::size_t i = 0; i < std::min(kRowsAhead, indices.size()); ++i)
        prefetchRow(i);
    for (std::size_t i = 0; i < indices.size(); ++i) {
        if (i + kRowsAhead < indices.size())
            prefetchRow(i + kRowsAhead);
        std::copy_n(rows.data + static_cast<std::size_t>(indices[i]) * rowSize, rowSize,
                    dst.data + i * rowSize);
    }
}

void CpuOps::fill(Tensor t, float value) {
    // +0 is all zero bits: memset stores a whole vector register at a time where the loop below
    // is built for SSE2 (the gradients' zeroing before every backward, 1% of an FP32 step).
    if (std::bit_cast<std::uint32_t>(value) == 0u)
        std::memset(t.data, 0, t.size * sizeof(float));
    else
        std::fill_n(t.data, t.size, value);
}

void CpuOps::scale(Tensor t, float factor) {
    // numerics/amax_scaling's cloned loop (AVX2 / AVX-512): the gradients' unscaling under a loss
    // scale was 0.5% of a full-FP8 step in an SSE2 loop here.
    scaleInPlace(span(t), factor);
}

TensorMoments CpuOps::moments(Tensor t) {
    return plab::moments(span(t));
}

namespace {
// An Inf or NaN has every exponent bit set. One branch-free pass as an integer OR, which the
// compiler vectorises (a float sum of x * 0 is one dependent add per element).
PLAB_VECTOR_CLONES
bool noInfOrNaN(const float* x, std::size_t n) {
    std::uint32_t nonFinite = 0;
    for (std::size_t i = 0; i < n; ++i)
        nonFinite |= (std::bit_cast<std::uint32_t>(x[i]) & 0x7F800000u) == 0x7F800000u;
    return nonFinite == 0;
}
} // namespace

bool CpuOps::allFinite(Tensor t) {
    const std::span<float> values = span(t);
    return noInfOrNaN(values.data(), values.size());
}

double CpuOps::sumOfSquares(Tensor t) {
    double sq = 0.0;
    for (float g : span(t))
        sq += static_cast<double>(g) * g;
    return sq;
}

double CpuOps::amax(Tensor t) {
    return amaxOf(span(t));
}

void CpuOps::quantize(const Quantizer& q, Tensor in, Tensor out, QuantStats* stats,
                      const QuantizeOptions& options) {
    q.quantize(span(in), span(out), stats, options);
}

void CpuOps::quantizeScaled(const Quantizer& q, Tensor in, Tensor out, double scale,
                            QuantStats* stats, const QuantizeOptions& options, double* inputAmax) {
    plab::quantizeScaled(q, span(in), span(out), scale, stats, options, inputAmax);
}

BlockQuantizeResult CpuOps::quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                           Tensor in, Tensor out, const BlockLayout& layout,
                                           QuantStats* stats, BlockStats* blockStats,
                                           const QuantizeOptions& options) {
    // Nobody reads the block facts but the statistics: m_blockInfo is working memory.
    return plab::quantizeBlocks(element, scheme, span(in), span(out), layout, stats, blockStats,
                                options, m_blockInfo, BlockRecords::Scratch);
}

QuantError CpuOps::errorMoments(Tensor input, Tensor output) {
    return measureError(span(input), span(output));
}

namespace {

// One group of 16 rows of kernels::Hadamard16Rows: per element the same additions in the same
// order (from 0.0f, k = 0..15, a sign flip each, then x 1/4), so the same bits as the GPU
// engine's body. Sixteen columns at a time with eight output rows' sums held in registers, each
// input row read once per eight output rows: a pass per (output row, input row) pair loaded and
// stored the output row sixteen times and was 3.5% of an NVFP4 step with statistics.
PLAB_VECTOR_CLONES
void hadamardGroup(float* out, const float* in, std::size_t cols, std::uint32_t signs) {
    using V = float __attribute__((vector_size(64)));
    constexpr std::size_t kWidth = 16, kRows = 8;
    // Row j's sign for input row k (before the random diagonal): the parity of j & k.
    auto flips = [](std::uint32_t j, std::uint32_t k) { return (std::popcount(j & k) & 1) != 0; };
    std::size_t c0 = 0;
    for (; c0 + kWidth <= cols; c0 += kWidth)
        for (std::uint32_t first = 0; first < 16; first += kRows) {
            V sums[kRows] = {};
#pragma GCC unroll 16
            for (std::uint32_t k = 0; k < 16; ++k) {
                V v;
                std::memcpy(&v, in + k * cols + c0, sizeof v);
                const V signed_ = ((signs >> k) & 1u) != 0 ? -v : v; // the random diagonal
                const V negated = -signed_;
#pragma GCC unroll 8
                for (std::uint32_t j = 0; j < kRows; ++j)
                    sums[j] += flips(first + j, k) ? negated : signed_;
            }
            for (std::uint32_t j = 0; j < kRows; ++j) {
                const V row = sums[j] * 0.25f;
                std::memcpy(out + (first + j) * cols + c0, &row, sizeof row);
            }
        }
    for (std::uint32_t j = 0; j < 16 && c0 < cols; ++j) { // the last columns, a row at a time
        float* row = out + j * cols;
        for (std::size_t c = c0; c < cols; ++c)
            row[c] = 0.0f;
        for (std::uint32_t k = 0; k < 16; ++k) {
            const bool negative = flips(j, k) != (((signs >> k) & 1u) != 0);
            const float* source = in + k * cols;
            if (negative)
                for (std::size_t c = c0; c < cols; ++c)
                    row[c] += -source[c];
            else
                for (std::size_t c = c0; c < cols; ++c)
                    row[c] += source[c];
        }
        for (std::size_t c = c0; c < cols; ++c)
            row[c] *= 0.25f;
    }
}

} // namespace

void CpuOps::hadamard16(Tensor out, Tensor in, std::size_t rows, std::size_t cols,
                        std::uint32_t signs) {
    const std::size_t whole = rows - rows % 16;
    for (std::size_t first = 0; first < whole; first += 16)
        hadamardGroup(out.data + first * cols, in.data + first * cols, cols, signs);
    // The trailing partial group is copied, as the body does.
    std::copy(in.data + whole * cols, in.data + rows * cols, out.data + whole * cols);
}

void CpuOps::transpose(Tensor out, Tensor in, std::size_t rows, std::size_t cols) {
    transposeMatrix(out.data, in.data, rows, cols);
}

void CpuOps::forward(Layer& layer, float* out, const float* in, const float* weights, int batch,
                     const Accumulation& acc) {
    layer.forward(out, in, weights, batch, acc);
}

void CpuOps::backward(Layer& layer, float* din, float* dweights, const float* dout, const float* in,
                      const float* out, const float* weights, int batch, const Accumulation& acc) {
    layer.backward(din, dweights, dout, in, out, weights, batch, acc);
}

void CpuOps::addColumnSums(float* db, const float* dy, int rows, int cols) {
    plab::addColumnSums(db, dy, rows, cols);
}

void CpuOps::addWeightGradientTransposed(float* dweights, const float* doutT, const float* inT,
                                         int outputs, int inputs, int batch,
                                         const Accumulation& acc) {
    MatrixMap dw(dweights, outputs, inputs);
    matmulNT(dw, ConstMatrixMap(doutT, outputs, batch), ConstMatrixMap(inT, inputs, batch), true,
             acc);
}

LossResult CpuOps::softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                                       int classes, float* dlogits, float gradScale) {
    return plab::softmaxCrossEntropy(logits, labels, batch, classes, dlogits, gradScale);
}

void CpuOps::optimizerUpdate(const OptimizerSettings& settings, OptimizerState state,
                             std::int64_t step, Tensor grad, Tensor master, Tensor update,
                             double lr, const Quantizer& stateFormat, QuantStats* stateStats,
                             const QuantizeOptions& options) {
    computeOptimizerUpdate(settings, step, span(grad), span(master), span(update),
                           span(state.first), span(state.second), lr, stateFormat, stateStats,
                           options);
}

TensorOps::UpdateCounts CpuOps::sgdStepFloat32(const OptimizerSettings& settings, Tensor momentum,
                                               Tensor grad, Tensor master, Tensor /*update*/,
                                               Tensor /*scratch*/, double lr,
                                               const Float32Sgd& casts) {
    UpdateCounts counts;
    plab::sgdStepFloat32(settings, span(grad), span(master), span(momentum), lr,
                         casts.count ? &counts : nullptr);
    // The float32 casts change nothing: only their counting is left, on the results.
    if (casts.stateStats != nullptr)
        casts.stateFormat.quantize(span(momentum), span(momentum), casts.stateStats,
                                   casts.stateOptions);
    if (casts.masterStats != nullptr)
        casts.masterFormat.quantize(span(master), span(master), casts.masterStats,
                                    casts.masterOptions);
    return counts;
}

namespace {

// applyMasterUpdate's passes, cloned for AVX2 / AVX-512 (a subtraction, comparisons and integer
// sums: the same results on every copy).
PLAB_VECTOR_CLONES
void subtractInto(float* next, const float* master, const float* update, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        next[i] = master[i] - update[i];
}

// The nonzero updates and those that left the master unchanged (branch-free: updates are nonzero
// almost everywhere, lost ones random), with the new master stored in the same pass.
PLAB_VECTOR_CLONES
TensorOps::UpdateCounts countUpdatesAndStore(float* master, const float* update, const float* next,
                                             std::size_t n) {
    std::uint64_t updates = 0, lost = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t moved = update[i] != 0.0f ? 1u : 0u;
        updates += moved;
        lost += moved & (next[i] == master[i] ? 1u : 0u);
        master[i] = next[i];
    }
    return {updates, lost};
}

} // namespace

TensorOps::UpdateCounts CpuOps::applyMasterUpdate(Tensor master, Tensor update, Tensor scratch,
                                                  const Quantizer& masterFormat, QuantStats* stats,
                                                  const QuantizeOptions& options, bool count) {
    const std::size_t n = master.size;
    subtractInto(scratch.data, master.data, update.data, n);
    masterFormat.quantize(span(scratch), span(scratch), stats, options);
    UpdateCounts c;
    if (count)
        c = countUpdatesAndStore(master.data, update.data, scratch.data, n);
    else
        std::copy_n(scratch.data, n, master.data);
    return c;
}

} // namespace plab
