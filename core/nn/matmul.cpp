// Matrix products: one Eigen expression each; the emulated narrow accumulator splits the inner
// dimension into chunks and rounds the partial sum after each.
#include "nn/matmul.h"

#include "numerics/quantizer.h"

#include <span>

namespace plab {
namespace {

void roundInPlace(MatrixMap m, const Accumulation& acc) {
    std::span<float> values(m.data(), static_cast<std::size_t>(m.size()));
    acc.quantizer->quantize(values, values, nullptr);
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
    chunked(c, accumulate, acc, a.rows(),
            [&](MatrixMap out, Eigen::Index s, Eigen::Index n, bool add) {
                if (add)
                    out.noalias() += a.middleRows(s, n).transpose() * b.middleRows(s, n);
                else
                    out.noalias() = a.middleRows(s, n).transpose() * b.middleRows(s, n);
            });
}

} // namespace plab
