// Softmax cross-entropy forward and backward in one pass; max-subtraction for stability.
#include "nn/softmax_cross_entropy.h"

namespace plab {

LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                               int classes, float* dlogits, float gradScale) {
    LossResult r;
    for (int b = 0; b < batch; ++b) {
        const std::size_t row = static_cast<std::size_t>(b) * classes;
        bool correct = false;
        r.loss += softmaxCrossEntropyRow(logits + row, labels[b], classes,
                                         dlogits != nullptr ? dlogits + row : nullptr, gradScale,
                                         batch, &correct);
        r.correct += correct ? 1 : 0;
    }
    r.loss /= batch;
    return r;
}

} // namespace plab
