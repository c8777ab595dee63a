// 2x2 max pooling with stride 2 over (C, H, W); odd trailing rows/columns are dropped.
#pragma once

#include "nn/layer.h"

#include <vector>

namespace plab {

class MaxPool2d final : public Layer {
public:
    explicit MaxPool2d(FeatureShape in) : m_in(in) {}
    std::string describe() const override { return "maxpool 2x2"; }
    FeatureShape outputShape() const override {
        return {m_in.channels, m_in.height / 2, m_in.width / 2};
    }
    void forward(float* out, const float* in, const float* weights, int batch,
                 const Accumulation& acc) override;
    void backward(float* din, float* dweights, const float* dout, const float* in, const float* out,
                  const float* weights, int batch, const Accumulation& acc) override;

    FeatureShape inputShape() const { return m_in; }

private:
    FeatureShape m_in;
    std::vector<int> m_argmax; // per output element: the winning input index within its sample
};

} // namespace plab
