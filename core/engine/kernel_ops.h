// KernelOps: TensorOps written against the per-index bodies of kernel_bodies.h and a small
// execution policy, so that one implementation serves the CUDA engine (core/cuda, the policy
// launches grids on a stream) and its host emulation (host_kernel_ops.cpp, the policy loops),
// which the tests use to check the GPU engine's arithmetic and orchestration on any machine.
//
// A Policy provides:
//   std::string name() const;
//   void* allocate(std::size_t bytes);                       // zeroed; lives as long as the policy
//   void toDevice(void* dst, const void* host, std::size_t bytes);
//   void toHost(void* host, const void* src, std::size_t bytes);
//   void copyOnDevice(void* dst, const void* src, std::size_t bytes);
//   template <class Body> void forEach(std::size_t n, const Body& body);      // body(i) for all i
//   template <class Body> kernels::Reduction reduce(std::size_t n, const Body& body); // waits
//   void gemm(const GemmCall& call);                         // plain FP32 products
//   void quantize(const Quantizer& q, const float* in, float* out, std::size_t n,
//                 QuantStats* stats, const QuantizeOptions& options);
//   void sendStatistics(); bool receiveStatistics(bool wait); // as TensorOps
#pragma once

#include "engine/gemm_call.h"
#include "engine/kernel_bodies.h"
#include "engine/kernel_transformer_ops.h"
#include "engine/optimizer.h"
#include "engine/tensor_ops.h"
#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/max_pool2d.h"
#include "numerics/reference_quantize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace plab {

template <class Policy>
class KernelOps final : public TensorOps {
public:
    template <class... Args>
    explicit KernelOps(Args&&... args)
        : m_policy(std::forward<Args>(args)...), m_transformer(m_policy) {}

    Policy& policy() { return m_policy; }
    std::string name() const override { return m_policy.name(); }

    Tensor allocate(std::size_t n) override {
        return {static_cast<float*>(m_policy.allocate(n * sizeof(float))), n};
    }
    std::uint8_t* allocateLabels(std::size_t n) override {
        return static_cast<std::uint8_t*>(m_policy.allocate(n));
    }
    void upload(Tensor dst, const float* host) override {
        m_policy.toDevice(dst.data, host, dst.size * sizeof(float));
    }
    void uploadLabels(std::uint8_t* dst, const std::uint8_t* host, std::size_t n) override {
        m_policy.toDevice(dst, host, n);
    }
    void download(float* host, Tensor src) override {
        m_policy.toHost(host, src.data, src.size * sizeof(float));
    }
    void copy(Tensor dst, Tensor src) override {
        m_policy.copyOnDevice(dst.data, src.data, std::min(dst.size, src.size) * sizeof(float));
    }
    Tensor residentRows(const float* host, std::size_t count, std::size_t rowSize) override {
        const Tensor t = allocate(count * rowSize);
        upload(t, host);
        return t;
    }
    void gatherRows(Tensor dst, Tensor rows, std::size_t rowSize,
                    std::span<const std::uint32_t> indices) override {
        if (m_indexCapacity < indices.size()) {
            m_indices = static_cast<std::uint32_t*>(
                m_policy.allocate(indices.size() * sizeof(std::uint32_t)));
            m_indexCapacity = indices.size();
        }
        m_policy.toDevice(m_indices, indices.data(), indices.size() * sizeof(std::uint32_t));
        m_policy.forEach(indices.size() * rowSize,
                         kernels::GatherRows{dst.data, rows.data, m_indices, rowSize});
    }
    void fill(Tensor t, float value) override {
        m_policy.forEach(t.size, kernels::Fill{t.data, value});
    }
    void scale(Tensor t, float factor) override {
        m_policy.forEach(t.size, kernels::Scale{t.data, factor});
    }

    TensorMoments moments(Tensor t) override {
        TensorMoments m;
        if (t.size == 0)
            return m;
        const kernels::Reduction r = m_policy.reduce(t.size, kernels::Moments{t.data});
        const auto n = static_cast<double>(t.size);
        m.mean = r.sum / n;
        m.stdDev = std::sqrt(std::max(0.0, r.sumSq / n - m.mean * m.mean));
        m.maxAbs = element::floatOf(r.maxBits);
        return m;
    }
    bool allFinite(Tensor t) override {
        return m_policy.reduce(t.size, kernels::CountNonFinite{t.data}).sum == 0.0;
    }
    double sumOfSquares(Tensor t) override {
        return m_policy.reduce(t.size, kernels::Moments{t.data}).sumSq;
    }
    double amax(Tensor t) override {
        return element::floatOf(m_policy.reduce(t.size, kernels::FiniteAmax{t.data}).maxBits);
    }

    void quantize(const Quantizer& q, Tensor in, Tensor out, QuantStats* stats,
                  const QuantizeOptions& options) override {
        if (!options.measureError || stats == nullptr) {
            m_policy.quantize(q, in.data, out.data, in.size, stats, options);
            return;
        }
        // The kernels do not sum the error: a reduction after the cast, from a copy of the
        // input when the cast overwrites it.
        Tensor input = in;
        if (in.data == out.data) {
            if (m_errorInput.size < in.size)
                m_errorInput = allocate(in.size);
            input = m_errorInput.slice(0, in.size);
            copy(input, in);
        }
        QuantizeOptions cast = options; // a policy may cast through the CPU's Quantizer
        cast.measureError = false;
        m_policy.quantize(q, in.data, out.data, in.size, stats, cast);
        stats->error.merge(errorMoments(input, out));
    }
    // As quantizeScaled() (numerics/amax_scaling.cpp), pass for pass.
    void quantizeScaled(const Quantizer& q, Tensor in, Tensor out, double scale, QuantStats* stats,
                        const QuantizeOptions& options, double* inputAmax) override {
        const auto s = static_cast<float>(scale);
        const auto inverse = static_cast<float>(1.0 / scale);
        const std::size_t n = in.size;
        if (inputAmax != nullptr)
            *inputAmax = element::floatOf(
                m_policy.reduce(n, kernels::ScaleIntoWithAmax{out.data, in.data, s}).maxBits);
        else if (s != 1.0f)
            m_policy.forEach(n, kernels::ScaleInto{out.data, in.data, s});
        else if (in.data != out.data)
            copy(out, in);
        m_policy.quantize(q, out.data, out.data, n, stats, options);
        if (s != 1.0f)
            m_policy.forEach(n, kernels::Scale{out.data, inverse});
    }
    // As quantizeBlocks() (numerics/block_quantizer.cpp), pass for pass: one thread per block
    // scales, the fused cast, one thread per block dequantises. The blocks' facts come back to
    // the host only when counted.
    BlockQuantizeResult quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                       Tensor in, Tensor out, const BlockLayout& layout,
                                       QuantStats* stats, BlockStats* blockStats,
                                       const QuantizeOptions& options) override {
        const std::size_t n = in.size;
        BlockQuantizeResult result;
        if (n == 0)
            return result;
        const blocks::Geometry g = blockGeometry(layout, n, scheme.blockSize);
        const std::size_t count = g.blockCount();
        if (m_blockInfoCapacity < count) {
            m_blockInfo = static_cast<BlockInfo*>(m_policy.allocate(count * sizeof(BlockInfo)));
            m_blockInfoCapacity = count;
        }
        if (scheme.kind == BlockScaleKind::Nvfp4) {
            result.inputAmax =
                element::floatOf(m_policy.reduce(n, kernels::NonNanAmax{in.data}).maxBits);
            result.tensorScale = blocks::nvfp4TensorScale(
                result.inputAmax, static_cast<float>(element.config().format.maxFinite()));
        }
        const blocks::ScaleBlocks body = scaleBlocksBody(
            element, scheme, in.data, out.data, m_blockInfo, g, result.tensorScale, options);
        m_policy.forEach(count, body);
        m_policy.quantize(element, out.data, out.data, n, stats, options);
        m_policy.forEach(count,
                         blocks::DequantizeBlocks{out.data, m_blockInfo, g, result.tensorScale});
        if (stats == nullptr && blockStats == nullptr)
            return result;
        m_blockInfoHost.resize(count);
        m_policy.toHost(m_blockInfoHost.data(), m_blockInfo, count * sizeof(BlockInfo));
        foldBlockFacts(m_blockInfoHost, scheme, stats, blockStats);
        return result;
    }
    void hadamard16(Tensor out, Tensor in, std::size_t rows, std::size_t cols,
                    std::uint32_t signs) override {
        m_policy.forEach(rows * cols,
                         kernels::Hadamard16Rows{out.data, in.data, rows, cols, signs});
    }
    void transpose(Tensor out, Tensor in, std::size_t rows, std::size_t cols) override {
        m_policy.forEach(rows * cols, kernels::Transpose{out.data, in.data, rows, cols});
    }
    QuantError errorMoments(Tensor input, Tensor output) override {
        QuantError e;
        const std::size_t n = std::min(input.size, output.size);
        if (n == 0)
            return e;
        const kernels::Reduction a =
            m_policy.reduce(n, kernels::ErrorSquares{input.data, output.data});
        const kernels::Reduction b =
            m_policy.reduce(n, kernels::OutputSquares{input.data, output.data});
        e.count = static_cast<std::uint64_t>(b.sum);
        e.signalSq = a.sum;
        e.errorSq = a.sumSq;
        e.outputSq = b.sumSq;
        return e;
    }
    void sendStatistics() override { m_policy.sendStatistics(); }
    bool receiveStatistics(bool wait) override { return m_policy.receiveStatistics(wait); }

    // A layer's pair runs by its registration (LayerKernels below): one entry per Layer class.
    void forward(Layer& layer, float* out, const float* in, const float* weights, int batch,
                 const Accumulation& acc) override {
        kernelsOf(layer).forward(*this, layer, out, in, weights, batch, acc);
    }
    void backward(Layer& layer, float* din, float* dweights, const float* dout, const float* in,
                  const float* out, const float* weights, int batch,
                  const Accumulation& acc) override {
        kernelsOf(layer).backward(*this, layer, din, dweights, dout, in, out, weights, batch, acc);
    }
    void addColumnSums(float* db, const float* dy, int rows, int cols) override {
        m_policy.forEach(static_cast<std::size_t>(cols),
                         kernels::ColumnSumInto{db, dy, static_cast<std::size_t>(rows),
                                                static_cast<std::size_t>(cols)});
    }
    void addWeightGradientTransposed(float* dweights, const float* doutT, const float* inT,
                                     int outputs, int inputs, int batch,
                                     const Accumulation& acc) override {
        const auto b = static_cast<std::size_t>(batch);
        gemm({dweights, doutT, inT, outputs, inputs, batch, b, 1, 1, b, true}, acc); // dyT xT^T
    }

    LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                                   int classes, float* dlogits, float gradScale) override {
        const kernels::Reduction r = m_policy.reduce(
            static_cast<std::size_t>(batch),
            kernels::SoftmaxCrossEntropyRow{dlogits, logits, labels, batch, classes, gradScale});
        return {r.sum / batch, static_cast<int>(r.sumSq)};
    }
    TransformerOps& transformer() override { return m_transformer; }

    // As computeOptimizerUpdate() (engine/optimizer.cpp), pass for pass.
    void optimizerUpdate(const OptimizerSettings& settings, OptimizerState state, std::int64_t step,
                         Tensor grad, Tensor master, Tensor update, double lr,
                         const Quantizer& stateFormat, QuantStats* stateStats,
                         const QuantizeOptions& options) override {
        const std::size_t n = grad.size;
        const auto wd = static_cast<float>(settings.weightDecay);
        if (settings.kind == OptimizerKind::Sgd) {
            m_policy.forEach(n, kernels::SgdMomentum{state.first.data, grad.data, master.data,
                                                     static_cast<float>(settings.momentum), wd});
            quantize(stateFormat, state.first, state.first, stateStats, options);
            m_policy.forEach(
                n, kernels::SgdUpdate{update.data, state.first.data, static_cast<float>(lr)});
            return;
        }
        const bool decoupled = settings.kind == OptimizerKind::AdamW;
        m_policy.forEach(n, kernels::AdamMoments{state.first.data, state.second.data, grad.data,
                                                 master.data, static_cast<float>(settings.beta1),
                                                 static_cast<float>(settings.beta2),
                                                 decoupled ? 0.0f : wd});
        quantize(stateFormat, state.first, state.first, stateStats, options);
        QuantizeOptions secondOptions = options;
        secondOptions.stream ^= 0x5bd1e995u; // independent random bits for the second moment
        quantize(stateFormat, state.second, state.second, stateStats, secondOptions);
        const double c1 = 1.0 - std::pow(settings.beta1, static_cast<double>(step));
        const double c2 = 1.0 - std::pow(settings.beta2, static_cast<double>(step));
        m_policy.forEach(
            n, kernels::AdamUpdate{update.data, state.first.data, state.second.data, master.data,
                                   static_cast<float>(lr * std::sqrt(c2) / c1),
                                   static_cast<float>(settings.epsilon * std::sqrt(c2)),
                                   decoupled ? static_cast<float>(lr) * wd : 0.0f});
    }

    UpdateCounts applyMasterUpdate(Tensor master, Tensor update, Tensor scratch,
                                   const Quantizer& masterFormat, QuantStats* stats,
                                   const QuantizeOptions& options, bool count) override {
        const std::size_t n = master.size;
        m_policy.forEach(n, kernels::Subtract{scratch.data, master.data, update.data});
        quantize(masterFormat, scratch, scratch, stats, options);
        if (!count) {
            m_policy.forEach(n, kernels::Copy{master.data, scratch.data});
            return {};
        }
        const kernels::Reduction r =
            m_policy.reduce(n, kernels::CommitMaster{master.data, scratch.data, update.data});
        return {static_cast<std::uint64_t>(r.sum), static_cast<std::uint64_t>(r.sumSq)};
    }

private:
    // ---- the Layer classes' kernels: a forwardOf / backwardOf pair per class, registered in
    // LayerKernels (a new Layer class: its pair here, its bodies in kernel_bodies.h, its name in
    // that list, its case in tests/engine/layer_cases.cpp) ----

    void forwardOf(Linear& l, float* out, const float* in, const float* weights, int batch,
                   const Accumulation& acc) {
        const int I = l.inFeatures(), O = l.outFeatures();
        // y = x W^T, then y += b
        gemm({out, in, weights, batch, O, I, static_cast<std::size_t>(I), 1, 1,
              static_cast<std::size_t>(I), false},
             acc);
        m_policy.forEach(static_cast<std::size_t>(batch) * O,
                         kernels::AddRowBias{out, weights + static_cast<std::size_t>(O) * I,
                                             static_cast<std::size_t>(O)});
    }
    void backwardOf(Linear& l, float* din, float* dweights, const float* dout, const float* in,
                    const float*, const float* weights, int batch, const Accumulation& acc) {
        const int I = l.inFeatures(), O = l.outFeatures();
        const auto i = static_cast<std::size_t>(I), o = static_cast<std::size_t>(O);
        if (dweights != nullptr) {
            gemm({dweights, dout, in, O, I, batch, 1, o, i, 1, true}, acc); // dW += dy^T x
            addColumnSums(dweights + o * i, dout, batch, O);                // db
        }
        if (din != nullptr)
            gemm({din, dout, weights, batch, I, O, o, 1, i, 1, false}, acc); // dx = dy W
    }
    void forwardOf(Conv2d& c, float* out, const float* in, const float* weights, int batch,
                   const Accumulation& acc) {
        const kernels::ConvGeometry g = geometry(c);
        m_policy.forEach(static_cast<std::size_t>(batch) * g.outSize(),
                         kernels::ConvForward{out, in, weights, g, rounding(acc)});
    }
    void backwardOf(Conv2d& c, float* din, float* dweights, const float* dout, const float* in,
                    const float*, const float* weights, int batch, const Accumulation& acc) {
        const kernels::ConvGeometry g = geometry(c);
        const auto weightsCount = static_cast<std::size_t>(g.outChannels) * g.rows();
        m_policy.forEach(weightsCount,
                         kernels::ConvWeightGrad{dweights, dout, in, g, batch, rounding(acc)});
        m_policy.forEach(static_cast<std::size_t>(g.outChannels),
                         kernels::ConvBiasGrad{dweights + weightsCount, dout, g, batch});
        if (din != nullptr)
            m_policy.forEach(static_cast<std::size_t>(batch) * g.inSize(),
                             kernels::ConvInputGrad{din, dout, weights, g, rounding(acc)});
    }
    void forwardOf(MaxPool2d& p, float* out, const float* in, const float*, int batch,
                   const Accumulation&) {
        const FeatureShape s = p.inputShape();
        const std::size_t n = static_cast<std::size_t>(batch) * p.outputShape().size();
        m_policy.forEach(
            n, kernels::MaxPoolForward{out, argmaxFor(&p, n), in, s.channels, s.height, s.width});
    }
    void backwardOf(MaxPool2d& p, float* din, float*, const float* dout, const float*, const float*,
                    const float*, int batch, const Accumulation&) {
        if (din == nullptr)
            return;
        const FeatureShape s = p.inputShape();
        const std::size_t n = static_cast<std::size_t>(batch) * p.outputShape().size();
        m_policy.forEach(
            static_cast<std::size_t>(batch) * s.size(),
            kernels::MaxPoolBackward{din, argmaxFor(&p, n), dout, s.channels, s.height, s.width});
    }
    void forwardOf(Activation& a, float* out, const float* in, const float*, int batch,
                   const Accumulation&) {
        m_policy.forEach(static_cast<std::size_t>(batch) * a.outputShape().size(),
                         kernels::ActivationForward{out, in, op(a.kind())});
    }
    void backwardOf(Activation& a, float* din, float*, const float* dout, const float* in,
                    const float* out, const float*, int batch, const Accumulation&) {
        if (din != nullptr)
            m_policy.forEach(static_cast<std::size_t>(batch) * a.outputShape().size(),
                             kernels::ActivationBackward{din, dout, in, out, op(a.kind())});
    }
    void forwardOf(Flatten& f, float* out, const float* in, const float*, int batch,
                   const Accumulation&) {
        m_policy.copyOnDevice(
            out, in, static_cast<std::size_t>(batch) * f.outputShape().size() * sizeof(float));
    }
    void backwardOf(Flatten& f, float* din, float*, const float* dout, const float*, const float*,
                    const float*, int batch, const Accumulation&) {
        if (din != nullptr)
            m_policy.copyOnDevice(din, dout,
                                  static_cast<std::size_t>(batch) * f.outputShape().size() *
                                      sizeof(float));
    }

    // One Layer class's pair, type-erased: what the registration list holds.
    struct LayerKernels {
        std::type_index type;
        void (*forward)(KernelOps&, Layer&, float*, const float*, const float*, int,
                        const Accumulation&);
        void (*backward)(KernelOps&, Layer&, float*, float*, const float*, const float*,
                         const float*, const float*, int, const Accumulation&);
    };
    template <class L>
    static LayerKernels kernelsFor() {
        return {typeid(L),
                [](KernelOps& k, Layer& l, float* out, const float* in, const float* w, int batch,
                   const Accumulation& acc) {
                    k.forwardOf(static_cast<L&>(l), out, in, w, batch, acc);
                },
                [](KernelOps& k, Layer& l, float* din, float* dw, const float* dout,
                   const float* in, const float* out, const float* w, int batch,
                   const Accumulation& acc) {
                    k.backwardOf(static_cast<L&>(l), din, dw, dout, in, out, w, batch, acc);
                }};
    }
    // The registrations: every Layer class the GPU engine runs, once.
    static const std::vector<LayerKernels>& layerKernels() {
        static const std::vector<LayerKernels> all = {
            kernelsFor<Linear>(), kernelsFor<Conv2d>(), kernelsFor<MaxPool2d>(),
            kernelsFor<Activation>(), kernelsFor<Flatten>()};
        return all;
    }
    static const LayerKernels& kernelsOf(const Layer& layer) {
        for (const LayerKernels& k : layerKernels())
            if (k.type == typeid(layer))
                return k;
        throw std::logic_error("no GPU kernel for layer " + layer.describe());
    }

    static kernels::ActivationOp op(ActivationKind kind) {
        switch (kind) {
        case ActivationKind::ReLU:
            return kernels::ActivationOp::ReLU;
        case ActivationKind::GELU:
            return kernels::ActivationOp::GELU;
        case ActivationKind::GeluTanh:
            return kernels::ActivationOp::GeluTanh;
        case ActivationKind::Tanh:
            break;
        }
        return kernels::ActivationOp::Tanh;
    }
    static kernels::ConvGeometry geometry(const Conv2d& c) {
        const FeatureShape s = c.inputShape();
        return {s.channels, s.height, s.width, c.outChannels(), c.kernel()};
    }
    static kernels::AccumulatorRounding rounding(const Accumulation& acc) {
        kernels::AccumulatorRounding r;
        if (acc.quantizer == nullptr)
            return r;
        r.enabled = true;
        r.stochastic = acc.quantizer->config().rounding == Rounding::Stochastic;
        r.every = acc.every;
        r.promoteEvery = acc.promoteEvery;
        if (hasFp32Range(acc.quantizer->config())) {
            r.bitRounding = true;
            r.droppedBits = 23 - acc.quantizer->config().format.mantissaBits;
            r.roundHalf = (1u << (r.droppedBits - 1)) - 1u;
            r.keepMask = ~((1u << r.droppedBits) - 1u);
        }
        r.rule = makeElementRule(acc.quantizer->config());
        return r;
    }
    void gemm(const GemmCall& call, const Accumulation& acc) {
        if (acc.quantizer == nullptr) {
            m_policy.gemm(call);
            return;
        }
        m_policy.forEach(static_cast<std::size_t>(call.m) * static_cast<std::size_t>(call.n),
                         kernels::RoundedGemm{call.c, call.a, call.b, call.m, call.n, call.k,
                                              call.am, call.ak, call.bk, call.bn, call.accumulate,
                                              rounding(acc)});
    }
    // The pooling layer's arg-max indices from forward, kept per layer for its backward.
    int* argmaxFor(const MaxPool2d* layer, std::size_t n) {
        auto& slot = m_argmax[layer];
        if (slot.second < n)
            slot = {static_cast<int*>(m_policy.allocate(n * sizeof(int))), n};
        return slot.first;
    }

    Policy m_policy;
    KernelTransformerOps<Policy> m_transformer;
    BlockInfo* m_blockInfo = nullptr; // per block, in the device's memory
    std::size_t m_blockInfoCapacity = 0;
    std::vector<BlockInfo> m_blockInfoHost;
    Tensor m_errorInput; // a cast's input kept for its error sums (quantize, measureError)
    std::uint32_t* m_indices = nullptr; // a step's row indices (gatherRows)
    std::size_t m_indexCapacity = 0;
    std::unordered_map<const MaxPool2d*, std::pair<int*, std::size_t>> m_argmax;
};

} // namespace plab
