// Softmax cross-entropy forward and backward in one pass; max-subtraction for stability.
#include "nn/softmax_cross_entropy.h"

#include <cmath>

namespace plab {

LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                               int classes, float* dlogits, float gradScale) {
    LossResult r;
    for (int b = 0; b < batch; ++b) {
        const float* z = logits + static_cast<std::size_t>(b) * classes;
        int argmax = 0;
        for (int c = 1; c < classes; ++c)
            if (z[c] > z[argmax])
                argmax = c;
        const double zmax = z[argmax];
        double sum = 0.0;
        for (int c = 0; c < classes; ++c)
            sum += std::exp(static_cast<double>(z[c]) - zmax);
        const int label = labels[b];
        r.loss += std::log(sum) - (static_cast<double>(z[label]) - zmax);
        r.correct += argmax == label ? 1 : 0;
        if (dlogits != nullptr) {
            float* dz = dlogits + static_cast<std::size_t>(b) * classes;
            for (int c = 0; c < classes; ++c) {
                const double p = std::exp(static_cast<double>(z[c]) - zmax) / sum;
                dz[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * gradScale / batch);
            }
        }
    }
    r.loss /= batch;
    return r;
}

} // namespace plab
