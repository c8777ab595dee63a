// 2-D convolution, stride 1, "same" zero padding (kernel 3 or 5), through im2col + one matrix
// product per sample. Parameters: W (outChannels, inChannels*k*k) then b (outChannels).
#pragma once

#include "nn/layer.h"

#include <vector>

namespace plab {

class Conv2d final : public Layer {
public:
    // Throws std::invalid_argument unless kernel is 3 or 5.
    Conv2d(FeatureShape in, int outChannels, int kernel);
    std::string describe() const override;
    FeatureShape outputShape() const override { return {m_outChannels, m_in.height, m_in.width}; }
    bool hasWeights() const override { return true; }
    std::size_t parameterCount() const override;
    std::size_t weightCount() const override {
        return static_cast<std::size_t>(m_outChannels) * m_in.channels * m_kernel * m_kernel;
    }
    std::size_t backwardFanIn() const override {
        return static_cast<std::size_t>(m_outChannels) * m_kernel * m_kernel;
    }
    void initParameters(float* params, std::mt19937_64& rng, InitKind init,
                        float scale) const override;
    void forward(float* out, const float* in, const float* weights, int batch,
                 const Accumulation& acc) override;
    void backward(float* din, float* dweights, const float* dout, const float* in, const float* out,
                  const float* weights, int batch, const Accumulation& acc) override;

    FeatureShape inputShape() const { return m_in; }
    int outChannels() const { return m_outChannels; }
    int kernel() const { return m_kernel; }

private:
    void im2col(const float* x, float* cols) const;
    void col2im(const float* cols, float* dx) const;

    FeatureShape m_in;
    int m_outChannels, m_kernel;
    std::vector<float> m_cols, m_dcols; // (C*k*k, H*W) scratch for one sample
};

} // namespace plab
