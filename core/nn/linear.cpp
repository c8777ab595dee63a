// Linear forward/backward.
#include "nn/linear.h"

#include "util/vector_clones.h"

#include <algorithm>
#include <cmath>

namespace plab {

std::string Linear::describe() const {
    return "linear " + std::to_string(m_in) + "->" + std::to_string(m_out);
}

std::size_t Linear::parameterCount() const {
    return static_cast<std::size_t>(m_out) * static_cast<std::size_t>(m_in + 1);
}

void Linear::initParameters(float* params, std::mt19937_64& rng, InitKind init, float scale) const {
    if (init == InitKind::Uniform) { // PyTorch's nn.Linear: weights and biases U(+-1/sqrt(in))
        const float bound = 1.0f / std::sqrt(static_cast<float>(m_in));
        std::uniform_real_distribution<float> uniform(-bound, bound);
        for (std::size_t i = 0; i < parameterCount(); ++i)
            params[i] = uniform(rng);
        return;
    }
    const float variance = (init == InitKind::Xavier ? 1.0f : 2.0f) / static_cast<float>(m_in);
    const float sd = std::sqrt(variance) * (init == InitKind::Small ? scale : 1.0f);
    std::normal_distribution<float> normal(0.0f, sd);
    const std::size_t weights = static_cast<std::size_t>(m_out) * static_cast<std::size_t>(m_in);
    for (std::size_t i = 0; i < weights; ++i)
        params[i] = normal(rng);
    for (int o = 0; o < m_out; ++o)
        params[weights + static_cast<std::size_t>(o)] = 0.0f;
}

void Linear::forward(float* out, const float* in, const float* weights, int batch,
                     const Accumulation& acc) {
    ConstMatrixMap x(in, batch, m_in);      // (B, I)
    ConstMatrixMap w(weights, m_out, m_in); // (O, I)
    const float* bias = weights + static_cast<std::size_t>(m_out) * m_in;
    MatrixMap y(out, batch, m_out);      // (B, O)
    matmulNT(y, x, w, false, acc);       // y = x w^T
    addRowBias(out, bias, batch, m_out); // y += b
}

// One add per element, as Eigen's rowwise add did, in loops built for AVX2 / AVX-512 too (Eigen's
// ran on SSE2 only: 0.4% of an FP32 MLP step).
PLAB_VECTOR_CLONES
void addRowBias(float* y, const float* b, int rows, int cols) {
    const auto n = static_cast<std::size_t>(cols);
    for (int r = 0; r < rows; ++r) {
        float* row = y + static_cast<std::size_t>(r) * n;
        for (std::size_t c = 0; c < n; ++c)
            row[c] += b[c];
    }
}

void Linear::backward(float* din, float* dweights, const float* dout, const float* in,
                      const float* /*out*/, const float* weights, int batch,
                      const Accumulation& acc) {
    ConstMatrixMap dy(dout, batch, m_out); // (B, O)
    ConstMatrixMap x(in, batch, m_in);     // (B, I)
    if (dweights != nullptr) {
        MatrixMap dw(dweights, m_out, m_in); // (O, I)
        matmulTN(dw, dy, x, true, acc);      // from y = x w^T: dw += dy^T x
        addColumnSums(dweights + static_cast<std::size_t>(m_out) * m_in, dout, batch, m_out);
    }
    if (din != nullptr) {
        ConstMatrixMap w(weights, m_out, m_in);
        MatrixMap dx(din, batch, m_in);
        matmulNN(dx, dy, w, false, acc); // from y = x w^T: dx = dy w
    }
}

// From y += b: db += sum_B dy. Every column in the order of Eigen's vectorised column sums (row
// 0, then rows four at a time as (r + r) + (r + r), then the rest one by one), the columns side
// by side in vector lanes. Eigen's own call ran on SSE2, strided, and summed the columns past a
// multiple of four in a scalar loop, one row after another (1.2% of an FP32 MLP step; the last
// layer's two columns past eight now take the same order as the others).
PLAB_VECTOR_CLONES
void addColumnSums(float* db, const float* dy, int rows, int cols) {
    if (rows <= 0)
        return;
    const auto n = static_cast<std::size_t>(cols);
    const auto row = [&](int r) { return dy + static_cast<std::size_t>(r) * n; };
    constexpr std::size_t kTile = 64; // columns per pass: the partial sums stay in registers
    for (std::size_t c0 = 0; c0 < n; c0 += kTile) {
        const std::size_t width = std::min(kTile, n - c0);
        float sum[kTile];
        for (std::size_t c = 0; c < width; ++c)
            sum[c] = row(0)[c0 + c];
        const int fours = (rows - 1) & ~3;
        int r = 1;
        for (; r < fours; r += 4) {
            const float *a = row(r) + c0, *b = row(r + 1) + c0;
            const float *c = row(r + 2) + c0, *d = row(r + 3) + c0;
            for (std::size_t k = 0; k < width; ++k)
                sum[k] = sum[k] + ((a[k] + b[k]) + (c[k] + d[k]));
        }
        for (; r < rows; ++r)
            for (std::size_t k = 0; k < width; ++k)
                sum[k] = sum[k] + row(r)[c0 + k];
        for (std::size_t k = 0; k < width; ++k)
            db[c0 + k] += sum[k];
    }
}

} // namespace plab
