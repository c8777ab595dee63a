// The tiny byte-level GPT (the PyTorch peer ../shared/peers/gpt_torch.py, layer for layer):
// token + position embedding; `blocks` pre-LayerNorm blocks of causal self-attention (fused QKV,
// output projection) and a GELU (tanh) MLP width -> 4 width -> width, each added to the residual
// stream; a final LayerNorm and an untied head (with bias) to vocabulary logits; the mean
// cross-entropy of the next byte. Parameters in one flat buffer in PyTorch's named_parameters()
// order (so that a state dict maps onto it one to one); activations kept for backward, llm.c
// style. FP32 throughout: the precision recipe's casts attach to it in the trainer.
//
// It runs on an engine (engine/tensor_ops.h): its parameters, activations and gradients live in
// the engine's memory and its layers are the engine's TransformerOps, so that the same model
// trains on the CPU and on a GPU.
#pragma once

#include "engine/tensor_ops.h"
#include "numerics/block_quantizer.h"
#include "numerics/tensor_role.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plab::transformer {

// Where in a stage a cast happens, for overrides by kind (PrecisionRecipe::kindOverrides): a
// product's plain operand, a LayerNorm output a product reads, the attention probabilities, the
// attention scores' gradient, or the embedding tables the lookup reads (not cast unless a
// recipe asks).
enum class GptSite { Product, NormOutput, Probabilities, ScoreGradients, Embedding };
inline constexpr int kGptSiteCount = 5;
// The site's kind name in recipes ("" for Product).
const char* siteKind(GptSite site);

// Casts the operands of every matrix product in place, by stage and operand: the trainer's
// quantisers (and their counters) behind it. Stages of the GPT ("what a layer is" for per-layer
// settings): per block an attention stage (the QKV projection, q . k^T, att . v and the output
// projection) and an MLP stage (fc and out), then the head; 2 * blocks + 1 in all. The
// embeddings are lookups and the LayerNorms element-wise: no product, no cast (FP32), as mixed
// precision recipes keep them.
class GptCasts {
public:
    virtual ~GptCasts() = default;
    // values: in the model's engine's memory, laid out as layout says (its rows for block
    // scaling: a product's operand (rows, its reduction's width), a weight (outputs, inputs)).
    virtual void cast(int stage, TensorRole operand, GptSite site, Tensor values,
                      const BlockLayout& layout) = 0;
    // The random Hadamard transform of a product's weight-gradient operands (NVIDIA's NVFP4
    // recipe): whether this stage's weight gradients come from them, and each operand, raw
    // (rows, width) before its cast, transformed along the rows and cast in blocks along them
    // into `into` (width, rows); work holds rows x width floats.
    virtual bool hadamard(int stage) const {
        (void)stage;
        return false;
    }
    virtual void castAlongRows(int stage, TensorRole operand, GptSite site, Tensor raw,
                               std::size_t rows, std::size_t width, Tensor into, Tensor work) {
        (void)stage, (void)operand, (void)site, (void)raw, (void)rows, (void)width, (void)into,
            (void)work;
    }
    // Per-layer gradient scaling (Zhao et al.): the factor the gradient arriving at `stage`'s
    // outputs is multiplied by, chosen from that gradient; `cumulative` is the product of the
    // factors above. The model applies it to the whole residual-stream gradient at the stage
    // boundary (a sum needs one scale) and records each stage's scale. Default: 1 (none).
    virtual double gradientScale(int stage, Tensor gradient, double cumulative) {
        (void)stage, (void)gradient, (void)cumulative;
        return 1.0;
    }
};

struct GptSpec {
    int vocab = 256, context = 64, width = 128, heads = 4, blocks = 2;
    bool operator==(const GptSpec&) const = default;
};

// One named parameter tensor of the flat buffer: rows x cols (cols 1 for a vector).
struct GptTensor {
    std::string name; // PyTorch's: "blocks.0.qkv.weight"
    std::size_t offset = 0, rows = 0, cols = 1;
    bool matrix() const { return cols > 1; } // AdamW decays matrices (and embeddings) only
    std::size_t size() const { return rows * cols; }
};

// The share of channels whose amax exceeds `factor` times the median channel's amax (0 for no
// channels): the outlier measure logged per stage.
double outlierChannelShare(const std::vector<float>& channelAmax, double factor = 6.0);

class GptModel {
public:
    // On `ops`, which must outlive the model; without: on a CPU engine of its own. Throws
    // std::invalid_argument for a width not divisible by heads or a size below 1.
    GptModel(const GptSpec& spec, TensorOps& ops);
    explicit GptModel(const GptSpec& spec);
    ~GptModel();
    GptModel(const GptModel&) = delete;
    GptModel& operator=(const GptModel&) = delete;

    TensorOps& ops() const { return *m_ops; }
    const GptSpec& spec() const { return m_spec; }
    std::size_t parameterCount() const { return m_count; }
    const std::vector<GptTensor>& tensors() const { return m_tensors; }
    int stageCount() const { return 2 * m_spec.blocks + 1; }
    std::string stageName(int stage) const; // "block0.attention", "block0.mlp", ..., "head"
    std::string stageKind(int stage) const; // "attention", "mlp" or "head"
    // The stage whose products read parameter tensor i (-1: none, an embedding or a norm).
    int stageOfTensor(std::size_t i) const;
    // The stage a parameter tensor's master copy and optimiser state are counted in: its
    // products' stage, else the embeddings in the first, a block's norms in the stage they feed
    // (ln1: attention, ln2: MLP) and the final norm in the head's.
    int stageHolding(std::size_t i) const;
    // Buffers for batches of up to `batch` windows of the context, in the engine's memory
    // (forward grows them when a larger batch comes; the engine frees memory only at its end).
    void reserve(int batch);
    // What reserve(batch) allocates on a model with nothing reserved yet, in bytes (the same
    // sums; test_gpt_run holds the two together): what a config's batch costs before it is
    // asked of an engine.
    std::size_t bytesToReserve(int batch) const;
    // Casts for the following forward and backward passes (null: FP32). Not owned.
    void setCasts(GptCasts* casts) { m_casts = casts; }

    // The peer's initialisation: N(0, 0.02) for matrices and embeddings, N(0, 0.02 /
    // sqrt(2 blocks)) for each block's output projections (proj, out), biases 0, LayerNorm 1 / 0.
    // params: on the host.
    void initParameters(float* params, std::uint64_t seed) const;

    // Logits of tokens (B, T) (T <= context) and their mean next-byte cross-entropy in nats
    // against targets (B, T), both on the host; keeps what backward needs. params (the engine's
    // memory, parameterCount()) must stay as they are until backward.
    double forward(Tensor params, const std::uint8_t* tokens, const std::uint8_t* targets,
                   int batch, int time);
    // How many of the last forward's positions ranked their target first.
    int correctPredictions() const { return m_correct; }
    // grads (overwritten; engine memory) of the last forward's loss times lossScale (mixed
    // precision's loss scaling: the gradients arrive scaled; the caller unscales them).
    void backward(Tensor params, Tensor grads, float lossScale = 1.0f);
    // Per stage, the scale the last backward's gradients carry there: the loss scale times the
    // per-layer factors at and above it (GptCasts::gradientScale). A parameter tensor's
    // gradient carries its stageHolding's.
    const std::vector<double>& gradientScales() const { return m_stageScales; }
    // The last forward's logits (B, T, V), copied to the host; row r's only with row >= 0.
    std::vector<float> logits(int row = -1) const;
    // Per channel, the largest |x| over the last forward's rows of the stage's input (the
    // LayerNorm output its first product reads, FP32, before any cast): where outlier channels
    // (LLM.int8's outlier features) show.
    std::vector<float> channelAmax(int stage) const;

private:
    struct BlockOffsets {
        std::size_t ln1w, ln1b, ln2w, ln2b, qkvw, qkvb, projw, projb, fcw, fcb, outw, outb;
    };
    // Activations of one block, rows = B * T.
    // Activations of one block, rows = B * T; sized for the largest batch seen and the
    // context (views of the current shape are taken from them).
    struct BlockActivations {
        Tensor in; // (rows, C) the residual stream entering the block
        Tensor ln1, ln1Mean, ln1Rstd;
        Tensor qkv;    // (rows, 3C)
        Tensor att;    // (B, H, T, T)
        Tensor attOut; // (rows, C)
        Tensor mid;    // (rows, C) in + proj(attOut)
        Tensor ln2, ln2Mean, ln2Rstd;
        Tensor fc;   // (rows, 4C)
        Tensor gelu; // (rows, 4C)
        // With casts: the cast copies the products read (and their weight gradients need).
        Tensor ln1Cast, attOutCast, ln2Cast, geluCast;
    };

    GptModel(const GptSpec& spec, std::unique_ptr<TensorOps> own);
    std::size_t add(const std::string& name, std::size_t rows, std::size_t cols);
    // The operand a product reads: values (rows of `width`), or (with casts) a cast copy kept
    // in `copy`.
    Tensor operand(int stage, TensorRole role, Tensor values, Tensor copy, std::size_t width,
                   GptSite site = GptSite::Product);
    // One product's backward (out = in . W^T + b): the arriving gradient dout (rows, outputs)
    // cast as the recipe says, din = dout . W (overwritten), dW and db added from dout and the
    // input forward read (under the Hadamard transform, dW from the raw operands, transformed
    // and cast along the rows), then the weight and bias gradients cast.
    struct ProductInput {
        Tensor read, raw; // as the product read it (cast), and before its cast
        GptSite site = GptSite::Product;
    };
    void productBackward(int stage, Tensor din, Tensor grads, Tensor w, std::size_t weight,
                         std::size_t bias, Tensor dout, const ProductInput& input, int rows,
                         int inputs, int outputs);
    // The current shape's view of a buffer of `perRow` floats per row (or of the attention's
    // (B, H, T, T) when perRow is 0).
    Tensor view(Tensor buffer, std::size_t perRow) const;

    std::unique_ptr<TensorOps> m_ownOps; // without an engine given
    TensorOps* m_ops;
    GptSpec m_spec;
    std::vector<GptTensor> m_tensors;
    std::size_t m_count = 0;
    std::size_t m_tok = 0, m_pos = 0, m_lnfw = 0, m_lnfb = 0, m_headw = 0, m_headb = 0;
    std::vector<BlockOffsets> m_blockOffsets;

    int m_capacity = 0; // batch rows the buffers hold (times the context)
    int m_batch = 0, m_time = 0, m_correct = 0;
    std::uint8_t* m_tokens = nullptr; // the last forward's, in the engine's memory
    std::uint8_t* m_targets = nullptr;
    std::vector<BlockActivations> m_acts;
    Tensor m_final, m_lnf, m_lnfMean, m_lnfRstd, m_logits, m_dlogits;
    Tensor m_dlnf, m_dx, m_dmid, m_dln, m_dattOut, m_dqkv, m_dfc, m_dscores;
    std::vector<double> m_stageScales;
    GptCasts* m_casts = nullptr;
    bool m_castLastForward = false;
    Tensor m_castParams, m_lnfCast, m_gradCast;
    // The Hadamard transform's operands and work space, and the discarded plain dW.
    Tensor m_rhtGrad, m_rhtInput, m_rhtWork, m_rhtDiscard;
};

} // namespace plab::transformer
