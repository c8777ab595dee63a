// Flatten: (C, H, W) -> (C*H*W). Samples are stored flat already, so this is a copy that changes
// only the shape the next layer sees.
#pragma once

#include "nn/layer.h"

#include <algorithm>

namespace plab {

class Flatten final : public Layer {
public:
    explicit Flatten(FeatureShape in) : m_size(in.size()) {}
    std::string describe() const override { return "flatten"; }
    FeatureShape outputShape() const override { return {m_size, 1, 1}; }
    void forward(float* out, const float* in, const float*, int batch,
                 const Accumulation&) override {
        std::copy_n(in, static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_size), out);
    }
    void backward(float* din, float*, const float* dout, const float*, const float*, const float*,
                  int batch, const Accumulation&) override {
        if (din != nullptr)
            std::copy_n(dout, static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_size),
                        din);
    }

private:
    int m_size;
};

} // namespace plab
