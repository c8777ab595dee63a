// RecipeCaster: the one place where a precision recipe becomes casts. Given a role's tensor, its
// stage and the step, it applies the recipe as training does: the role's format, rounding
// (stochastic rounding with a (step, stage, role) stream of the run's Philox key), per-tensor amax
// scaling (current, or delayed from an AmaxHistory), block scaling (MX, NVFP4 with weight tiles,
// FP8 blocks), the random Hadamard transform of weight-gradient operands, and the narrow
// accumulator of the recipe's products; every cast counted in its own pass when asked.
//
// The MLP/CNN trainer casts through it on its engine (CPU or GPU), the GPT's casts
// (recipe/gpt_casts.h) on theirs, and the PyTorch emulator (core/torch_runs/emulated_run.h) on the
// CPU engine over the user's own tensors, so a recipe means the same thing wherever it runs.
//
// Sites and kinds (the GPT): a stage may have a kind ("attention", "mlp", "head") and a cast a
// site within it ("norm", "softmax", "embedding"; "" for a product's plain operand), which the
// recipe's overrides by kind address (PrecisionRecipe::config). The embedding site is cast only
// where the recipe sets it (lookup tables stay FP32 otherwise).
#pragma once

#include "engine/tensor_ops.h"
#include "numerics/amax_scaling.h"
#include "numerics/block_quantizer.h"
#include "numerics/tensor_role.h"
#include "recipe/casting_settings.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

class ThreadPool;

// Where a cast's statistics go; null members are not counted.
struct CastCounters {
    QuantStats* stats = nullptr;
    BlockStats* blocks = nullptr;
    double* tensorScale = nullptr; // the amax scale, or NVFP4's s_enc
    // The scaling policy that cast it ("none" for a plain cast), a name of kScalingPolicies.
    std::string_view* scaling = nullptr;
};

class RecipeCaster {
public:
    // Casts on `ops` (which must outlive the caster) for a model of stageCount stages; pool, when
    // given, is the casts' thread pool; stageKinds, when given, each stage's kind.
    RecipeCaster(const CastingSettings& config, int stageCount, TensorOps& ops, ThreadPool* pool,
                 std::vector<std::string> stageKinds = {});

    // The step whose random streams the casts draw from (0 before the first); its casts are
    // numbered from 0 (takeCall).
    void setStep(std::int64_t step);
    std::int64_t step() const { return m_step; }
    int stageCount() const { return m_stageCount; }
    // A new recipe (its quantizers), or new scaling settings (the policy, its amax histories
    // started afresh), from the next cast on.
    void setRecipe(const PrecisionRecipe& recipe);
    void setScaling(const CastingSettings& scaling);
    const CastingSettings& config() const { return m_config; }
    // Delayed scaling's amax histories, for a checkpoint: per tensor its key (stage, role, site,
    // call), its values' count and its values, oldest first; restoreAmaxHistories puts them back.
    std::vector<double> amaxHistories() const;
    void restoreAmaxHistories(const std::vector<double>& saved);

    const Quantizer& quantizer(int stage, TensorRole role) const;
    // The quantiser of a cast at a site ("" a product's operand, "norm", "softmax",
    // "embedding"), or null where the recipe casts nothing there (an embedding it does not set).
    const Quantizer* siteQuantizer(int stage, TensorRole role, std::string_view site) const;
    // The (step, stage, role) random stream of the run's seed, on the caster's pool; call > 0:
    // a further cast of the same role and stage within the step (a module called twice), with
    // words of its own.
    QuantizeOptions options(int stage, TensorRole role, std::uint64_t call = 0) const;
    // The number of the next cast of (stage, role) within the step: a module called twice casts
    // twice, each call with random words (options) and a delayed-scaling history of its own.
    // takeCall counts the cast; nextCall only reads the number (an evaluation's cast under
    // emulate, which draws no call of its own). The one count of every trainer's casts.
    std::uint64_t takeCall(int stage, TensorRole role);
    std::uint64_t nextCall(int stage, TensorRole role) const;
    // The numbering from 0 again within the step (an evaluation pass numbers its casts afresh).
    void restartCalls();
    // Whether the role's cast at this stage (and site) is a plain cast (no tensor or block
    // scale).
    bool isPlain(int stage, TensorRole role, std::string_view site = {}) const;
    // The per-tensor scaling of a stage's products' inputs: its override's, else the run's
    // (recipe/tensor_scaling.h).
    const TensorScaling& scaling(int stage) const;
    // Whether any stage's scaling rescales the products' inputs (amax or blocks), in blocks.
    bool scalesTensors() const;
    bool scalesBlocks() const;

    // in -> values (they may be the same tensor), as the recipe casts the role at this stage.
    // layout: the tensor's rows for block scaling (elements past rows x cols form one more row,
    // as a weight layer's biases do); layout.tiles says the tensor may be tiled (a weight), and
    // it is where the stage's scaling tiles weights. `training` false (evaluation) leaves the amax
    // histories alone. With counters.stats, the cast is counted and its error measured (from a copy
    // of the input kept for it when a scaled cast overwrites it). Returns the whole tensor's
    // largest finite |x| where the cast learnt it (amax scaling, NVFP4), kAmaxInCounts where it
    // is counters.stats->amax (a plain cast), or a pass over the input when counting a block
    // cast that takes no amax. call: as options(); each (stage, role, site, call) tensor keeps
    // an amax history of its own under delayed scaling. A site the recipe does not cast
    // (siteQuantizer null) leaves the values as they are.
    // agreedAmax (>= 0): under per-tensor amax scaling, the amax the replicas agreed on (TE
    // reduces it across the data-parallel group) in place of this tensor's own: a current scale
    // is taken from it, and a delayed history records it.
    static constexpr double kAmaxInCounts = -1.0;
    static constexpr double kOwnAmax = -1.0;
    double cast(int stage, TensorRole role, Tensor in, Tensor values, const BlockLayout& layout,
                const CastCounters& counters, bool training, std::uint64_t call = 0,
                std::string_view site = {}, double agreedAmax = kOwnAmax);
    // Whether the role's cast at this stage is scaled by a per-tensor amax (current or delayed):
    // the casts whose amax replicas reduce.
    bool scalesByTensorAmax(int stage, TensorRole role, std::string_view site = {}) const;

    // The random Hadamard transform (scaling.hadamard, under a block policy): whether the weight
    // gradient of a linear layer of this stage is taken from transformed operands (its
    // activation gradients are cast narrow: a stage a recipe keeps in BF16 is not an FP4
    // product).
    bool hadamardFor(int stage) const;
    bool hadamard() const { return m_hadamard; }
    std::uint32_t hadamardSigns() const { return m_hadamardSigns; }
    // raw (batch, width) transformed in groups of 16 along the batch, then cast in blocks along
    // it in the (stage, role, site) format into `into`, which keeps it transposed: (width,
    // batch). work holds batch x width floats. Not counted: the roles count the forward casts,
    // and these are the same tensors cast again along another dimension (their own random
    // streams).
    Tensor castAlongBatch(int stage, TensorRole role, Tensor raw, std::size_t batch,
                          std::size_t width, Tensor into, Tensor work, std::string_view site = {});

    // The recipe's matrix-product accumulator (none: FP32).
    const Accumulation& accumulation() const { return m_accumulation; }

private:
    enum class TensorScalingKind { None, AmaxCurrent, AmaxDelayed, Blocks };
    // A stage's scaling as the casts use it.
    struct StageScaling {
        TensorScaling settings;
        TensorScalingKind kind = TensorScalingKind::None;
        BlockScheme scheme; // when kind is Blocks
    };
    void applyScalingPolicy();
    // Each stage's scaling from the recipe's overrides and the run's; the amax histories of a
    // stage whose scaling changed start afresh, the others' go on.
    void resolveStageScaling();
    void buildQuantizers();
    const StageScaling& stageScaling(int stage) const {
        return m_stageScaling[static_cast<std::size_t>(stage)];
    }
    // Returns the input amax the cast took (NVFP4's, the larger of the body's and the rest's),
    // or -1 where it took none.
    float castBlocks(const Quantizer& q, const BlockScheme& scheme, Tensor in, Tensor values,
                     const BlockLayout& layout, const CastCounters& counters,
                     const QuantizeOptions& options);
    static int siteIndex(std::string_view site); // kSites
    Tensor keepForError(Tensor in, Tensor out);

    CastingSettings m_config;
    int m_stageCount;
    TensorOps& m_ops;
    ThreadPool* m_pool;
    std::int64_t m_step = 0;
    std::vector<std::array<std::uint64_t, kRoleCount>> m_calls; // [stage][role] this step
    std::vector<std::string> m_stageKinds;
    // [stage][site][role]; null: not cast (an embedding site the recipe does not set)
    std::vector<std::vector<std::vector<std::unique_ptr<Quantizer>>>> m_quantizers;
    std::unique_ptr<Quantizer> m_accumulationQuantizer;
    Accumulation m_accumulation;
    std::vector<StageScaling> m_stageScaling; // per stage
    bool m_hadamard = false;                  // scaling.hadamard, where a stage is block-scaled
    std::uint32_t m_hadamardSigns = 0;        // the transform's random diagonal, fixed per run
    // Delayed scaling: per (stage, role, site, call) tensor: weights, activations, activation
    // gradients (the products' inputs).
    std::map<std::array<std::uint64_t, 4>, AmaxHistory> m_amaxHistory;
    Tensor m_errorInput; // the input of a scaled cast in place, kept when counting
};

} // namespace plab
