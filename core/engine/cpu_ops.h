// CpuOps: TensorOps on host memory with the CPU engine proper: the layers' Eigen/OpenBLAS
// products, the SIMD quantiser on a thread pool, the scaling and optimiser functions.
#pragma once

#include "engine/cpu_transformer_ops.h"
#include "engine/tensor_ops.h"

#include <memory>
#include <vector>

namespace plab {

class CpuOps final : public TensorOps {
public:
    std::string name() const override { return "cpu"; }

    Tensor allocate(std::size_t n) override;
    std::uint8_t* allocateLabels(std::size_t n) override;
    void upload(Tensor dst, const float* host) override;
    void uploadLabels(std::uint8_t* dst, const std::uint8_t* host, std::size_t n) override;
    void download(float* host, Tensor src) override;
    void copy(Tensor dst, Tensor src) override;
    Tensor residentRows(const float* host, std::size_t count, std::size_t rowSize) override;
    void gatherRows(Tensor dst, Tensor rows, std::size_t rowSize,
                    std::span<const std::uint32_t> indices) override;
    void fill(Tensor t, float value) override;
    void scale(Tensor t, float factor) override;

    TensorMoments moments(Tensor t) override;
    bool allFinite(Tensor t) override;
    double sumOfSquares(Tensor t) override;
    double amax(Tensor t) override;

    void quantize(const Quantizer& q, Tensor in, Tensor out, QuantStats* stats,
                  const QuantizeOptions& options) override;
    void quantizeScaled(const Quantizer& q, Tensor in, Tensor out, double scale, QuantStats* stats,
                        const QuantizeOptions& options, double* inputAmax) override;
    BlockQuantizeResult quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                       Tensor in, Tensor out, const BlockLayout& layout,
                                       QuantStats* stats, BlockStats* blockStats,
                                       const QuantizeOptions& options) override;
    QuantError errorMoments(Tensor input, Tensor output) override;
    void hadamard16(Tensor out, Tensor in, std::size_t rows, std::size_t cols,
                    std::uint32_t signs) override;
    void transpose(Tensor out, Tensor in, std::size_t rows, std::size_t cols) override;

    void forward(Layer& layer, float* out, const float* in, const float* weights, int batch,
                 const Accumulation& acc) override;
    void backward(Layer& layer, float* din, float* dweights, const float* dout, const float* in,
                  const float* out, const float* weights, int batch,
                  const Accumulation& acc) override;
    void addColumnSums(float* db, const float* dy, int rows, int cols) override;
    void addWeightGradientTransposed(float* dweights, const float* doutT, const float* inT,
                                     int outputs, int inputs, int batch,
                                     const Accumulation& acc) override;
    LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, int batch,
                                   int classes, float* dlogits, float gradScale) override;
    TransformerOps& transformer() override { return m_transformer; }

    void optimizerUpdate(const OptimizerSettings& settings, OptimizerState state, std::int64_t step,
                         Tensor grad, Tensor master, Tensor update, double lr,
                         const Quantizer& stateFormat, QuantStats* stateStats,
                         const QuantizeOptions& options) override;
    UpdateCounts applyMasterUpdate(Tensor master, Tensor update, Tensor scratch,
                                   const Quantizer& masterFormat, QuantStats* stats,
                                   const QuantizeOptions& options, bool count) override;
    UpdateCounts sgdStepFloat32(const OptimizerSettings& settings, Tensor momentum, Tensor grad,
                                Tensor master, Tensor update, Tensor scratch, double lr,
                                const Float32Sgd& casts) override;

private:
    std::vector<std::unique_ptr<float[]>> m_buffers;
    std::vector<std::unique_ptr<std::uint8_t[]>> m_labels;
    std::vector<BlockInfo> m_blockInfo;
    CpuTransformerOps m_transformer;
};

} // namespace plab
