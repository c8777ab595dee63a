// The readable reference for float32 -> format rounding: plain double arithmetic, one value at a
// time. The fused kernels (numerics/kernels) must agree with it bit for bit; tests hold them to it.
#pragma once

#include "numerics/quant_stats.h"
#include "numerics/quantize_element.h"
#include "numerics/rounding.h"

#include <cstdint>

namespace plab {

// Rounds x to the format by config's rules and returns it as float32 (always exact).
// randomWord is used only by stochastic rounding: round up when
// randomWord + floor(2^32 * dropped fraction) >= 2^32.
// NaN inputs give NaN for every format, including FP6/FP4 whose hardware conversions turn NaN
// into +max: an emulator that hid NaN would hide divergence.
// The flattened rule quantizeElement() and the CUDA kernel take.
ElementRule makeElementRule(const QuantConfig& config);

float quantizeReference(const QuantConfig& config, float x, std::uint32_t randomWord = 0,
                        QuantClass* cls = nullptr);

} // namespace plab
