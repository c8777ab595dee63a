// Element-wise activations: ReLU, GELU (exact, erf form), GELU's tanh approximation (GPT-2's)
// and Tanh.
#pragma once

#include "nn/layer.h"

#include <string_view>

namespace plab {

enum class ActivationKind { ReLU, GELU, Tanh, GeluTanh };
// Throws std::invalid_argument naming the text and the accepted names.
ActivationKind parseActivation(std::string_view text);
std::string_view toString(ActivationKind kind);

class Activation final : public Layer {
public:
    Activation(ActivationKind kind, FeatureShape shape) : m_kind(kind), m_shape(shape) {}
    std::string describe() const override { return std::string(toString(m_kind)); }
    FeatureShape outputShape() const override { return m_shape; }
    void forward(float* out, const float* in, const float* weights, int batch,
                 const Accumulation& acc) override;
    void backward(float* din, float* dweights, const float* dout, const float* in, const float* out,
                  const float* weights, int batch, const Accumulation& acc) override;

    ActivationKind kind() const { return m_kind; }

private:
    ActivationKind m_kind;
    FeatureShape m_shape;
};

// The tanh-approximated GELU over n values (the GPT's MLP uses it without a Layer).
void geluTanhForward(float* out, const float* in, std::size_t n);
void geluTanhBackward(float* din, const float* dout, const float* in, std::size_t n);

} // namespace plab
