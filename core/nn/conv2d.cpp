// Conv2d forward/backward via im2col.
#include "nn/conv2d.h"

#include <cmath>
#include <stdexcept>

namespace plab {

Conv2d::Conv2d(FeatureShape in, int outChannels, int kernel)
    : m_in(in), m_outChannels(outChannels), m_kernel(kernel) {
    if (kernel != 3 && kernel != 5)
        throw std::invalid_argument("conv2d kernel " + std::to_string(kernel) +
                                    ": expected 3 or 5");
    const std::size_t rows = static_cast<std::size_t>(in.channels) * kernel * kernel;
    m_cols.resize(rows * static_cast<std::size_t>(in.height * in.width));
    m_dcols.resize(m_cols.size());
}

std::string Conv2d::describe() const {
    return "conv" + std::to_string(m_kernel) + "x" + std::to_string(m_kernel) + " " +
           std::to_string(m_in.channels) + "->" + std::to_string(m_outChannels);
}

std::size_t Conv2d::parameterCount() const {
    return static_cast<std::size_t>(m_outChannels) *
           (static_cast<std::size_t>(m_in.channels) * m_kernel * m_kernel + 1);
}

void Conv2d::initParameters(float* params, std::mt19937_64& rng, InitKind init, float scale) const {
    const int fanIn = m_in.channels * m_kernel * m_kernel;
    if (init == InitKind::Uniform) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(fanIn));
        std::uniform_real_distribution<float> uniform(-bound, bound);
        for (std::size_t i = 0; i < parameterCount(); ++i)
            params[i] = uniform(rng);
        return;
    }
    const float variance = (init == InitKind::Xavier ? 1.0f : 2.0f) / static_cast<float>(fanIn);
    std::normal_distribution<float> normal(0.0f, std::sqrt(variance) *
                                                     (init == InitKind::Small ? scale : 1.0f));
    const std::size_t weights = static_cast<std::size_t>(m_outChannels) * fanIn;
    for (std::size_t i = 0; i < weights; ++i)
        params[i] = normal(rng);
    for (int o = 0; o < m_outChannels; ++o)
        params[weights + static_cast<std::size_t>(o)] = 0.0f;
}

// cols[(c*k + ki)*k + kj][i*W + j] = x[c][i + ki - pad][j + kj - pad] (0 outside)
void Conv2d::im2col(const float* x, float* cols) const {
    const int h = m_in.height, w = m_in.width, k = m_kernel, pad = k / 2;
    for (int c = 0; c < m_in.channels; ++c)
        for (int ki = 0; ki < k; ++ki)
            for (int kj = 0; kj < k; ++kj) {
                float* row = cols + static_cast<std::size_t>((c * k + ki) * k + kj) * h * w;
                for (int i = 0; i < h; ++i) {
                    const int si = i + ki - pad;
                    for (int j = 0; j < w; ++j) {
                        const int sj = j + kj - pad;
                        row[i * w + j] = (si >= 0 && si < h && sj >= 0 && sj < w)
                                             ? x[(c * h + si) * w + sj]
                                             : 0.0f;
                    }
                }
            }
}

// The adjoint of im2col: every column entry adds back into the pixel it was copied from.
void Conv2d::col2im(const float* cols, float* dx) const {
    const int h = m_in.height, w = m_in.width, k = m_kernel, pad = k / 2;
    std::fill_n(dx, static_cast<std::size_t>(m_in.size()), 0.0f);
    for (int c = 0; c < m_in.channels; ++c)
        for (int ki = 0; ki < k; ++ki)
            for (int kj = 0; kj < k; ++kj) {
                const float* row = cols + static_cast<std::size_t>((c * k + ki) * k + kj) * h * w;
                for (int i = 0; i < h; ++i) {
                    const int si = i + ki - pad;
                    if (si < 0 || si >= h)
                        continue;
                    for (int j = 0; j < w; ++j) {
                        const int sj = j + kj - pad;
                        if (sj >= 0 && sj < w)
                            dx[(c * h + si) * w + sj] += row[i * w + j];
                    }
                }
            }
}

void Conv2d::forward(float* out, const float* in, const float* weights, int batch,
                     const Accumulation& acc) {
    const int hw = m_in.height * m_in.width;
    const int rows = m_in.channels * m_kernel * m_kernel;
    ConstMatrixMap wMat(weights, m_outChannels, rows); // (OC, C*k*k)
    Eigen::Map<const Eigen::VectorXf> b(weights + static_cast<std::size_t>(m_outChannels) * rows,
                                        m_outChannels);
    for (int s = 0; s < batch; ++s) {
        im2col(in + static_cast<std::size_t>(s) * m_in.size(), m_cols.data());
        ConstMatrixMap cols(m_cols.data(), rows, hw); // (C*k*k, HW)
        MatrixMap y(out + static_cast<std::size_t>(s) * m_outChannels * hw, m_outChannels, hw);
        matmulNN(y, wMat, cols, false, acc); // y = W cols
        y.colwise() += b;                    // y += b
    }
}

void Conv2d::backward(float* din, float* dweights, const float* dout, const float* in, const float*,
                      const float* weights, int batch, const Accumulation& acc) {
    const int hw = m_in.height * m_in.width;
    const int rows = m_in.channels * m_kernel * m_kernel;
    ConstMatrixMap wMat(weights, m_outChannels, rows);
    MatrixMap dw(dweights, m_outChannels, rows);
    Eigen::Map<Eigen::VectorXf> db(dweights + static_cast<std::size_t>(m_outChannels) * rows,
                                   m_outChannels);
    for (int s = 0; s < batch; ++s) {
        ConstMatrixMap dy(dout + static_cast<std::size_t>(s) * m_outChannels * hw, m_outChannels,
                          hw);
        im2col(in + static_cast<std::size_t>(s) * m_in.size(), m_cols.data());
        ConstMatrixMap cols(m_cols.data(), rows, hw);
        matmulNT(dw, dy, cols, true, acc); // from y = W cols: dW += dy cols^T
        db += dy.rowwise().sum();          // from y += b:     db += sum_HW dy
        if (din != nullptr) {
            MatrixMap dcols(m_dcols.data(), rows, hw);
            matmulTN(dcols, wMat, dy, false, acc); // dcols = W^T dy
            col2im(m_dcols.data(), din + static_cast<std::size_t>(s) * m_in.size());
        }
    }
}

} // namespace plab
