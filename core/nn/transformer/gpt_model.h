// The tiny byte-level GPT (the PyTorch peer ../shared/peers/gpt_torch.py, layer for layer):
// token + position embedding; `blocks` pre-LayerNorm blocks of causal self-attention (fused QKV,
// output projection) and a GELU (tanh) MLP width -> 4 width -> width, each added to the residual
// stream; a final LayerNorm and an untied head (with bias) to vocabulary logits; the mean
// cross-entropy of the next byte. Parameters in one flat buffer in PyTorch's named_parameters()
// order (so that a state dict maps onto it one to one); activations kept for backward, llm.c
// style. FP32 throughout: the precision recipe's casts attach to it in the trainer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace plab::transformer {

// The operands the precision recipe casts (its tensor roles, train/precision_recipe.h).
enum class GptOperand { Weights, Activations, ActivationGradients, WeightGradients };
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
    virtual void cast(int stage, GptOperand operand, GptSite site, float* values,
                      std::size_t count) = 0;
    // Per-layer gradient scaling (Zhao et al.): the factor the gradient arriving at `stage`'s
    // outputs is multiplied by, chosen from that gradient; `cumulative` is the product of the
    // factors above. The model applies it to the whole residual-stream gradient at the stage
    // boundary (a sum needs one scale) and records each stage's scale. Default: 1 (none).
    virtual double gradientScale(int stage, const float* gradient, std::size_t count,
                                 double cumulative) {
        (void)stage, (void)gradient, (void)count, (void)cumulative;
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
    // Throws std::invalid_argument for a width not divisible by heads or a size below 1.
    explicit GptModel(const GptSpec& spec);

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
    // Casts for the following forward and backward passes (null: FP32). Not owned.
    void setCasts(GptCasts* casts) { m_casts = casts; }

    // The peer's initialisation: N(0, 0.02) for matrices and embeddings, N(0, 0.02 /
    // sqrt(2 blocks)) for each block's output projections (proj, out), biases 0, LayerNorm 1 / 0.
    void initParameters(float* params, std::uint64_t seed) const;

    // Logits of tokens (B, T) (T <= context) and their mean next-byte cross-entropy in nats
    // against targets (B, T); keeps what backward needs.
    double forward(const float* params, const std::uint8_t* tokens, const std::uint8_t* targets,
                   int batch, int time);
    // grads (overwritten) of the last forward's loss times lossScale (mixed precision's loss
    // scaling: the gradients arrive scaled; the caller unscales them).
    void backward(const float* params, float* grads, float lossScale = 1.0f);
    // Per stage, the scale the last backward's gradients carry there: the loss scale times the
    // per-layer factors at and above it (GptCasts::gradientScale). A parameter tensor's
    // gradient carries its stageHolding's.
    const std::vector<double>& gradientScales() const { return m_stageScales; }
    // The last forward's logits (B, T, V).
    const std::vector<float>& logits() const { return m_logits; }
    // Per channel, the largest |x| over the last forward's rows of the stage's input (the
    // LayerNorm output its first product reads, FP32, before any cast): where outlier channels
    // (LLM.int8's outlier features) show.
    std::vector<float> channelAmax(int stage) const;

private:
    struct BlockOffsets {
        std::size_t ln1w, ln1b, ln2w, ln2b, qkvw, qkvb, projw, projb, fcw, fcb, outw, outb;
    };
    // Activations of one block, rows = B * T.
    struct BlockActivations {
        std::vector<float> in; // (rows, C) the residual stream entering the block
        std::vector<float> ln1, ln1Mean, ln1Rstd;
        std::vector<float> qkv;    // (rows, 3C)
        std::vector<float> att;    // (B, H, T, T)
        std::vector<float> attOut; // (rows, C)
        std::vector<float> mid;    // (rows, C) in + proj(attOut)
        std::vector<float> ln2, ln2Mean, ln2Rstd;
        std::vector<float> fc;   // (rows, 4C)
        std::vector<float> gelu; // (rows, 4C)
        // With casts: the cast copies the products read (and their weight gradients need).
        std::vector<float> ln1Cast, attOutCast, ln2Cast, geluCast;
    };

    std::size_t add(const std::string& name, std::size_t rows, std::size_t cols);
    // The operand a product reads: values, or (with casts) a cast copy kept in `copy`.
    const float* operand(int stage, GptOperand role, const float* values, std::size_t count,
                         std::vector<float>& copy, GptSite site = GptSite::Product);
    // One product's backward (out = in . W^T + b): the arriving gradient dout (rows, outputs)
    // cast as the recipe says, din = dout . W (overwritten), dW and db added from dout and the
    // input forward read, then the weight and bias gradients cast.
    void productBackward(int stage, float* din, float* grads, const float* w, std::size_t weight,
                         std::size_t bias, const float* dout, const float* input, int rows,
                         int inputs, int outputs);
    void resize(int batch, int time);

    GptSpec m_spec;
    std::vector<GptTensor> m_tensors;
    std::size_t m_count = 0;
    std::size_t m_tok = 0, m_pos = 0, m_lnfw = 0, m_lnfb = 0, m_headw = 0, m_headb = 0;
    std::vector<BlockOffsets> m_blockOffsets;

    int m_batch = 0, m_time = 0;
    std::vector<std::uint8_t> m_tokens, m_targets;
    std::vector<BlockActivations> m_acts;
    std::vector<float> m_final, m_lnf, m_lnfMean, m_lnfRstd, m_logits, m_dlogits;
    std::vector<float> m_dlnf, m_dx, m_dmid, m_dln, m_dattOut, m_dqkv, m_dfc, m_dscores;
    std::vector<double> m_stageScales;
    GptCasts* m_casts = nullptr;
    bool m_castLastForward = false;
    std::vector<float> m_castParams, m_lnfCast, m_gradCast;
};

} // namespace plab::transformer
