// Softmax cross-entropy over logits, in FP32 as mixed-precision training keeps its reductions.
#pragma once

#include <cstdint>

namespace plab {

struct LossResult {
    double loss = 0.0; // mean over the batch
    int correct = 0;   // arg-max predictions equal to the label
};

// dlogits (B, C) = (softmax(logits) - onehot(label)) * gradScale / B; dlogits may be null.
LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                               int classes, float* dlogits, float gradScale);

} // namespace plab
