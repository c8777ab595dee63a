// The GPU engine's kernels, written once as per-index bodies (plain C++, __host__ __device__
// under nvcc): the CUDA policy runs body(i) for every i in a grid, the host policy in a loop, so
// the tests on machines without a GPU check exactly the arithmetic and indexing a GPU runs.
// Each body is a small struct of raw pointers and sizes, passed to a kernel by value. One thread
// per output element, no atomics: results do not depend on scheduling.
#pragma once

#include "nn/gelu_tanh.h"
#include "nn/softmax_cross_entropy.h"
#include "numerics/block_kernels.h"
#include "numerics/philox.h"
#include "numerics/quantize_element.h"

#include <cstddef>
#include <cstdint>
#include <math.h>

namespace plab::kernels {

using std::size_t;

// What a reduction body returns for one index; reductions add sum and sumSq and take the
// largest maxBits (|x| as float bits orders like |x|).
struct Reduction {
    double sum = 0.0, sumSq = 0.0;
    std::uint32_t maxBits = 0;
};

inline PLAB_HOST_DEVICE void combine(Reduction& into, const Reduction& r) {
    into.sum += r.sum;
    into.sumSq += r.sumSq;
    into.maxBits = into.maxBits > r.maxBits ? into.maxBits : r.maxBits;
}

inline PLAB_HOST_DEVICE std::uint32_t absBits(float x) {
    return element::bitsOf(x) & 0x7FFFFFFFu;
}

// The emulated narrow accumulator of matrix products (Accumulation): the running sum is rounded
// to the accumulation format after every chunk of `every` products, with the random bits the
// CPU's quantise call would use for output element `index` (seed 0, stream 0).
// With promoteEvery, chunks of that many products are summed in the format (rounded after every
// addition; a stochastic rounding draws the word of product i from stream i + 1) and added to an
// FP32 total, as nn/matmul.cpp's promoted products.
struct AccumulatorRounding {
    bool enabled = false;
    bool stochastic = false;
    int every = 0;
    int promoteEvery = 0;
    ElementRule rule;
    // hasFp32Range() formats (nn/matmul.h): nearest-even by adding to the bits and masking.
    bool bitRounding = false;
    std::uint32_t roundHalf = 0, keepMask = 0;
    int droppedBits = 0;

    PLAB_HOST_DEVICE float round(float c, size_t index) const {
        if (!enabled)
            return c;
        if (bitRounding) {
            const std::uint32_t u = element::bitsOf(c);
            return element::floatOf((u + roundHalf + ((u >> droppedBits) & 1u)) & keepMask);
        }
        QuantClass cls;
        const std::uint32_t word = stochastic ? philox::elementWord(index, 0, 0) : 0u;
        return quantizeElement(rule, c, word, cls);
    }
    // sum + term(0) + ... + term(k - 1), each chunk summed in FP32 and added to the running sum,
    // which is rounded after every chunk (one chunk of k when nothing is emulated).
    template <class Term>
    PLAB_HOST_DEVICE float sum(float running, int k, size_t index, const Term& term) const {
        if (enabled && promoteEvery > 0) {
            for (int start = 0; start < k; start += promoteEvery) {
                const int end = start + promoteEvery < k ? start + promoteEvery : k;
                float chunk = 0.0f;
                for (int i = start; i < end; ++i) {
                    if (bitRounding) {
                        chunk = round(chunk + term(i), index);
                        continue;
                    }
                    QuantClass cls;
                    const std::uint32_t word =
                        stochastic
                            ? philox::elementWord(index, static_cast<std::uint64_t>(i) + 1, 0)
                            : 0u;
                    chunk = quantizeElement(rule, chunk + term(i), word, cls);
                }
                running += chunk;
            }
            return running;
        }
        const int step = (!enabled || every <= 0 || every >= k) ? k : every;
        for (int start = 0; start < k; start += step) {
            const int end = start + step < k ? start + step : k;
            float part = 0.0f;
            for (int i = start; i < end; ++i)
                part += term(i);
            running = round(running + part, index);
        }
        return running;
    }
};

// ---- element-wise --------------------------------------------------------------------------

struct Fill {
    float* x;
    float value;
    PLAB_HOST_DEVICE void operator()(size_t i) const { x[i] = value; }
};

struct Scale {
    float* x;
    float factor;
    PLAB_HOST_DEVICE void operator()(size_t i) const { x[i] *= factor; }
};

// out = in * factor (quantizeScaled's scaling pass).
struct ScaleInto {
    float* out;
    const float* in;
    float factor;
    PLAB_HOST_DEVICE void operator()(size_t i) const { out[i] = in[i] * factor; }
};

// ScaleInto that also reports the input's largest finite |x| (maxBits).
struct ScaleIntoWithAmax {
    float* out;
    const float* in;
    float factor;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        const float x = in[i];
        out[i] = x * factor;
        Reduction r;
        const std::uint32_t a = absBits(x);
        r.maxBits = a < 0x7F800000u ? a : 0u;
        return r;
    }
};

// ---- reductions ------------------------------------------------------------------------------

// sum, sum of squares, largest |x| (moments()).
struct Moments {
    const float* x;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        const float v = x[i];
        Reduction r;
        r.sum = v;
        r.sumSq = static_cast<double>(v) * v;
        r.maxBits = absBits(v);
        return r;
    }
};

// sum = number of Inf/NaN elements.
struct CountNonFinite {
    const float* x;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        Reduction r;
        r.sum = absBits(x[i]) >= 0x7F800000u ? 1.0 : 0.0;
        return r;
    }
};

// maxBits = largest finite |x| (amaxOf()).
struct FiniteAmax {
    const float* x;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        Reduction r;
        const std::uint32_t a = absBits(x[i]);
        r.maxBits = a < 0x7F800000u ? a : 0u;
        return r;
    }
};

// ---- layers ----------------------------------------------------------------------------------

enum class ActivationOp { ReLU, GELU, Tanh, GeluTanh };

struct ActivationForward {
    float* out;
    const float* in;
    ActivationOp op;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const float x = in[i];
        switch (op) {
        case ActivationOp::ReLU:
            out[i] = x > 0.0f ? x : 0.0f;
            break;
        case ActivationOp::GELU:
            out[i] = 0.5f * x * (1.0f + erff(x * 1.41421356f * 0.5f));
            break;
        case ActivationOp::Tanh:
            out[i] = tanhf(x);
            break;
        case ActivationOp::GeluTanh:
            out[i] = geluTanh(x);
            break;
        }
    }
};

struct ActivationBackward {
    float* din;
    const float* dout;
    const float* in;
    const float* out;
    ActivationOp op;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const float x = in[i];
        switch (op) {
        case ActivationOp::ReLU: // out = max(in, 0)
            din[i] = x > 0.0f ? dout[i] : 0.0f;
            break;
        case ActivationOp::GELU: { // out = in * Phi(in): d/din = Phi(in) + in * phi(in)
            const float cdf = 0.5f * (1.0f + erff(x * 1.41421356f * 0.5f));
            const float pdf = 0.5f * 0.564189584f * 1.41421356f * expf(-0.5f * x * x);
            din[i] = dout[i] * (cdf + x * pdf);
            break;
        }
        case ActivationOp::Tanh: // out = tanh(in): d/din = 1 - out^2
            din[i] = dout[i] * (1.0f - out[i] * out[i]);
            break;
        case ActivationOp::GeluTanh:
            din[i] = dout[i] * geluTanhDerivative(x);
            break;
        }
    }
};

// ---- the random Hadamard transform of the weight-gradient operands (nvfp4's hadamard) -------

// out = (H16 D / 4) in along the rows, in groups of 16: for row r = 16 g + j and column c,
// out[r][c] = (1/4) sum_k H16[j][k] s_k in[16 g + k][c], with H16[j][k] = (-1)^popcount(j & k)
// (Sylvester's Hadamard matrix) and s_k = -1 where bit k of signs is set. H16 D / 4 is
// orthogonal, so the transform of both operands cancels in their product. A trailing group of
// fewer than 16 rows is copied. out must not be in.
struct Hadamard16Rows {
    float* out;
    const float* in;
    size_t rows, cols;
    std::uint32_t signs;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const size_t r = i / cols, c = i % cols, first = r - r % 16;
        if (first + 16 > rows) {
            out[i] = in[i];
            return;
        }
        const std::uint32_t j = static_cast<std::uint32_t>(r % 16);
        float sum = 0.0f;
        for (std::uint32_t k = 0; k < 16; ++k) {
            std::uint32_t bits = j & k, parity = 0;
            while (bits != 0) {
                parity ^= bits & 1u;
                bits >>= 1;
            }
            const bool negative = (parity ^ ((signs >> k) & 1u)) != 0;
            const float v = in[(first + k) * cols + c];
            sum += negative ? -v : v;
        }
        out[i] = sum * 0.25f;
    }
};

// out (cols, rows) = in (rows, cols) transposed; one thread per element of out.
struct Transpose {
    float* out;
    const float* in;
    size_t rows, cols;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const size_t c = i / rows, r = i % rows;
        out[i] = in[r * cols + c];
    }
};

// dst row i = src row index[i], one thread per element of dst.
struct GatherRows {
    float* dst;
    const float* src;
    const std::uint32_t* index;
    size_t rowSize;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        dst[i] = src[static_cast<size_t>(index[i / rowSize]) * rowSize + i % rowSize];
    }
};

struct Copy {
    float* out;
    const float* in;
    PLAB_HOST_DEVICE void operator()(size_t i) const { out[i] = in[i]; }
};

// y (rows, cols) += b (cols), per element.
struct AddRowBias {
    float* y;
    const float* bias;
    size_t cols;
    PLAB_HOST_DEVICE void operator()(size_t i) const { y[i] += bias[i % cols]; }
};

// db[o] += sum over rows of dy[row][o], one thread per column.
struct ColumnSumInto {
    float* db;
    const float* dy;
    size_t rows, cols;
    PLAB_HOST_DEVICE void operator()(size_t o) const {
        float s = 0.0f;
        for (size_t r = 0; r < rows; ++r)
            s += dy[r * cols + o];
        db[o] += s;
    }
};

// C (M, N) = or += sum_k A(m, k) B(k, n) with A(m, k) = a[m*am + k*ak], B(k, n) = b[k*bk + n*bn],
// rounding the running sum as the accumulation format asks: the products with an emulated narrow
// accumulator (plain FP32 products go to the policy's GEMM).
struct RoundedGemm {
    float* c;
    const float* a;
    const float* b;
    int m, n, k;
    size_t am, ak, bk, bn;
    bool accumulate;
    AccumulatorRounding acc;
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const size_t row = idx / static_cast<size_t>(n), col = idx % static_cast<size_t>(n);
        c[idx] = acc.sum(accumulate ? c[idx] : 0.0f, k, idx, [&](int kk) {
            return a[row * am + static_cast<size_t>(kk) * ak] *
                   b[static_cast<size_t>(kk) * bk + col * bn];
        });
    }
};

// Conv2d, stride 1, "same" zero padding, as nn/conv2d.h: W (OC, C*k*k) then bias (OC). The CPU
// runs im2col and one product per sample; these bodies compute the same sums directly, rounding
// where the CPU's per-sample products would (element indices within one sample's product).
struct ConvGeometry {
    int channels, height, width, outChannels, kernel;
    PLAB_HOST_DEVICE int hw() const { return height * width; }
    PLAB_HOST_DEVICE int rows() const { return channels * kernel * kernel; }
    PLAB_HOST_DEVICE int inSize() const { return channels * hw(); }
    PLAB_HOST_DEVICE int outSize() const { return outChannels * hw(); }
    // im2col's entry (r, pos) of sample x: x[c][i + ki - pad][j + kj - pad], 0 outside.
    PLAB_HOST_DEVICE float column(const float* x, int r, int pos) const {
        const int c = r / (kernel * kernel), ki = (r / kernel) % kernel, kj = r % kernel;
        const int pad = kernel / 2;
        const int si = pos / width + ki - pad, sj = pos % width + kj - pad;
        return (si >= 0 && si < height && sj >= 0 && sj < width) ? x[(c * height + si) * width + sj]
                                                                 : 0.0f;
    }
};

// y[s][oc][pos] = sum_r W[oc][r] cols_s[r][pos] + bias[oc]
struct ConvForward {
    float* y;
    const float* x;
    const float* w;
    ConvGeometry g;
    AccumulatorRounding acc;
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const size_t per = static_cast<size_t>(g.outSize());
        const size_t s = idx / per, within = idx % per;
        const int oc = static_cast<int>(within / g.hw()), pos = static_cast<int>(within % g.hw());
        const float* xs = x + s * static_cast<size_t>(g.inSize());
        const float* wr = w + static_cast<size_t>(oc) * g.rows();
        const int rows = g.rows();
        const float sum =
            acc.sum(0.0f, rows, within, [&](int r) { return wr[r] * g.column(xs, r, pos); });
        const float* bias = w + static_cast<size_t>(g.outChannels) * rows;
        y[idx] = sum + bias[oc];
    }
};

// dW[oc][r] += sum_s sum_pos dy_s[oc][pos] cols_s[r][pos]; one thread per weight.
struct ConvWeightGrad {
    float* dw;
    const float* dy;
    const float* x;
    ConvGeometry g;
    int batch;
    AccumulatorRounding acc;
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const int oc = static_cast<int>(idx / g.rows()), r = static_cast<int>(idx % g.rows());
        const int hw = g.hw();
        float sum = dw[idx];
        for (int s = 0; s < batch; ++s) { // one product per sample, accumulating, as the CPU
            const float* xs = x + static_cast<size_t>(s) * g.inSize();
            const float* dys =
                dy + static_cast<size_t>(s) * g.outSize() + static_cast<size_t>(oc) * hw;
            sum = acc.sum(sum, hw, idx, [&](int pos) { return dys[pos] * g.column(xs, r, pos); });
        }
        dw[idx] = sum;
    }
};

// db[oc] += sum_s sum_pos dy_s[oc][pos] (per sample, as the CPU adds them).
struct ConvBiasGrad {
    float* db;
    const float* dy;
    ConvGeometry g;
    int batch;
    PLAB_HOST_DEVICE void operator()(size_t oc) const {
        float total = db[oc];
        for (int s = 0; s < batch; ++s) {
            const float* dys = dy + static_cast<size_t>(s) * g.outSize() + oc * g.hw();
            float part = 0.0f;
            for (int pos = 0; pos < g.hw(); ++pos)
                part += dys[pos];
            total += part;
        }
        db[oc] = total;
    }
};

// dx_s[c][si][sj] = sum over the kernel offsets that read it of dcols[r][pos], with
// dcols = W^T dy_s (rounded over oc as the CPU's product); im2col's adjoint adds them unrounded.
struct ConvInputGrad {
    float* dx;
    const float* dy;
    const float* w;
    ConvGeometry g;
    AccumulatorRounding acc;
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const size_t per = static_cast<size_t>(g.inSize());
        const size_t s = idx / per, within = idx % per;
        const int c = static_cast<int>(within / g.hw());
        const int si = static_cast<int>(within % g.hw()) / g.width;
        const int sj = static_cast<int>(within % g.hw()) % g.width;
        const int k = g.kernel, pad = k / 2, hw = g.hw(), rows = g.rows();
        const float* dys = dy + s * static_cast<size_t>(g.outSize());
        float total = 0.0f;
        for (int ki = 0; ki < k; ++ki)
            for (int kj = 0; kj < k; ++kj) {
                const int i = si - ki + pad, j = sj - kj + pad; // output pixel that read it
                if (i < 0 || i >= g.height || j < 0 || j >= g.width)
                    continue;
                const int r = (c * k + ki) * k + kj, pos = i * g.width + j;
                total +=
                    acc.sum(0.0f, g.outChannels, static_cast<size_t>(r) * hw + pos, [&](int oc) {
                        return w[static_cast<size_t>(oc) * rows + r] * dys[oc * hw + pos];
                    });
            }
        dx[idx] = total;
    }
};

// 2x2 max pooling, stride 2, over (C, H, W) of the input; argmax holds the winning input index
// within its sample (first maximum in row-major window order, as the CPU).
struct MaxPoolForward {
    float* y;
    int* argmax;
    const float* x;
    int channels, height, width; // of the input
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const int oh = height / 2, ow = width / 2;
        const size_t per = static_cast<size_t>(channels) * oh * ow;
        const size_t s = idx / per;
        const int k = static_cast<int>(idx % per);
        const int c = k / (oh * ow), i = (k / ow) % oh, j = k % ow;
        const float* xs = x + s * static_cast<size_t>(channels) * height * width;
        int best = (c * height + 2 * i) * width + 2 * j;
        for (int di = 0; di < 2; ++di)
            for (int dj = 0; dj < 2; ++dj) {
                const int at = (c * height + 2 * i + di) * width + 2 * j + dj;
                if (xs[at] > xs[best])
                    best = at;
            }
        y[idx] = xs[best];
        argmax[idx] = best;
    }
};

// dx[at] = dy[k] where at won window k, else 0 (windows do not overlap).
struct MaxPoolBackward {
    float* dx;
    const int* argmax;
    const float* dy;
    int channels, height, width; // of the input
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const int oh = height / 2, ow = width / 2;
        const size_t per = static_cast<size_t>(channels) * height * width;
        const size_t s = idx / per;
        const int at = static_cast<int>(idx % per);
        const int c = at / (height * width), h = (at / width) % height, w = at % width;
        const int i = h / 2, j = w / 2;
        float v = 0.0f;
        if (i < oh && j < ow) {
            const size_t k = s * static_cast<size_t>(channels) * oh * ow +
                             static_cast<size_t>((c * oh + i) * ow + j);
            if (argmax[k] == at)
                v = dy[k];
        }
        dx[idx] = v;
    }
};

// One row of softmax cross-entropy (nn/softmax_cross_entropy.h): sum = the row's loss,
// sumSq = 1 when the arg-max is the label; dlogits (if any) = (p - onehot) * gradScale / B.
struct SoftmaxCrossEntropyRow {
    float* dlogits;
    const float* logits;
    const std::uint8_t* labels;
    int batch, classes;
    float gradScale;
    PLAB_HOST_DEVICE Reduction operator()(size_t b) const {
        const size_t row = b * static_cast<size_t>(classes);
        bool correct = false;
        Reduction r;
        r.sum = softmaxCrossEntropyRow(logits + row, labels[b], classes,
                                       dlogits != nullptr ? dlogits + row : nullptr, gradScale,
                                       batch, &correct);
        r.sumSq = correct ? 1.0 : 0.0;
        return r;
    }
};

// ---- optimiser and master update (engine/optimizer.cpp) ---------------------------------------

struct SgdMomentum { // first = mu first + (g + wd m)
    float* first;
    const float* grad;
    const float* master;
    float mu, wd;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        first[i] = mu * first[i] + (grad[i] + wd * master[i]);
    }
};

struct SgdUpdate { // update = lr first
    float* update;
    const float* first;
    float rate;
    PLAB_HOST_DEVICE void operator()(size_t i) const { update[i] = rate * first[i]; }
};

// wd: L2 decay added to the gradient (Adam); 0 for AdamW, whose decay is in AdamUpdate.
struct AdamMoments {
    float* first;
    float* second;
    const float* grad;
    const float* master;
    float b1, b2, wd;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const float g = grad[i] + wd * master[i];
        first[i] = b1 * first[i] + (1.0f - b1) * g;
        second[i] = b2 * second[i] + (1.0f - b2) * g * g;
    }
};

// decay: AdamW's decoupled weight decay, lr * wd (0 for Adam).
struct AdamUpdate {
    float* update;
    const float* first;
    const float* second;
    const float* master;
    float rate, eps, decay;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        update[i] = rate * first[i] / (sqrtf(second[i]) + eps) + decay * master[i];
    }
};

struct Subtract { // next = master - update
    float* next;
    const float* master;
    const float* update;
    PLAB_HOST_DEVICE void operator()(size_t i) const { next[i] = master[i] - update[i]; }
};

// master = next; sum counts nonzero updates, sumSq those that left the master unchanged.
struct CommitMaster {
    float* master;
    const float* next;
    const float* update;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        Reduction r;
        const bool moved = update[i] != 0.0f;
        r.sum = moved ? 1.0 : 0.0;
        r.sumSq = moved && next[i] == master[i] ? 1.0 : 0.0;
        master[i] = next[i];
        return r;
    }
};

// ---- block scaling (numerics/block_kernels.h holds the per-block bodies) ---------------------

// Largest non-NaN |x| (Inf included): NVFP4's tensor amax.
struct NonNanAmax {
    const float* x;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        Reduction r;
        r.maxBits = blocks::NonNanAmaxBits{x}(i);
        return r;
    }
};

// ---- error metrics (QuantError, measureError in numerics/quant_stats.cpp) --------------------

// Finite pairs only. sum: x^2, sumSq: (q - x)^2.
struct ErrorSquares {
    const float* input;
    const float* output;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        Reduction r;
        const double x = input[i], q = output[i];
        if (absBits(input[i]) < 0x7F800000u && absBits(output[i]) < 0x7F800000u) {
            r.sum = x * x;
            r.sumSq = (q - x) * (q - x);
        }
        return r;
    }
};

// Finite pairs only. sum: 1 per pair, sumSq: q^2.
struct OutputSquares {
    const float* input;
    const float* output;
    PLAB_HOST_DEVICE Reduction operator()(size_t i) const {
        Reduction r;
        if (absBits(input[i]) < 0x7F800000u && absBits(output[i]) < 0x7F800000u) {
            const double q = output[i];
            r.sum = 1.0;
            r.sumSq = q * q;
        }
        return r;
    }
};

} // namespace plab::kernels
