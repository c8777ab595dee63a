// Activation forward/backward; backward quotes the forward it differentiates.
#include "nn/activation.h"

#include "nn/gelu_tanh.h"
#include "util/vector_clones.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>

namespace plab {

ActivationKind parseActivation(std::string_view text) {
    if (text == "relu")
        return ActivationKind::ReLU;
    if (text == "gelu")
        return ActivationKind::GELU;
    if (text == "tanh")
        return ActivationKind::Tanh;
    if (text == "gelu-tanh")
        return ActivationKind::GeluTanh;
    throw std::invalid_argument("activation \"" + std::string(text) +
                                "\": expected relu, gelu, gelu-tanh or tanh");
}

std::string_view toString(ActivationKind kind) {
    switch (kind) {
    case ActivationKind::ReLU:
        return "relu";
    case ActivationKind::GELU:
        return "gelu";
    case ActivationKind::Tanh:
        return "tanh";
    case ActivationKind::GeluTanh:
        return "gelu-tanh";
    }
    return "?";
}

namespace {

// The ReLU pair, cloned for AVX2 / AVX-512 (the SSE2 loops were 2% of an FP32 MLP step).
PLAB_VECTOR_CLONES
void reluForward(float* out, const float* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

// dout where in > 0, else +0: as a mask on the bits, so that the loop has no branch (half of a
// ReLU layer's inputs are negative, at random: a branch mispredicts) and vectorises.
PLAB_VECTOR_CLONES
void reluBackward(float* din, const float* dout, const float* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t keep = in[i] > 0.0f ? 0xFFFFFFFFu : 0u;
        din[i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(dout[i]) & keep);
    }
}

} // namespace

void Activation::forward(float* out, const float* in, const float*, int batch,
                         const Accumulation&) {
    const std::size_t n =
        static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_shape.size());
    switch (m_kind) {
    case ActivationKind::ReLU:
        reluForward(out, in, n);
        break;
    case ActivationKind::GELU:
        for (std::size_t i = 0; i < n; ++i)
            out[i] = 0.5f * in[i] * (1.0f + std::erf(in[i] * std::numbers::sqrt2_v<float> * 0.5f));
        break;
    case ActivationKind::Tanh:
        for (std::size_t i = 0; i < n; ++i)
            out[i] = std::tanh(in[i]);
        break;
    case ActivationKind::GeluTanh:
        geluTanhForward(out, in, n);
        break;
    }
}

void Activation::backward(float* din, float*, const float* dout, const float* in, const float* out,
                          const float*, int batch, const Accumulation&) {
    if (din == nullptr)
        return;
    const std::size_t n =
        static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_shape.size());
    switch (m_kind) {
    case ActivationKind::ReLU: // out = max(in, 0)
        reluBackward(din, dout, in, n);
        break;
    case ActivationKind::GELU: { // out = in * Phi(in): d/din = Phi(in) + in * phi(in)
        const float invSqrt2Pi =
            0.5f * std::numbers::inv_sqrtpi_v<float> * std::numbers::sqrt2_v<float>;
        for (std::size_t i = 0; i < n; ++i) {
            const float x = in[i];
            const float cdf = 0.5f * (1.0f + std::erf(x * std::numbers::sqrt2_v<float> * 0.5f));
            const float pdf = invSqrt2Pi * std::exp(-0.5f * x * x);
            din[i] = dout[i] * (cdf + x * pdf);
        }
        break;
    }
    case ActivationKind::Tanh: // out = tanh(in): d/din = 1 - out^2
        for (std::size_t i = 0; i < n; ++i)
            din[i] = dout[i] * (1.0f - out[i] * out[i]);
        break;
    case ActivationKind::GeluTanh:
        geluTanhBackward(din, dout, in, n);
        break;
    }
}

// Cloned for AVX2 / AVX-512 (the file is compiled without fused multiply-adds: every copy gives
// the same bits).
PLAB_VECTOR_CLONES
void geluTanhForward(float* out, const float* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        out[i] = geluTanh(in[i]);
}

PLAB_VECTOR_CLONES
void geluTanhBackward(float* din, const float* dout, const float* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        din[i] = dout[i] * geluTanhDerivative(in[i]);
}

} // namespace plab
