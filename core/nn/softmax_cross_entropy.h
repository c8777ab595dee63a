// Softmax cross-entropy over logits, in FP32 as mixed-precision training keeps its reductions.
#pragma once

#include "numerics/philox.h" // PLAB_HOST_DEVICE

#include <cstddef>
#include <cstdint>
#include <math.h>

namespace plab {

struct LossResult {
    double loss = 0.0; // mean over the batch
    int correct = 0;   // arg-max predictions equal to the label
};

// One row: returns its loss and sets *correct (arg-max == label); dz (may be null) =
// (softmax(z) - onehot(label)) * gradScale / batch. Shared by the CPU loss and the GPU kernel.
inline PLAB_HOST_DEVICE double softmaxCrossEntropyRow(const float* z, int label, int classes,
                                                      float* dz, float gradScale, int batch,
                                                      bool* correct) {
    int argmax = 0;
    for (int c = 1; c < classes; ++c)
        if (z[c] > z[argmax])
            argmax = c;
    const double zmax = z[argmax];
    double sum = 0.0;
    for (int c = 0; c < classes; ++c)
        sum += exp(static_cast<double>(z[c]) - zmax);
    *correct = argmax == label;
    if (dz != nullptr)
        for (int c = 0; c < classes; ++c) {
            const double p = exp(static_cast<double>(z[c]) - zmax) / sum;
            dz[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * gradScale / batch);
        }
    return log(sum) - (static_cast<double>(z[label]) - zmax);
}

// dlogits (B, C) = (softmax(logits) - onehot(label)) * gradScale / B; dlogits may be null.
LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                               int classes, float* dlogits, float gradScale);

} // namespace plab
