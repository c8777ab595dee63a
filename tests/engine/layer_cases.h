// Every layer the engines run, one entry each: its differentiable inputs (the input, then its
// parameters), its forward and its backward on an engine (TensorOps). The finite-difference
// gradient checks (tests/nn/test_layer_gradients.cpp) and the engine parity checks
// (engine_parity.cpp: the CPU engine against the GPU engine, or its host emulation) are both
// generated from this list, so a new layer is registered once, here, and is checked both ways.
// Plain C++ (no Qt): the GPU machines run the parity half.
#pragma once

#include "engine/tensor_ops.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace plab::cases {

struct LayerCase {
    std::string name;
    std::vector<std::size_t> inputSizes; // x, then parameters (each a tensor)
    std::size_t outputSize = 0;
    // The layer multiplies matrices that an emulated narrow accumulator applies to (the parity
    // checks then run it with each accumulation too).
    bool accumulates = false;
    // Its output picks among its inputs (max pooling): the input's values then lie on a grid
    // wider than the finite differences' step, so that no step changes which one wins.
    bool picks = false;
    // out = f(inputs), on the engine's memory.
    std::function<void(TensorOps&, const std::vector<Tensor>& inputs, Tensor out,
                       const Accumulation& acc)>
        forward;
    // grads[i] = d(sum(out * dout)) / d inputs[i] (overwritten), given forward's out.
    std::function<void(TensorOps&, const std::vector<Tensor>& inputs, Tensor out, Tensor dout,
                       const std::vector<Tensor>& grads, const Accumulation& acc)>
        backward;
};

const std::vector<LayerCase>& layerCases();

// Inputs for a case, from a seed: uniform in +-1 with a gap at 0 (|x| >= 0.1: away from ReLU's
// kink) and every value distinct; for a case that picks, the first input's values +-(0.1 +
// 0.025 k) shuffled.
std::vector<std::vector<float>> caseInputs(const LayerCase& c, unsigned seed);

// The case's forward and backward on ops for given host inputs and output gradient: out, then
// the gradient of each input, on the host.
struct CaseResult {
    std::vector<float> out;
    std::vector<std::vector<float>> grads;
};
CaseResult runCase(TensorOps& ops, const LayerCase& c,
                   const std::vector<std::vector<float>>& inputs, const std::vector<float>& dout,
                   const Accumulation& acc = {});
// sum(out * r) in double, of the case's forward on ops: the objective the gradient checks
// differentiate numerically.
double caseObjective(TensorOps& ops, const LayerCase& c,
                     const std::vector<std::vector<float>>& inputs, const std::vector<float>& r);

} // namespace plab::cases
