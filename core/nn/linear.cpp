// Linear forward/backward.
#include "nn/linear.h"

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
    Eigen::Map<const Eigen::RowVectorXf> b(weights + static_cast<std::size_t>(m_out) * m_in, m_out);
    MatrixMap y(out, batch, m_out); // (B, O)
    matmulNT(y, x, w, false, acc);  // y = x w^T
    y.rowwise() += b;               // y += b
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

void addColumnSums(float* db, const float* dy, int rows, int cols) {
    Eigen::Map<Eigen::RowVectorXf> bias(db, cols);
    bias += ConstMatrixMap(dy, rows, cols).colwise().sum(); // from y += b: db += sum_B dy
}

} // namespace plab
