// Trainer: forward, loss, backward, update, with the format engine at every rounding point.
#include "train/trainer.h"

#include "nn/softmax_cross_entropy.h"
#include "train/per_layer_scaling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#if defined(PLAB_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace plab {
std::unique_ptr<LossScaler> makeLossScaler(const TrainConfig& config) {
    if (config.scalingPolicy == "dynamic" || config.scalingPolicy == "enhanced") {
        DynamicScalerSettings d = config.dynamic;
        d.initialScale = config.lossScale;
        d.enhanced = config.scalingPolicy == "enhanced";
        return std::make_unique<DynamicScaler>(d);
    }
    if (config.scalingPolicy != "static" && config.scalingPolicy != "none") // per-layer, amax, mx
        return std::make_unique<StaticScaler>(config.lossScale, config.scalingPolicy);
    return std::make_unique<StaticScaler>(config.scalingPolicy == "none" ? 1.0 : config.lossScale);
}

namespace {

bool allFinite(std::span<const float> v) {
    // Sum of x*0 is NaN iff some x is Inf or NaN; one branch-free pass.
    float probe = 0.0f;
    for (float x : v)
        probe += x * 0.0f;
    return probe == 0.0f;
}

} // namespace

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data)
    : m_config(config), m_data(std::move(data)),
      m_model(config.model, m_data->train.shape, m_data->train.classes), m_pool(config.threads),
      m_scaler(makeLossScaler(config)),
      m_optimizer({config.optimizer, config.momentum, config.weightDecay, config.beta1,
                   config.beta2, config.epsilon},
                  m_model.parameterCount()),
      m_shuffle(config.seed ^ 0xD1B54A32D192ED03ull) {
    if (m_data->train.count() < static_cast<std::size_t>(config.batchSize))
        throw ConfigError("config.train.batch_size: " + std::to_string(config.batchSize) +
                          " is larger than the training set (" +
                          std::to_string(m_data->train.count()) + " samples)");
#if defined(PLAB_HAVE_OPENBLAS)
    openblas_set_num_threads(static_cast<int>(m_pool.threadCount()));
#endif
    const std::size_t params = m_model.parameterCount();
    m_master.resize(params);
    m_model.initParameters(m_master.data(), config.seed, config.model.init, config.model.initScale);
    m_weights.resize(params);
    m_grads.resize(params);
    m_update.resize(params);
    const auto batch = static_cast<std::size_t>(config.batchSize);
    m_input.resize(batch * static_cast<std::size_t>(m_model.inputShape().size()));
    m_labels.resize(batch);
    for (const auto& layer : m_model.layers()) {
        const std::size_t size = batch * static_cast<std::size_t>(layer->outputShape().size());
        m_out.emplace_back(size);
        m_dout.emplace_back(size);
    }
    m_stats.resize(static_cast<std::size_t>(m_model.stageCount()));
    m_stageScale.assign(static_cast<std::size_t>(m_model.stageCount()), config.lossScale);
    applyScalingPolicy();
    m_order.resize(m_data->train.count());
    std::iota(m_order.begin(), m_order.end(), 0u);
    std::shuffle(m_order.begin(), m_order.end(), m_shuffle);
    buildQuantizers();
    // The master copy starts out in its own format.
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const std::size_t layer = m_model.stageWeightLayer(s);
        std::span<float> w(m_master.data() + m_model.parameterOffset(layer),
                           m_model.layers()[layer]->parameterCount());
        quantizer(s, TensorRole::MasterWeights)
            .quantize(w, w, nullptr, options(s, TensorRole::MasterWeights));
    }
}

void Trainer::buildQuantizers() {
    m_quantizers.clear();
    for (int s = 0; s < m_model.stageCount(); ++s) {
        StageQuantizers q;
        for (TensorRole r : kAllRoles) {
            QuantConfig c = m_config.recipe.config(s, m_model.stageCount(), r);
            // Scaled tensors saturate, as the MX spec and Transformer Engine's casts do: a
            // block or tensor scale is chosen to fill the range, and a stale (delayed) amax or
            // a block's largest element past the element max must clip, not become Inf.
            const bool scaledRole = r == TensorRole::Weights || r == TensorRole::Activations ||
                                    r == TensorRole::ActivationGradients;
            if (scaledRole && m_tensorScaling != TensorScalingKind::None)
                c.overflow = Overflow::Saturate;
            q.roles.emplace_back(c);
        }
        m_quantizers.push_back(std::move(q));
    }
    m_accumulationQuantizer.reset();
    m_accumulation = {};
    if (m_config.recipe.accumulation) {
        m_accumulationQuantizer = std::make_unique<Quantizer>(*m_config.recipe.accumulation);
        m_accumulation = {m_accumulationQuantizer.get(), m_config.recipe.accumulateEvery};
    }
}

void Trainer::applyScalingPolicy() {
    const std::string& policy = m_config.scalingPolicy;
    m_perLayer = policy == "per-layer";
    m_tensorScaling = policy == "amax-current"   ? TensorScalingKind::AmaxCurrent
                      : policy == "amax-delayed" ? TensorScalingKind::AmaxDelayed
                      : policy == "mx"           ? TensorScalingKind::Mx
                                                 : TensorScalingKind::None;
    const AmaxHistory emptyHistory(static_cast<std::size_t>(m_config.amaxHistory));
    m_amaxHistory.assign(static_cast<std::size_t>(m_model.stageCount()),
                         {emptyHistory, emptyHistory, emptyHistory});
    std::fill(m_stageScale.begin(), m_stageScale.end(), m_config.lossScale);
}

void Trainer::setScaling(const TrainConfig& scaling) {
    m_config.setScalingFrom(scaling);
    m_scaler = makeLossScaler(m_config);
    applyScalingPolicy();
    buildQuantizers(); // scaled tensors saturate
}

void Trainer::setRecipe(const PrecisionRecipe& recipe) {
    m_config.recipe = recipe;
    buildQuantizers();
}

const Quantizer& Trainer::quantizer(int stage, TensorRole role) const {
    return m_quantizers[static_cast<std::size_t>(stage)].roles[static_cast<std::size_t>(role)];
}

QuantizeOptions Trainer::options(int stage, TensorRole role) const {
    QuantizeOptions o;
    o.seed = m_config.seed;
    // A distinct random stream per (step, stage, role): reproducible and uncorrelated.
    o.stream = (static_cast<std::uint64_t>(m_step) << 16) |
               (static_cast<std::uint64_t>(stage) << 4) | static_cast<std::uint64_t>(role);
    o.pool = const_cast<ThreadPool*>(&m_pool);
    return o;
}

std::vector<std::string> Trainer::stageNames() const {
    std::vector<std::string> names;
    for (int s = 0; s < m_model.stageCount(); ++s)
        names.push_back(m_model.stageName(s));
    return names;
}

std::int64_t Trainer::stepsPerEpoch() const {
    return static_cast<std::int64_t>(m_data->train.count() /
                                     static_cast<std::size_t>(m_config.batchSize));
}

std::int64_t Trainer::plannedSteps() const {
    return m_config.steps > 0 ? m_config.steps : m_config.epochs * stepsPerEpoch();
}

void Trainer::nextBatch() {
    const auto batch = static_cast<std::size_t>(m_config.batchSize);
    if (m_cursor + batch > m_order.size()) { // drop the ragged end: every step sees a full batch
        std::shuffle(m_order.begin(), m_order.end(), m_shuffle);
        m_cursor = 0;
        ++m_epoch;
    }
    const Dataset& train = m_data->train;
    const auto size = static_cast<std::size_t>(train.shape.size());
    for (std::size_t b = 0; b < batch; ++b) {
        const std::uint32_t idx = m_order[m_cursor + b];
        std::copy_n(train.sample(idx), size, m_input.data() + b * size);
        m_labels[b] = train.labels[idx];
    }
    m_cursor += batch;
}

void Trainer::forward(int batch, bool collect, bool withStats) {
    std::span<float> input(m_input.data(),
                           static_cast<std::size_t>(batch) * m_model.inputShape().size());
    // The data enters in stage 0's activation format (not counted: it is the dataset's property).
    quantizer(0, TensorRole::Activations)
        .quantize(input, input, nullptr, options(0, TensorRole::Activations));
    const auto& layers = m_model.layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const float* in = i == 0 ? m_input.data() : m_out[i - 1].data();
        layers[i]->forward(m_out[i].data(), in, m_forwardWeights + m_model.parameterOffset(i),
                           batch, m_accumulation);
        if (m_model.endsStage(i)) {
            const int s = m_model.stageOf(i);
            std::span<float> out(m_out[i].data(),
                                 static_cast<std::size_t>(batch) * layers[i]->outputShape().size());
            quantizeRole(s, TensorRole::Activations, out, out, collect && withStats, withStats);
        }
    }
}

void Trainer::backward(int batch, bool collect) {
    std::fill(m_grads.begin(), m_grads.end(), 0.0f);
    const auto& layers = m_model.layers();
    const std::size_t firstWeight = m_model.stageWeightLayer(0);
    for (std::size_t i = layers.size(); i-- > 0;) {
        if (m_model.endsStage(i)) {
            const int s = m_model.stageOf(i);
            std::span<float> g(m_dout[i].data(),
                               static_cast<std::size_t>(batch) * layers[i]->outputShape().size());
            quantizeRole(s, TensorRole::ActivationGradients, g, g, collect, true);
        }
        // Nothing below the first weight layer needs a gradient.
        float* din = i > firstWeight ? m_dout[i - 1].data() : nullptr;
        const float* in = i == 0 ? m_input.data() : m_out[i - 1].data();
        const std::size_t offset = m_model.parameterOffset(i);
        layers[i]->backward(din, m_grads.data() + offset, m_dout[i].data(), in, m_out[i].data(),
                            m_forwardWeights + offset, batch, m_accumulation);
        if (m_perLayer && din != nullptr && layers[i]->hasWeights()) {
            // Zhao et al.: this layer picks the scale of the gradient it passes down.
            const int s = m_model.stageOf(i);
            const auto outSize = static_cast<std::size_t>(layers[i]->outputShape().size());
            const TensorMoments g =
                moments({m_dout[i].data(), static_cast<std::size_t>(batch) * outSize});
            const TensorMoments w = moments({m_forwardWeights + offset, layers[i]->weightCount()});
            const FormatSpec& below =
                quantizer(s - 1, TensorRole::ActivationGradients).config().format;
            const double k = perLayerScale(g, w, layers[i]->backwardFanIn(), below,
                                           m_stageScale[static_cast<std::size_t>(s)] / m_lossScale,
                                           {m_config.perLayerCap, m_config.cumulativeCap});
            const std::size_t n = static_cast<std::size_t>(batch) *
                                  static_cast<std::size_t>(layers[i - 1]->outputShape().size());
            const auto kf = static_cast<float>(k);
            for (std::size_t j = 0; j < n; ++j)
                din[j] *= kf;
            m_stageScale[static_cast<std::size_t>(s - 1)] =
                m_stageScale[static_cast<std::size_t>(s)] * k;
        }
    }
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const std::size_t layer = m_model.stageWeightLayer(s);
        std::span<float> g(m_grads.data() + m_model.parameterOffset(layer),
                           layers[layer]->parameterCount());
        QuantStats* stats =
            collect ? &m_stats[static_cast<std::size_t>(s)].role(TensorRole::WeightGradients)
                    : nullptr;
        quantizer(s, TensorRole::WeightGradients)
            .quantize(g, g, stats, options(s, TensorRole::WeightGradients));
    }
}

void Trainer::applyUpdate(bool collect) {
    // Unscale first: clipping, weight decay and the optimiser all see true gradients.
    for (int s = 0; s < m_model.stageCount(); ++s) { // each stage carries its own scale
        const double scale = m_stageScale[static_cast<std::size_t>(s)];
        if (scale == 1.0)
            continue;
        const std::size_t layer = m_model.stageWeightLayer(s);
        const auto inverse = static_cast<float>(1.0 / scale);
        float* g = m_grads.data() + m_model.parameterOffset(layer);
        const std::size_t n = m_model.layers()[layer]->parameterCount(); // hoisted: a virtual call
        for (std::size_t i = 0; i < n; ++i)
            g[i] *= inverse;
    }
    if (m_config.clipNorm > 0.0) {
        double sq = 0.0;
        for (float g : m_grads)
            sq += static_cast<double>(g) * g;
        const double norm = std::sqrt(sq);
        if (norm > m_config.clipNorm) {
            const auto factor = static_cast<float>(m_config.clipNorm / norm);
            for (float& g : m_grads)
                g *= factor;
        }
    }
    const auto& layers = m_model.layers();
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const std::size_t layer = m_model.stageWeightLayer(s);
        const std::size_t offset = m_model.parameterOffset(layer);
        const std::size_t n = layers[layer]->parameterCount();
        StageStats& st = m_stats[static_cast<std::size_t>(s)];
        std::span<float> master(m_master.data() + offset, n);
        std::span<float> update(m_update.data() + offset, n);
        m_optimizer.computeUpdate(m_step + 1, offset, {m_grads.data() + offset, n}, master, update,
                                  m_config.learningRate, quantizer(s, TensorRole::OptimizerState),
                                  collect ? &st.role(TensorRole::OptimizerState) : nullptr,
                                  options(s, TensorRole::OptimizerState));
        // New master = Q(master - update); an update that leaves it unchanged was lost.
        std::span<float> next(m_grads.data() + offset, n); // the gradient is spent: reuse it
        for (std::size_t i = 0; i < n; ++i)
            next[i] = master[i] - update[i];
        quantizer(s, TensorRole::MasterWeights)
            .quantize(next, next, collect ? &st.role(TensorRole::MasterWeights) : nullptr,
                      options(s, TensorRole::MasterWeights));
        if (collect) {
            // Branch-free counts: updates are nonzero almost everywhere, lost ones are random.
            std::uint64_t updates = 0, lost = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint64_t moved = update[i] != 0.0f ? 1u : 0u;
                updates += moved;
                lost += moved & (next[i] == master[i] ? 1u : 0u);
            }
            st.updates += updates;
            st.lostUpdates += lost;
        }
        std::copy(next.begin(), next.end(), master.begin());
    }
}

StepResult Trainer::step() {
    const auto start = std::chrono::steady_clock::now();
    const bool collect = (m_step + 1) % m_config.statsEvery == 0;
    if (collect)
        for (StageStats& s : m_stats)
            s = StageStats{};
    nextBatch();
    const int batch = m_config.batchSize;
    refreshWeights(collect, true);
    forward(batch, collect, true);

    const double scale = m_scaler->scale();
    m_lossScale = scale;
    std::fill(m_stageScale.begin(), m_stageScale.end(), scale);
    const float* logits = m_out.back().data();
    const LossResult loss = softmaxCrossEntropy(logits, m_labels.data(), batch, m_model.classes(),
                                                m_dout.back().data(), static_cast<float>(scale));
    if (m_perLayer) {
        // The loss layer picks the logits gradient's scale by the same rule, its "weights" the
        // identity (sigma^2 + mu^2 = 1, max 1, one product per element).
        const int last = m_model.stageCount() - 1;
        std::span<float> g(m_dout.back().data(), static_cast<std::size_t>(batch) *
                                                     static_cast<std::size_t>(m_model.classes()));
        const double k =
            perLayerScale(moments(g), {0.0, 1.0, 1.0}, 1,
                          quantizer(last, TensorRole::ActivationGradients).config().format, 1.0,
                          {m_config.perLayerCap, m_config.cumulativeCap});
        const auto kf = static_cast<float>(k);
        for (float& v : g)
            v *= kf;
        m_stageScale.back() = scale * k;
    }
    backward(batch, collect);
    if (collect)
        for (std::size_t s = 0; s < m_stats.size(); ++s)
            m_stats[s].gradientScale = m_stageScale[s];

    const bool overflow = !std::isfinite(loss.loss) || !allFinite(m_grads);
    const ScaleDecision decision = m_scaler->update(overflow);
    StepResult result;
    result.statsCollected = collect;
    if (!decision.skipStep)
        applyUpdate(collect);
    ++m_step;

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = batch / std::max(seconds, 1e-9);
    m_samplesPerSecond = m_samplesPerSecond == 0.0 ? rate : 0.9 * m_samplesPerSecond + 0.1 * rate;

    StepScalars& sc = result.scalars;
    sc.step = m_step;
    sc.epoch = m_epoch;
    sc.loss = loss.loss;
    sc.accuracy = static_cast<double>(loss.correct) / batch;
    sc.scale = scale;
    sc.skipped = decision.skipStep;
    sc.samplesPerSecond = m_samplesPerSecond;
    sc.learningRate = m_config.learningRate;
    if (!decision.reason.empty())
        result.event = decision.reason;
    if (overflow)
        result.event += "; first Inf/NaN: " + locateOverflow(loss.loss);
    // A static scale cannot react, so Inf/NaN means the run has diverged.
    result.diverged = overflow && m_scaler->name() == "static";
    return result;
}

void Trainer::quantizeRole(int stage, TensorRole role, std::span<const float> in,
                           std::span<float> values, bool collect, bool training) {
    StageStats& st = m_stats[static_cast<std::size_t>(stage)];
    const auto r = static_cast<std::size_t>(role);
    QuantStats* stats = collect ? &st.roles[r] : nullptr;
    const Quantizer& q = quantizer(stage, role);
    const QuantizeOptions opts = options(stage, role);
    const bool scaledRole = role == TensorRole::Weights || role == TensorRole::Activations ||
                            role == TensorRole::ActivationGradients;
    if (m_tensorScaling == TensorScalingKind::None || !scaledRole) {
        q.quantize(in, values, stats, opts);
        return;
    }
    if (m_tensorScaling == TensorScalingKind::Mx) {
        if (in.data() != values.data()) // MX scales in place, block by block
            std::copy(in.begin(), in.end(), values.begin());
        const MxResult mx = quantizeMx(q, values, stats, opts, m_mxScratch);
        if (collect) {
            st.mxBlocks[r] += mx.blocks;
            st.mxSaturatedBlocks[r] += mx.saturatedBlocks;
        }
        return;
    }
    AmaxHistory* history = m_tensorScaling == TensorScalingKind::AmaxDelayed
                               ? &m_amaxHistory[static_cast<std::size_t>(stage)][r == 0   ? 0
                                                                                 : r == 1 ? 1
                                                                                          : 2]
                               : nullptr;
    // Current scaling needs this tensor's amax before the pass; delayed scaling takes the
    // history's and records this tensor's amax during the pass (one read of the data).
    const bool fromHistory = history != nullptr && !history->empty();
    double amax = 0.0;
    if (fromHistory)
        amax = m_config.amaxMostRecent ? history->mostRecent() : history->max();
    else
        amax = amaxOf(in);
    const double scale = amaxScale(amax, q.config().format, m_config.amaxMargin);
    if (collect)
        st.tensorScale[r] = scale;
    double current = amax;
    quantizeScaled(q, in, values, scale, stats, opts, fromHistory ? &current : nullptr);
    if (history != nullptr && training) // evaluation must not change what training sees
        history->push(current);         // this tensor's amax serves the steps after it
}

std::string Trainer::locateOverflow(double loss) const {
    if (!std::isfinite(loss))
        return "the loss (forward pass)";
    for (int s = m_model.stageCount() - 1; s >= 0; --s) { // backward order: where it started
        const std::size_t layer = m_model.stageWeightLayer(s);
        if (!allFinite({m_grads.data() + m_model.parameterOffset(layer),
                        m_model.layers()[layer]->parameterCount()}))
            return "weight_gradients of " + m_model.stageName(s);
    }
    return "unknown";
}

void Trainer::refreshWeights(bool collect, bool training) {
    // FP32 weights without statistics: forward reads the master copy itself, no copy needed.
    bool identity = !collect;
    for (int s = 0; s < m_model.stageCount() && identity; ++s)
        identity = quantizer(s, TensorRole::Weights).isIdentity();
    m_forwardWeights = identity ? m_master.data() : m_weights.data();
    if (identity)
        return;
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const std::size_t layer = m_model.stageWeightLayer(s);
        const std::size_t offset = m_model.parameterOffset(layer);
        const std::size_t n = m_model.layers()[layer]->parameterCount();
        quantizeRole(s, TensorRole::Weights, {m_master.data() + offset, n},
                     {m_weights.data() + offset, n}, collect, training);
    }
}

Evaluation Trainer::evaluate() {
    refreshWeights(false, false); // the weights as the next step would use them
    const Dataset& test = m_data->test;
    const auto size = static_cast<std::size_t>(test.shape.size());
    const auto maxBatch = static_cast<std::size_t>(m_config.batchSize);
    double lossSum = 0.0;
    std::size_t correct = 0;
    for (std::size_t start = 0; start < test.count(); start += maxBatch) {
        const std::size_t n = std::min(maxBatch, test.count() - start);
        std::copy_n(test.sample(start), n * size, m_input.data());
        forward(static_cast<int>(n), false, false);
        const LossResult r =
            softmaxCrossEntropy(m_out.back().data(), test.labels.data() + start,
                                static_cast<int>(n), m_model.classes(), nullptr, 1.0f);
        lossSum += r.loss * static_cast<double>(n);
        correct += static_cast<std::size_t>(r.correct);
    }
    return {lossSum / static_cast<double>(test.count()),
            static_cast<double>(correct) / static_cast<double>(test.count())};
}

} // namespace plab
