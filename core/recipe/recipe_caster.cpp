// RecipeCaster: formats, tensor and block scaling, the Hadamard operands.
#include "recipe/recipe_caster.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace plab {
namespace {

// The sites a cast may name, "" (a product's plain operand) first.
constexpr std::array<std::string_view, 4> kSites = {"", "norm", "softmax", "embedding"};
constexpr int kEmbeddingSite = 3;

} // namespace

int RecipeCaster::siteIndex(std::string_view site) {
    for (std::size_t i = 0; i < kSites.size(); ++i)
        if (kSites[i] == site)
            return static_cast<int>(i);
    throw std::invalid_argument("RecipeCaster: unknown site \"" + std::string(site) + "\"");
}

RecipeCaster::RecipeCaster(const CastingSettings& config, int stageCount, TensorOps& ops,
                           ThreadPool* pool, std::vector<std::string> stageKinds)
    : m_config(config), m_stageCount(stageCount), m_ops(ops), m_pool(pool),
      m_stageKinds(std::move(stageKinds)) {
    m_stageKinds.resize(static_cast<std::size_t>(stageCount));
    m_calls.assign(static_cast<std::size_t>(stageCount), {});
    applyScalingPolicy();
    buildQuantizers();
}

void RecipeCaster::setStep(std::int64_t step) {
    m_step = step;
    restartCalls();
}

std::uint64_t RecipeCaster::takeCall(int stage, TensorRole role) {
    return m_calls.at(static_cast<std::size_t>(stage))[static_cast<std::size_t>(role)]++;
}

std::uint64_t RecipeCaster::nextCall(int stage, TensorRole role) const {
    return m_calls.at(static_cast<std::size_t>(stage))[static_cast<std::size_t>(role)];
}

void RecipeCaster::restartCalls() {
    m_calls.assign(m_calls.size(), {});
}

void RecipeCaster::applyScalingPolicy() {
    // SplitMix64 of the seed: 16 random signs, the same for the whole run.
    std::uint64_t z = m_config.seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    m_hadamardSigns = static_cast<std::uint32_t>((z ^ (z >> 31)) & 0xFFFFu);
    m_amaxHistory.clear();
    m_stageScaling.clear();
    resolveStageScaling();
}

void RecipeCaster::resolveStageScaling() {
    const TensorScaling run = m_config.tensorScaling();
    std::vector<StageScaling> resolved(static_cast<std::size_t>(m_stageCount));
    for (int s = 0; s < m_stageCount; ++s) {
        const TensorScaling* own = m_config.recipe.scalingOverride(
            s, m_stageCount, m_stageKinds[static_cast<std::size_t>(s)]);
        StageScaling& stage = resolved[static_cast<std::size_t>(s)];
        stage.settings = own != nullptr ? *own : run;
        const ScalingPolicy policy = stage.settings.policy;
        stage.kind = policy == ScalingPolicy::AmaxCurrent   ? TensorScalingKind::AmaxCurrent
                     : policy == ScalingPolicy::AmaxDelayed ? TensorScalingKind::AmaxDelayed
                     : isBlockScaling(policy)               ? TensorScalingKind::Blocks
                                                            : TensorScalingKind::None;
        if (const std::optional<BlockScheme> scheme = stage.settings.blockScheme())
            stage.scheme = *scheme;
        // A stage whose scaling changed starts its amax histories afresh (a new policy, a new
        // history length); the other stages' go on as they were.
        if (!m_stageScaling.empty() &&
            m_stageScaling[static_cast<std::size_t>(s)].settings != stage.settings)
            std::erase_if(m_amaxHistory, [s](const auto& entry) {
                return entry.first[0] == static_cast<std::uint64_t>(s);
            });
    }
    m_stageScaling = std::move(resolved);
    m_hadamard = m_config.hadamard && scalesBlocks();
}

const TensorScaling& RecipeCaster::scaling(int stage) const {
    return stageScaling(stage).settings;
}

bool RecipeCaster::scalesTensors() const {
    return std::any_of(m_stageScaling.begin(), m_stageScaling.end(),
                       [](const StageScaling& s) { return s.kind != TensorScalingKind::None; });
}

bool RecipeCaster::scalesBlocks() const {
    return std::any_of(m_stageScaling.begin(), m_stageScaling.end(),
                       [](const StageScaling& s) { return s.kind == TensorScalingKind::Blocks; });
}

void RecipeCaster::buildQuantizers() {
    m_quantizers.clear();
    for (int s = 0; s < m_stageCount; ++s) {
        const std::string& kind = m_stageKinds[static_cast<std::size_t>(s)];
        std::vector<std::vector<std::unique_ptr<Quantizer>>> sites(kSites.size());
        for (std::size_t site = 0; site < kSites.size(); ++site)
            for (TensorRole r : kAllRoles) {
                std::unique_ptr<Quantizer>& slot = sites[site].emplace_back();
                if (static_cast<int>(site) == kEmbeddingSite &&
                    !m_config.recipe.siteConfig(kSites[site], r))
                    continue;
                QuantConfig c = m_config.recipe.config(s, m_stageCount, r, kind, kSites[site]);
                // Scaled tensors saturate, as the MX spec and Transformer Engine's casts do: a
                // block or tensor scale is chosen to fill the range, and a stale (delayed) amax
                // or a block's largest element past the element max must clip, not become Inf.
                if (isProductInput(r) && stageScaling(s).kind != TensorScalingKind::None)
                    c.overflow = Overflow::Saturate;
                slot = std::make_unique<Quantizer>(c);
            }
        m_quantizers.push_back(std::move(sites));
    }
    m_accumulationQuantizer.reset();
    m_accumulation = {};
    if (m_config.recipe.accumulation) {
        m_accumulationQuantizer = std::make_unique<Quantizer>(*m_config.recipe.accumulation);
        m_accumulation = {m_accumulationQuantizer.get(), m_config.recipe.accumulateEvery,
                          m_config.recipe.promoteEvery, m_pool};
    }
}

void RecipeCaster::setRecipe(const PrecisionRecipe& recipe) {
    m_config.recipe = recipe;
    resolveStageScaling(); // an override may give a stage scaling of its own
    buildQuantizers();
}

void RecipeCaster::setScaling(const CastingSettings& scaling) {
    m_config.setScalingFrom(scaling);
    applyScalingPolicy();
    buildQuantizers(); // scaled tensors saturate
}

const Quantizer& RecipeCaster::quantizer(int stage, TensorRole role) const {
    return *m_quantizers[static_cast<std::size_t>(stage)][0][static_cast<std::size_t>(role)];
}

const Quantizer* RecipeCaster::siteQuantizer(int stage, TensorRole role,
                                             std::string_view site) const {
    return m_quantizers[static_cast<std::size_t>(stage)][static_cast<std::size_t>(siteIndex(site))]
                       [static_cast<std::size_t>(role)]
                           .get();
}

QuantizeOptions RecipeCaster::options(int stage, TensorRole role, std::uint64_t call) const {
    QuantizeOptions o;
    o.seed = m_config.seed;
    // A distinct random stream per (step, stage, role): reproducible and uncorrelated.
    o.stream = (static_cast<std::uint64_t>(m_step) << 16) |
               (static_cast<std::uint64_t>(stage) << 4) | static_cast<std::uint64_t>(role) |
               (call << 56);
    o.pool = m_pool;
    return o;
}

bool RecipeCaster::isPlain(int stage, TensorRole role, std::string_view site) const {
    // A format with FP32's exponent range (BF16, FP32) needs no scale: a stage a recipe keeps
    // in BF16 under a block-scaled recipe is cast plainly.
    const Quantizer* q = siteQuantizer(stage, role, site);
    const TensorScalingKind kind = stageScaling(stage).kind;
    return q == nullptr || kind == TensorScalingKind::None || !isProductInput(role) ||
           (kind == TensorScalingKind::Blocks && !q->config().format.hasNarrowRange());
}

bool RecipeCaster::scalesByTensorAmax(int stage, TensorRole role, std::string_view site) const {
    const TensorScalingKind kind = stageScaling(stage).kind;
    return !isPlain(stage, role, site) &&
           (kind == TensorScalingKind::AmaxCurrent || kind == TensorScalingKind::AmaxDelayed);
}

double RecipeCaster::cast(int stage, TensorRole role, Tensor in, Tensor values,
                          const BlockLayout& layout, const CastCounters& counters, bool training,
                          std::uint64_t call, std::string_view site, double agreedAmax) {
    const Quantizer* found = siteQuantizer(stage, role, site);
    if (found == nullptr) { // a site the recipe leaves alone
        if (in.data != values.data)
            m_ops.copy(values, in);
        return kAmaxInCounts;
    }
    const Quantizer& q = *found;
    const StageScaling& scaled = stageScaling(stage);
    QuantizeOptions opts = options(stage, role, call);
    const bool collect = counters.stats != nullptr;
    const bool plain = isPlain(stage, role, site);
    if (counters.scaling != nullptr)
        *counters.scaling = toString(plain ? ScalingPolicy::None : scaled.settings.policy);
    // A plain cast measures its own error; the scaled ones are measured after, from a copy of
    // the input when they overwrite it.
    const Tensor kept = collect && !plain ? keepForError(in, values) : Tensor{};
    double tensorAmax = kAmaxInCounts;
    if (plain) {
        opts.measureError = collect;
        m_ops.quantize(q, in, values, counters.stats, opts);
    } else if (scaled.kind == TensorScalingKind::Blocks) {
        BlockLayout shape = layout;
        shape.tiles = layout.tiles && scaled.settings.weightTiles; // weights, where it tiles them
        const float amax = castBlocks(q, scaled.scheme, in, values, shape, counters, opts);
        // NVFP4's cast took the tensor amax; the other block casts a pass when it is wanted.
        if (collect) {
            tensorAmax = amax < 0.0f ? m_ops.amax(kept) : (std::isfinite(amax) ? amax : 0.0);
            // The row's amax is the tensor's, not its block-scaled elements' (about the element
            // format's max by construction): what a plain cast's row and the histogram say.
            counters.stats->amax = static_cast<float>(tensorAmax);
        }
    } else {
        AmaxHistory* history = nullptr;
        if (scaled.kind == TensorScalingKind::AmaxDelayed)
            history = &m_amaxHistory
                           .try_emplace({static_cast<std::uint64_t>(stage),
                                         static_cast<std::uint64_t>(role),
                                         static_cast<std::uint64_t>(siteIndex(site)), call},
                                        static_cast<std::size_t>(scaled.settings.amaxHistory))
                           .first->second;
        // Current scaling needs this tensor's amax before the pass; delayed scaling takes the
        // history's and records this tensor's amax during the pass (one read of the data). An
        // empty history starts from the tensor's own amax, or at scale 1 as TE does.
        const bool fromHistory = history != nullptr && !history->empty();
        const bool startsAtOne =
            history != nullptr && !fromHistory && scaled.settings.amaxFirstScaleOne;
        const bool agreed = agreedAmax >= 0.0;
        double amax = 0.0;
        if (fromHistory)
            amax = scaled.settings.amaxMostRecent ? history->mostRecent() : history->max();
        else if (agreed && !startsAtOne)
            amax = agreedAmax;
        else if (!startsAtOne)
            amax = m_ops.amax(in);
        const double scale =
            startsAtOne ? 1.0 : amaxScale(amax, q.config().format, scaled.settings.amaxMargin);
        if (counters.tensorScale != nullptr)
            *counters.tensorScale = scale;
        double current = amax;
        m_ops.quantizeScaled(q, in, values, scale, counters.stats, opts,
                             fromHistory || startsAtOne || agreed ? &current : nullptr);
        tensorAmax = current;               // its own (a delayed or the group's scale took others)
        if (history != nullptr && training) // evaluation must not change what training sees
            history->push(agreed ? agreedAmax : current); // serves the steps after it
    }
    if (collect && !plain)
        counters.stats->error.merge(m_ops.errorMoments(kept, values));
    return tensorAmax;
}

float RecipeCaster::castBlocks(const Quantizer& q, const BlockScheme& scheme, Tensor in,
                               Tensor values, const BlockLayout& layout,
                               const CastCounters& counters, const QuantizeOptions& options) {
    QuantizeOptions opts = options;
    const std::size_t body =
        layout.cols == 0 ? in.size : std::min(in.size, layout.rows * layout.cols);
    const BlockQuantizeResult result =
        m_ops.quantizeBlocks(q, scheme, in.slice(0, body), values.slice(0, body), layout,
                             counters.stats, counters.blocks, opts);
    if (counters.tensorScale != nullptr)
        *counters.tensorScale = result.tensorScale;
    if (body == in.size)
        return result.inputAmax;
    opts.firstIndex = body; // the rest (biases): one row of blocks, their own random words
    const BlockQuantizeResult rest = m_ops.quantizeBlocks(q, scheme, in.slice(body, in.size - body),
                                                          values.slice(body, in.size - body), {},
                                                          counters.stats, counters.blocks, opts);
    return std::max(result.inputAmax, rest.inputAmax); // one scheme: both -1, or both amaxes
}

std::vector<double> RecipeCaster::amaxHistories() const {
    // Keys and counts are small integers: exact as doubles.
    std::vector<double> out;
    for (const auto& [key, history] : m_amaxHistory) {
        for (std::uint64_t k : key)
            out.push_back(static_cast<double>(k));
        const std::vector<double> values = history.values();
        out.push_back(static_cast<double>(values.size()));
        out.insert(out.end(), values.begin(), values.end());
    }
    return out;
}

void RecipeCaster::restoreAmaxHistories(const std::vector<double>& saved) {
    m_amaxHistory.clear();
    for (std::size_t i = 0; i < saved.size();) {
        if (saved.size() - i < 5)
            throw std::invalid_argument("amax histories: cut short");
        const std::array<std::uint64_t, 4> key{
            static_cast<std::uint64_t>(saved[i]), static_cast<std::uint64_t>(saved[i + 1]),
            static_cast<std::uint64_t>(saved[i + 2]), static_cast<std::uint64_t>(saved[i + 3])};
        const auto count = static_cast<std::size_t>(saved[i + 4]);
        i += 5;
        if (saved.size() - i < count)
            throw std::invalid_argument("amax histories: cut short");
        const auto stage = static_cast<int>(key[0]);
        if (stage < 0 || stage >= m_stageCount)
            throw std::invalid_argument("amax histories: stage " + std::to_string(stage) +
                                        " is not a stage of this model");
        AmaxHistory history(static_cast<std::size_t>(scaling(stage).amaxHistory));
        history.assign({saved.begin() + static_cast<std::ptrdiff_t>(i),
                        saved.begin() + static_cast<std::ptrdiff_t>(i + count)});
        m_amaxHistory.insert_or_assign(key, std::move(history));
        i += count;
    }
}

Tensor RecipeCaster::keepForError(Tensor in, Tensor out) {
    if (in.data != out.data)
        return in;
    if (m_errorInput.size < in.size)
        m_errorInput = m_ops.allocate(in.size);
    const Tensor kept = m_errorInput.slice(0, in.size);
    m_ops.copy(kept, in);
    return kept;
}

bool RecipeCaster::hadamardFor(int stage) const {
    return m_hadamard && stageScaling(stage).kind == TensorScalingKind::Blocks &&
           quantizer(stage, TensorRole::ActivationGradients).config().format.hasNarrowRange();
}

Tensor RecipeCaster::castAlongBatch(int stage, TensorRole role, Tensor raw, std::size_t batch,
                                    std::size_t width, Tensor into, Tensor work,
                                    std::string_view site) {
    const Quantizer* found = siteQuantizer(stage, role, site);
    const Quantizer& q = found != nullptr ? *found : quantizer(stage, role);
    QuantizeOptions words = options(stage, role);
    words.stream ^= 8; // streams of their own (roles use 0..5)
    const Tensor transformed = work.slice(0, batch * width);
    m_ops.hadamard16(transformed, raw, batch, width, m_hadamardSigns);
    m_ops.transpose(into, transformed, batch, width); // (width, batch): blocks along the batch
    if (q.config().format.hasNarrowRange())
        m_ops.quantizeBlocks(q, stageScaling(stage).scheme, into, into, {width, batch, false},
                             nullptr, nullptr, words);
    else
        m_ops.quantize(q, into, into, nullptr, words);
    return into; // kept transposed: the weight-gradient product takes it so
}

} // namespace plab
