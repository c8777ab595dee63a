// Matrix products: one Eigen expression each; the emulated narrow accumulator splits the inner
// dimension into chunks and rounds the partial sum after each.
#include "nn/matmul.h"

#include "numerics/quantizer.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace plab {
namespace {

void roundInPlace(MatrixMap m, const Accumulation& acc) {
    std::span<float> values(m.data(), static_cast<std::size_t>(m.size()));
    acc.quantizer->quantize(values, values, nullptr);
}

// Rounding to nearest-even of a float to a format with FP32's exponent field (8 bits, bias 127,
// subnormals, Inf/NaN; e.g. e8m13): the mantissa's dropped bits, carrying into the exponent,
// so that a vector loop can do it. Other formats go through the Quantizer.
bool hasFp32Range(const QuantConfig& c) {
    const FormatSpec& f = c.format;
    return f.exponentBits == 8 && f.bias == 127 && f.subnormals && f.isSigned && f.hasZero &&
           f.specials == SpecialValues::Ieee && f.mantissaBits < 23 &&
           c.rounding == Rounding::NearestEven && c.overflow == Overflow::Inf;
}

// C (M, N) [+]= A (M, K) B (K, N) with promotion (see Accumulation): per row of C, a chunk's
// sums for all N columns at once, rounded after every product added.
void promoted(MatrixMap c, const RowMatrix& a, const RowMatrix& b, bool accumulate,
              const Accumulation& acc) {
    const Eigen::Index m = a.rows(), k = a.cols(), n = b.cols();
    const QuantConfig& config = acc.quantizer->config();
    const bool fast = hasFp32Range(config);
    const int drop = 23 - config.format.mantissaBits;
    const std::uint32_t half = drop > 0 ? (1u << (drop - 1)) - 1u : 0u;
    const std::uint32_t keep = ~((1u << drop) - 1u);
    std::vector<float> total(static_cast<std::size_t>(n)), chunk(static_cast<std::size_t>(n));
    for (Eigen::Index row = 0; row < m; ++row) {
        for (Eigen::Index j = 0; j < n; ++j)
            total[static_cast<std::size_t>(j)] = accumulate ? c(row, j) : 0.0f;
        for (Eigen::Index start = 0; start < k; start += acc.promoteEvery) {
            const Eigen::Index end = std::min<Eigen::Index>(k, start + acc.promoteEvery);
            std::fill(chunk.begin(), chunk.end(), 0.0f);
            for (Eigen::Index i = start; i < end; ++i) {
                const float ai = a(row, i);
                const float* bi = b.data() + i * n;
                if (fast) {
                    for (Eigen::Index j = 0; j < n; ++j) {
                        const float sum = chunk[static_cast<std::size_t>(j)] + ai * bi[j];
                        const std::uint32_t u = std::bit_cast<std::uint32_t>(sum);
                        chunk[static_cast<std::size_t>(j)] =
                            std::bit_cast<float>((u + half + ((u >> drop) & 1u)) & keep);
                    }
                    continue;
                }
                for (Eigen::Index j = 0; j < n; ++j)
                    chunk[static_cast<std::size_t>(j)] += ai * bi[j];
                // The random words the GPU's kernel body draws: element (row, j), stream i + 1.
                QuantizeOptions words;
                words.stream = static_cast<std::uint64_t>(i) + 1;
                words.firstIndex = static_cast<std::uint64_t>(row * n);
                acc.quantizer->quantize(chunk, chunk, nullptr, words);
            }
            for (Eigen::Index j = 0; j < n; ++j)
                total[static_cast<std::size_t>(j)] += chunk[static_cast<std::size_t>(j)];
        }
        for (Eigen::Index j = 0; j < n; ++j)
            c(row, j) = total[static_cast<std::size_t>(j)];
    }
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
    if (acc.quantizer != nullptr && acc.promoteEvery > 0)
        return promoted(c, a, b.transpose(), accumulate, acc);
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
    if (acc.quantizer != nullptr && acc.promoteEvery > 0)
        return promoted(c, a.transpose(), b, accumulate, acc);
    chunked(c, accumulate, acc, a.rows(),
            [&](MatrixMap out, Eigen::Index s, Eigen::Index n, bool add) {
                if (add)
                    out.noalias() += a.middleRows(s, n).transpose() * b.middleRows(s, n);
                else
                    out.noalias() = a.middleRows(s, n).transpose() * b.middleRows(s, n);
            });
}

} // namespace plab
