// Matrix products: one Eigen expression each; the emulated narrow accumulator splits the inner
// dimension into chunks and rounds the partial sum after each.
#include "nn/matmul.h"

#include "numerics/quantizer.h"
#include "util/thread_pool.h"
#include "util/transpose.h"
#include "util/vector_clones.h"

#if defined(PLAB_HAVE_OPENBLAS)
#include <cblas.h>
#endif

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace plab {
namespace {

void roundInPlace(MatrixMap m, const Accumulation& acc) {
    std::span<float> values(m.data(), static_cast<std::size_t>(m.size()));
    QuantizeOptions options;
    options.pool = acc.pool; // the quantiser's fixed ranges: the same bits on any thread count
    acc.quantizer->quantize(values, values, nullptr, options);
}

} // namespace

bool hasFp32Range(const QuantConfig& c) {
    const FormatSpec& f = c.format;
    return f.exponentBits == 8 && f.bias == 127 && f.subnormals && f.isSigned && f.hasZero &&
           f.specials == SpecialValues::Ieee && f.mantissaBits < 23 &&
           c.rounding == Rounding::NearestEven && c.overflow == Overflow::Inf;
}

namespace {

// chunk[j] <- round(chunk[j] + a * b[j]) for the FP32-range formats (hasFp32Range): the hot loop
// of promoted products, compiled for AVX-512 and AVX2 too (picked at load time where the CPU
// has them); the arithmetic is the same on every path.
PLAB_VECTOR_CLONES
void addRoundedRow(float* chunk, const float* b, float a, std::size_t n, int drop,
                   std::uint32_t half, std::uint32_t keep) {
    for (std::size_t j = 0; j < n; ++j) {
        const float sum = chunk[j] + a * b[j];
        const std::uint32_t u = std::bit_cast<std::uint32_t>(sum);
        chunk[j] = std::bit_cast<float>((u + half + ((u >> drop) & 1u)) & keep);
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi" // the vectors never cross a call (inlined)
// The same for 8 rows at once, products i in [first, last), 16 columns at a time held in
// registers across the products (the row at a time above loads and stores its sums for every
// product): a[r * aStride + i] times row i of b (stride n). Same operations, same order.
PLAB_VECTOR_CLONES
void addRoundedTile8(float* chunk, std::size_t width, const float* a, std::size_t aStride,
                     const float* b, std::size_t first, std::size_t last, int drop,
                     std::uint32_t half, std::uint32_t keep) {
    using F16 = float __attribute__((vector_size(64)));
    using U16 = std::uint32_t __attribute__((vector_size(64)));
    constexpr std::size_t kRows = 8;
    std::size_t j0 = 0;
    for (; j0 + 16 <= width; j0 += 16) {
        F16 sums[kRows];
        for (std::size_t r = 0; r < kRows; ++r)
            __builtin_memcpy(&sums[r], chunk + r * width + j0, sizeof(F16));
        for (std::size_t i = first; i < last; ++i) {
            F16 bi;
            __builtin_memcpy(&bi, b + i * width + j0, sizeof bi);
            for (std::size_t r = 0; r < kRows; ++r) {
                const F16 sum = sums[r] + a[r * aStride + i] * bi;
                const U16 u = (U16)sum;
                sums[r] = (F16)((u + half + ((u >> drop) & 1u)) & keep);
            }
        }
        for (std::size_t r = 0; r < kRows; ++r)
            __builtin_memcpy(chunk + r * width + j0, &sums[r], sizeof(F16));
    }
    if (j0 < width) // the last columns, a row at a time
        for (std::size_t i = first; i < last; ++i)
            for (std::size_t r = 0; r < kRows; ++r)
                addRoundedRow(chunk + r * width + j0, b + i * width + j0, a[r * aStride + i],
                              width - j0, drop, half, keep);
}
#pragma GCC diagnostic pop
#define PLAB_HAVE_ROUNDED_TILE 1
#endif

constexpr Eigen::Index kPromotedTile = 8; // rows of C at a time (addRoundedTile8's)

// Rows [firstRow, lastRow) of C (M, N) [+]= A (M, K) B (K, N) with promotion (see Accumulation):
// a tile of rows of C at a time, each product row of B read once per tile (from L1) while the
// tile's chunk sums take it, rounded after every product added.
void promotedRows(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
                  const Accumulation& acc, Eigen::Index firstRow, Eigen::Index lastRow) {
    constexpr Eigen::Index kTile = kPromotedTile;
    const Eigen::Index k = a.cols(), n = b.cols();
    const auto width = static_cast<std::size_t>(n);
    const QuantConfig& config = acc.quantizer->config();
    const bool fast = hasFp32Range(config);
    const int drop = 23 - config.format.mantissaBits;
    const std::uint32_t half = drop > 0 ? (1u << (drop - 1)) - 1u : 0u;
    const std::uint32_t keep = ~((1u << drop) - 1u);
    std::vector<float> total(kTile * width), chunk(kTile * width);
    for (Eigen::Index first = firstRow; first < lastRow; first += kTile) {
        const Eigen::Index rows = std::min(kTile, lastRow - first);
        for (Eigen::Index r = 0; r < rows; ++r)
            for (Eigen::Index j = 0; j < n; ++j)
                total[static_cast<std::size_t>(r) * width + static_cast<std::size_t>(j)] =
                    accumulate ? c(first + r, j) : 0.0f;
        for (Eigen::Index start = 0; start < k; start += acc.promoteEvery) {
            const Eigen::Index end = std::min<Eigen::Index>(k, start + acc.promoteEvery);
            std::fill(chunk.begin(), chunk.end(), 0.0f);
#if defined(PLAB_HAVE_ROUNDED_TILE)
            if (fast && rows == kTile) {
                addRoundedTile8(chunk.data(), width, a.data() + first * k,
                                static_cast<std::size_t>(k), b.data(),
                                static_cast<std::size_t>(start), static_cast<std::size_t>(end),
                                drop, half, keep);
                for (std::size_t j = 0; j < total.size(); ++j)
                    total[j] += chunk[j];
                continue;
            }
#endif
            for (Eigen::Index i = start; i < end; ++i) {
                const float* bi = b.data() + i * n;
                for (Eigen::Index r = 0; r < rows; ++r) {
                    float* row = chunk.data() + static_cast<std::size_t>(r) * width;
                    const float ai = a(first + r, i);
                    if (fast) {
                        addRoundedRow(row, bi, ai, width, drop, half, keep);
                        continue;
                    }
                    for (std::size_t j = 0; j < width; ++j)
                        row[j] += ai * bi[j];
                    // The random words the GPU's kernel body draws: element (row, j), stream
                    // i + 1.
                    QuantizeOptions words;
                    words.stream = static_cast<std::uint64_t>(i) + 1;
                    words.firstIndex = static_cast<std::uint64_t>((first + r) * n);
                    const std::span<float> values(row, width);
                    acc.quantizer->quantize(values, values, nullptr, words);
                }
            }
            for (std::size_t j = 0; j < total.size(); ++j)
                total[j] += chunk[j];
        }
        for (Eigen::Index r = 0; r < rows; ++r)
            for (Eigen::Index j = 0; j < n; ++j)
                c(first + r, j) =
                    total[static_cast<std::size_t>(r) * width + static_cast<std::size_t>(j)];
    }
}

// The whole product: a tile's rows of C depend on nothing else, so the tiles are spread over
// acc.pool in ranges, and every element gets the same operations in the same order on any
// number of threads.
void promoted(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc) {
    const Eigen::Index m = a.rows(), tiles = (m + kPromotedTile - 1) / kPromotedTile;
    const std::size_t threads = acc.pool != nullptr ? acc.pool->threadCount() : 1;
    if (threads < 2 || tiles < 2)
        return promotedRows(c, a, b, accumulate, acc, 0, m);
    // A few ranges per thread, so that one slow range does not leave the others idle.
    const auto ranges = static_cast<Eigen::Index>(
        std::min<std::size_t>(static_cast<std::size_t>(tiles), 4 * threads));
    acc.pool->parallelFor(static_cast<std::size_t>(ranges), [&](std::size_t range) {
        const auto r = static_cast<Eigen::Index>(range);
        const Eigen::Index firstTile = tiles * r / ranges, lastTile = tiles * (r + 1) / ranges;
        promotedRows(c, a, b, accumulate, acc, firstTile * kPromotedTile,
                     std::min(m, lastTile * kPromotedTile));
    });
}

// m transposed into a matrix of its own, by util/transpose.h's blocked copy: the promoted products
// read their operands in place, as rows, and only a transposed one needs laying out anew.
RowMatrix transposed(ConstMatrixMap m) {
    RowMatrix t(m.cols(), m.rows());
    transposeMatrix(t.data(), m.data(), static_cast<std::size_t>(m.rows()),
                    static_cast<std::size_t>(m.cols()));
    return t;
}

template <typename Product>
void chunked(MatrixMap c, bool accumulate, const Accumulation& acc, Eigen::Index k,
             Product&& partial) {
    if (acc.quantizer == nullptr || acc.every <= 0 || acc.every >= k) {
        partial(c, 0, k, accumulate);
        if (acc.quantizer != nullptr)
            roundInPlace(c, acc);
        return;
    }
    for (Eigen::Index start = 0; start < k; start += acc.every) {
        const Eigen::Index len = std::min<Eigen::Index>(acc.every, k - start);
        partial(c, start, len, accumulate || start > 0);
        roundInPlace(c, acc);
    }
}

} // namespace

void matmulNT(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc) {
    if (acc.quantizer != nullptr && acc.promoteEvery > 0) {
        const RowMatrix bt = transposed(b);
        return promoted(c, a, ConstMatrixMap(bt.data(), bt.rows(), bt.cols()), accumulate, acc);
    }
    chunked(c, accumulate, acc, a.cols(),
            [&](MatrixMap out, Eigen::Index s, Eigen::Index n, bool add) {
                if (add)
                    out.noalias() += a.middleCols(s, n) * b.middleCols(s, n).transpose();
                else
                    out.noalias() = a.middleCols(s, n) * b.middleCols(s, n).transpose();
            });
}

void matmulNN(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc) {
    if (acc.quantizer != nullptr && acc.promoteEvery > 0)
        return promoted(c, a, b, accumulate, acc);
    chunked(c, accumulate, acc, a.cols(),
            [&](MatrixMap out, Eigen::Index s, Eigen::Index n, bool add) {
                if (add)
                    out.noalias() += a.middleCols(s, n) * b.middleRows(s, n);
                else
                    out.noalias() = a.middleCols(s, n) * b.middleRows(s, n);
            });
}

void matmulTN(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc) {
    if (acc.quantizer != nullptr && acc.promoteEvery > 0) {
        const RowMatrix at = transposed(a);
        return promoted(c, ConstMatrixMap(at.data(), at.rows(), at.cols()), b, accumulate, acc);
    }
    chunked(c, accumulate, acc, a.rows(),
            [&](MatrixMap out, Eigen::Index s, Eigen::Index n, bool add) {
                if (add)
                    out.noalias() += a.middleRows(s, n).transpose() * b.middleRows(s, n);
                else
                    out.noalias() = a.middleRows(s, n).transpose() * b.middleRows(s, n);
            });
}

void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
#if defined(PLAB_HAVE_OPENBLAS)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
    using Strided = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
    const Strided sa(a, transA ? k : m, transA ? m : k, Eigen::OuterStride<>(lda));
    const Strided sb(b, transB ? n : k, transB ? k : n, Eigen::OuterStride<>(ldb));
    Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>> sc(c, m, n, Eigen::OuterStride<>(ldc));
    RowMatrix product(m, n);
    if (transA && transB)
        product.noalias() = sa.transpose() * sb.transpose();
    else if (transA)
        product.noalias() = sa.transpose() * sb;
    else if (transB)
        product.noalias() = sa * sb.transpose();
    else
        product.noalias() = sa * sb;
    if (beta == 0.0f)
        sc = alpha * product;
    else
        sc = alpha * product + beta * sc;
#endif
}

} // namespace plab
