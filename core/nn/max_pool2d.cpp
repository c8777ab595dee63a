// MaxPool2d forward/backward.
#include "nn/max_pool2d.h"

#include <algorithm>

namespace plab {

void MaxPool2d::forward(float* out, const float* in, const float*, int batch, const Accumulation&) {
    const FeatureShape o = outputShape();
    const int inSize = m_in.size(), outSize = o.size();
    m_argmax.resize(static_cast<std::size_t>(batch) * static_cast<std::size_t>(outSize));
    for (int b = 0; b < batch; ++b) {
        const float* x = in + static_cast<std::size_t>(b) * inSize;
        float* y = out + static_cast<std::size_t>(b) * outSize;
        int* arg = m_argmax.data() + static_cast<std::size_t>(b) * outSize;
        for (int c = 0; c < o.channels; ++c)
            for (int i = 0; i < o.height; ++i)
                for (int j = 0; j < o.width; ++j) {
                    int best = (c * m_in.height + 2 * i) * m_in.width + 2 * j;
                    for (int di = 0; di < 2; ++di)
                        for (int dj = 0; dj < 2; ++dj) {
                            const int idx =
                                (c * m_in.height + 2 * i + di) * m_in.width + 2 * j + dj;
                            if (x[idx] > x[best])
                                best = idx;
                        }
                    const int k = (c * o.height + i) * o.width + j;
                    y[k] = x[best];
                    arg[k] = best;
                }
    }
}

void MaxPool2d::backward(float* din, float*, const float* dout, const float*, const float*,
                         const float*, int batch, const Accumulation&) {
    if (din == nullptr)
        return;
    const int inSize = m_in.size(), outSize = outputShape().size();
    std::fill_n(din, static_cast<std::size_t>(batch) * inSize, 0.0f);
    for (int b = 0; b < batch; ++b) { // from y[k] = x[argmax[k]]: dx[argmax[k]] += dy[k]
        const int* arg = m_argmax.data() + static_cast<std::size_t>(b) * outSize;
        float* dx = din + static_cast<std::size_t>(b) * inSize;
        const float* dy = dout + static_cast<std::size_t>(b) * outSize;
        for (int k = 0; k < outSize; ++k)
            dx[arg[k]] += dy[k];
    }
}

} // namespace plab
