#include "nn/transformer/embedding.h"

#include <cstddef>

namespace plab::transformer {

void embeddingForward(float* out, const std::uint8_t* idx, const float* tok, const float* pos,
                      int batch, int time, int channels) {
    const auto c = static_cast<std::size_t>(channels);
    for (int b = 0; b < batch; ++b)
        for (int t = 0; t < time; ++t) {
            const std::size_t row = static_cast<std::size_t>(b * time + t);
            const float* token = tok + idx[row] * c;
            const float* position = pos + static_cast<std::size_t>(t) * c;
            float* o = out + row * c;
            for (std::size_t i = 0; i < c; ++i)
                o[i] = token[i] + position[i];
        }
}

void embeddingBackward(float* dtok, float* dpos, const float* dout, const std::uint8_t* idx,
                       int batch, int time, int channels) {
    const auto c = static_cast<std::size_t>(channels);
    for (int b = 0; b < batch; ++b)
        for (int t = 0; t < time; ++t) {
            const std::size_t row = static_cast<std::size_t>(b * time + t);
            float* token = dtok + idx[row] * c;
            float* position = dpos + static_cast<std::size_t>(t) * c;
            const float* d = dout + row * c;
            for (std::size_t i = 0; i < c; ++i) {
                token[i] += d[i];
                position[i] += d[i];
            }
        }
}

} // namespace plab::transformer
