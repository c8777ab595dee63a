// TensorOps: every operation on tensors that one training step needs, behind one interface, so
// that the Trainer's orchestration (scaling policies, statistics, the order of rounding points)
// is written once and runs unchanged on the CPU (CpuOps: Eigen/OpenBLAS and the SIMD quantiser)
// or on a GPU (KernelOps over CUDA, core/cuda). Tensors live in the engine's memory: host memory
// for the CPU, device memory for CUDA; only scalars and statistics come back to the caller.
#pragma once

#include "engine/optimizer.h"
#include "engine/transformer_ops.h"
#include "nn/layer.h"
#include "nn/softmax_cross_entropy.h"
#include "numerics/amax_scaling.h"
#include "numerics/block_quantizer.h"
#include "numerics/quantizer.h"
#include "numerics/tensor_moments.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace plab {

// A view of floats in an engine's memory. No element access on purpose: host code must not
// dereference what may be device memory; it asks the engine instead.
struct Tensor {
    float* data = nullptr;
    std::size_t size = 0;
    Tensor slice(std::size_t offset, std::size_t n) const { return {data + offset, n}; }
};

// The optimiser's per-parameter state (momentum, or Adam's two moments) for a range of
// parameters; second is empty for SGD.
struct OptimizerState {
    Tensor first, second;
};

class TensorOps {
public:
    virtual ~TensorOps() = default;
    virtual std::string name() const = 0; // "cpu", "cuda:0 (NVIDIA H200)", ...

    // Memory owned by the engine for its own lifetime, zero-filled.
    virtual Tensor allocate(std::size_t n) = 0;
    virtual std::uint8_t* allocateLabels(std::size_t n) = 0;
    virtual void upload(Tensor dst, const float* host) = 0; // dst.size floats
    virtual void uploadLabels(std::uint8_t* dst, const std::uint8_t* host, std::size_t n) = 0;
    virtual void download(float* host, Tensor src) = 0;
    virtual void copy(Tensor dst, Tensor src) = 0;
    // A data set's samples (count rows of rowSize floats) in the engine's memory for the run:
    // uploaded once, so that a step moves only its row indices.
    virtual Tensor residentRows(const float* host, std::size_t count, std::size_t rowSize) = 0;
    // dst's row i = rows' row indices[i] (the batch a step trains on).
    virtual void gatherRows(Tensor dst, Tensor rows, std::size_t rowSize,
                            std::span<const std::uint32_t> indices) = 0;
    virtual void fill(Tensor t, float value) = 0;
    virtual void scale(Tensor t, float factor) = 0;

    // Reductions: the answer comes back to the host (the engine waits for it).
    virtual TensorMoments moments(Tensor t) = 0;
    virtual bool allFinite(Tensor t) = 0;
    virtual double sumOfSquares(Tensor t) = 0;
    virtual double amax(Tensor t) = 0; // largest finite |x|, as amaxOf()

    // The format engine. Statistics may arrive late: sendStatistics() ends a batch of them (a
    // step's) and starts bringing them to their QuantStats (a GPU copies them back on a side
    // stream while the next step runs) and returns; receiveStatistics(wait) says whether that
    // batch has arrived (merged into its QuantStats), waiting for it if asked. One batch is in
    // flight at a time: sending waits for the one before. options.measureError (with stats):
    // the cast's error sums too (errorMoments(in, out) of the input before the cast), even in
    // place; the CPU sums them in the cast's own pass.
    virtual void quantize(const Quantizer& q, Tensor in, Tensor out, QuantStats* stats,
                          const QuantizeOptions& options) = 0;
    virtual void quantizeScaled(const Quantizer& q, Tensor in, Tensor out, double scale,
                                QuantStats* stats, const QuantizeOptions& options,
                                double* inputAmax) = 0;
    // Block-scaled cast (numerics/block_quantizer.h) of in into out (they may be the same);
    // blockStats, when given, gets every block added (a GPU brings the blocks' facts back for
    // it, so pass it on statistics steps only).
    virtual BlockQuantizeResult quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                               Tensor in, Tensor out, const BlockLayout& layout,
                                               QuantStats* stats, BlockStats* blockStats,
                                               const QuantizeOptions& options) = 0;
    // The error metrics' sums for a cast (QuantError) from its input and its output.
    virtual QuantError errorMoments(Tensor input, Tensor output) = 0;
    // out = the random Hadamard transform of in's rows in groups of 16 (kernels::Hadamard16Rows),
    // and out = in transposed; in is (rows, cols), out another tensor.
    virtual void hadamard16(Tensor out, Tensor in, std::size_t rows, std::size_t cols,
                            std::uint32_t signs) = 0;
    virtual void transpose(Tensor out, Tensor in, std::size_t rows, std::size_t cols) = 0;
    virtual void sendStatistics() {}
    virtual bool receiveStatistics(bool /*wait*/) { return true; }
    void finishStatistics() { // both, waiting
        sendStatistics();
        receiveStatistics(true);
    }

    // One layer's forward/backward pair (the Layer's contract, on this engine's memory).
    virtual void forward(Layer& layer, float* out, const float* in, const float* weights, int batch,
                         const Accumulation& acc) = 0;
    virtual void backward(Layer& layer, float* din, float* dweights, const float* dout,
                          const float* in, const float* out, const float* weights, int batch,
                          const Accumulation& acc) = 0;
    // db (cols) += the column sums of dy (rows, cols): a Linear layer's bias gradient alone, the
    // same bits as its backward's.
    virtual void addColumnSums(float* db, const float* dy, int rows, int cols) = 0;
    // A Linear layer's weight gradient alone from operands kept transposed: dW (outputs, inputs)
    // += dyT (outputs, batch) xT (inputs, batch)^T, the product its backward forms from dy and x
    // (the Hadamard path casts its operands along the batch, in that layout).
    virtual void addWeightGradientTransposed(float* dweights, const float* doutT, const float* inT,
                                             int outputs, int inputs, int batch,
                                             const Accumulation& acc) = 0;
    virtual LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels,
                                           int batch, int classes, float* dlogits,
                                           float gradScale) = 0;
    // The transformer's layers on this engine's memory (the GPT is built from them).
    virtual TransformerOps& transformer() = 0;

    // update = lr * direction for the given gradients (state kept in its format; see Optimizer).
    virtual void optimizerUpdate(const OptimizerSettings& settings, OptimizerState state,
                                 std::int64_t step, Tensor grad, Tensor master, Tensor update,
                                 double lr, const Quantizer& stateFormat, QuantStats* stateStats,
                                 const QuantizeOptions& options) = 0;
    // master <- Q(master - update), with scratch (same size) as the work space. When counting,
    // *updates gets the nonzero updates and *lost those that left the master unchanged.
    using UpdateCounts = MasterUpdateCounts; // engine/optimizer.h
    virtual UpdateCounts applyMasterUpdate(Tensor master, Tensor update, Tensor scratch,
                                           const Quantizer& masterFormat, QuantStats* stats,
                                           const QuantizeOptions& options, bool count) = 0;
    // optimizerUpdate() and then applyMasterUpdate(), for SGD whose momentum and master weights
    // are float32 (the caller checks: both formats are identity Quantizers); with statistics when
    // stateStats / masterStats are set. An engine may fuse the passes (CpuOps: sgdStepFloat32());
    // the result is the same bit for bit, except that update and scratch may be left as they were.
    struct Float32Sgd {
        const Quantizer& stateFormat;
        const Quantizer& masterFormat;
        QuantStats* stateStats = nullptr; // null: not counted
        QuantStats* masterStats = nullptr;
        QuantizeOptions stateOptions{}, masterOptions{};
        bool count = false; // the updates and lost updates (applyMasterUpdate's)
    };
    virtual UpdateCounts sgdStepFloat32(const OptimizerSettings& settings, Tensor momentum,
                                        Tensor grad, Tensor master, Tensor update, Tensor scratch,
                                        double lr, const Float32Sgd& casts) {
        optimizerUpdate(settings, {momentum, {}}, 1, grad, master, update, lr, casts.stateFormat,
                        casts.stateStats, casts.stateOptions);
        return applyMasterUpdate(master, update, scratch, casts.masterFormat, casts.masterStats,
                                 casts.masterOptions, casts.count);
    }
};

} // namespace plab
