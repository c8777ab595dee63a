// Layer: one forward/backward pair over a batch, in the style of llm.c. Parameters live in the
// model's contiguous buffers; a layer only knows its offset-free views of them.
#pragma once

#include "nn/feature_shape.h"
#include "nn/matmul.h"

#include <cstddef>
#include <random>
#include <string>

namespace plab {

enum class InitKind {
    He,      // N(0, 2/fan_in): the default for ReLU networks
    Xavier,  // N(0, 1/fan_in)
    Small,   // He scaled by the model's initScale: small weights that provoke gradient underflow
    Uniform, // PyTorch's nn.Linear / nn.Conv2d default: weights and biases U(+-1/sqrt(fan_in))
};

// The one name table of InitKind: the config parser, its writer and the GUI read it.
struct InitKindName {
    InitKind kind;
    const char* name;
};
inline constexpr InitKindName kInitKindNames[] = {{InitKind::He, "he"},
                                                  {InitKind::Xavier, "xavier"},
                                                  {InitKind::Small, "small"},
                                                  {InitKind::Uniform, "uniform"}};

class Layer {
public:
    virtual ~Layer() = default;

    virtual std::string describe() const = 0;
    virtual FeatureShape outputShape() const = 0;
    virtual bool hasWeights() const { return false; }
    virtual std::size_t parameterCount() const { return 0; }
    // For weight layers: the weights proper (before the bias), and the number of products
    // summed per input-gradient element in backward (the output features, times k*k for a conv).
    virtual std::size_t weightCount() const { return 0; }
    virtual std::size_t backwardFanIn() const { return 0; }
    virtual void initParameters(float* /*params*/, std::mt19937_64& /*rng*/, InitKind /*init*/,
                                float /*scale*/) const {}

    // out (B, outSize) from in (B, inSize); weights are the parameters as used in forward.
    virtual void forward(float* out, const float* in, const float* weights, int batch,
                         const Accumulation& acc) = 0;
    // din (B, inSize) (null for the first layer: nobody needs it) and dweights (accumulated)
    // from dout (B, outSize), with the forward's in and out. A Linear layer takes a null
    // dweights too: din alone (the trainer takes its weight gradient from other operands).
    virtual void backward(float* din, float* dweights, const float* dout, const float* in,
                          const float* out, const float* weights, int batch,
                          const Accumulation& acc) = 0;
};

} // namespace plab
