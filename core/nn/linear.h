// Linear layer: out = in W^T + b. Parameters: W (outFeatures, inFeatures) then b (outFeatures).
#pragma once

#include "nn/layer.h"

namespace plab {

class Linear final : public Layer {
public:
    Linear(int inFeatures, int outFeatures) : m_in(inFeatures), m_out(outFeatures) {}
    std::string describe() const override;
    FeatureShape outputShape() const override { return {m_out, 1, 1}; }
    bool hasWeights() const override { return true; }
    std::size_t parameterCount() const override;
    std::size_t weightCount() const override {
        return static_cast<std::size_t>(m_out) * static_cast<std::size_t>(m_in);
    }
    std::size_t backwardFanIn() const override { return static_cast<std::size_t>(m_out); }
    void initParameters(float* params, std::mt19937_64& rng, InitKind init,
                        float scale) const override;
    void forward(float* out, const float* in, const float* weights, int batch,
                 const Accumulation& acc) override;
    void backward(float* din, float* dweights, const float* dout, const float* in, const float* out,
                  const float* weights, int batch, const Accumulation& acc) override;

    int inFeatures() const { return m_in; }
    int outFeatures() const { return m_out; }

private:
    int m_in, m_out;
};

// db (cols) += the column sums of dy (rows, cols): a Linear layer's bias gradient, in the order
// Linear::backward sums it.
void addColumnSums(float* db, const float* dy, int rows, int cols);
// Every row of y (rows, cols) += b (cols): a Linear layer's bias in forward.
void addRowBias(float* y, const float* b, int rows, int cols);

} // namespace plab
