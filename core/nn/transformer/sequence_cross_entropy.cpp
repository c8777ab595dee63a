#include "nn/transformer/sequence_cross_entropy.h"

#include "nn/gelu_tanh.h"
#include "util/vector_clones.h"

#include <cmath>
#include <cstddef>

namespace plab::transformer {
namespace {

// One row: out = e^(z - max z), returns their sum; *top = max z.
PLAB_VECTOR_CLONES
float expRow(const float* z, float* out, int vocab, float* top) {
    float m = z[0];
    for (int c = 1; c < vocab; ++c)
        m = z[c] > m ? z[c] : m;
    float sum = 0.0f;
    for (int c = 0; c < vocab; ++c) {
        out[c] = expPolynomial(z[c] - m);
        sum += out[c];
    }
    *top = m;
    return sum;
}

PLAB_VECTOR_CLONES
void scaleRow(float* d, int vocab, float scale) {
    for (int c = 0; c < vocab; ++c)
        d[c] *= scale;
}

} // namespace

double sequenceCrossEntropy(const float* logits, const std::uint8_t* targets, int rows, int vocab,
                            float* dlogits) {
    double total = 0.0;
    const float perRow = 1.0f / static_cast<float>(rows);
    for (int r = 0; r < rows; ++r) {
        const float* z = logits + static_cast<std::ptrdiff_t>(r) * vocab;
        float* d = dlogits + static_cast<std::ptrdiff_t>(r) * vocab;
        float top = 0.0f;
        const float sum = expRow(z, d, vocab, &top);
        total += static_cast<double>(std::log(sum)) + top - z[targets[r]];
        scaleRow(d, vocab, perRow / sum);
        d[targets[r]] -= perRow;
    }
    return total / rows;
}

} // namespace plab::transformer
