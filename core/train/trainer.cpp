// Trainer: forward, loss, backward, update, with the format engine at every rounding point.
#include "train/trainer.h"

#include "util/system_memory.h"

#include "record/record_error.h"

#include "device/compute_backend.h"
#include "engine/cpu_ops.h"
#include "nn/linear.h"
#include "nn/softmax_cross_entropy.h"
#include "recipe/make_loss_scaler.h"
#include "recipe/per_layer_scaling.h"
#include "recipe/recipe_caster.h"
#include "stats/tensor_sample.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#if defined(PLAB_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace plab {
namespace {

// A run whose parameters, optimiser state and activations the machine cannot hold is refused
// before anything is allocated, naming the keys that set the size: on Linux the allocation
// itself succeeds and the OOM killer ends the process later (exit 137 at 22.5 GB for
// model.hidden [65536, 65536]). As the GPT's (gpt_run.cpp).
void refuseWhatMemoryCannotHold(const TrainConfig& config, const Model& model) {
    const double params = static_cast<double>(model.parameterCount());
    // The initial values, master, weights, gradients, update, the optimiser's moment(s).
    const double copies = config.optimizer == OptimizerKind::Sgd ? 6.0 : 7.0;
    double activations = static_cast<double>(model.inputShape().size());
    for (const auto& layer : model.layers())
        activations += 2.0 * static_cast<double>(layer->outputShape().size()); // out, gradient
    const std::optional<MemoryShortfall> lacking = memoryShortfall(
        sizeof(float) * (copies * params + static_cast<double>(config.batchSize) * activations));
    if (!lacking)
        return;
    std::string sizes;
    if (config.model.type == "cnn") {
        sizes = "config.model.conv_channels1 " + std::to_string(config.model.convChannels1) +
                ", conv_channels2 " + std::to_string(config.model.convChannels2);
    } else {
        sizes = "config.model.hidden [";
        for (std::size_t i = 0; i < config.model.hidden.size(); ++i)
            sizes += (i ? ", " : "") + std::to_string(config.model.hidden[i]);
        sizes += "]";
    }
    throw ConfigError(sizes + ": " + std::to_string(model.parameterCount()) +
                      " parameters need about " + lacking->needed +
                      " with the optimiser's state and the activations of train.batch_size " +
                      std::to_string(config.batchSize) + "; " + lacking->available +
                      " of memory is available: a smaller model (or batch)");
}
} // namespace

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data)
    : Trainer(config, data, nullptr) {}

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
                 std::unique_ptr<TensorOps> ops, std::string deviceNotice)
    : m_config(config), m_data(std::move(data)),
      m_model(config.model, m_data->train.shape, m_data->train.classes), m_pool(config.threads),
      m_scaler(makeLossScaler(config)),
      m_optimizerSettings({config.optimizer, config.momentum, config.weightDecay, config.beta1,
                           config.beta2, config.epsilon}),
      m_ops(std::move(ops)), m_deviceNotice(std::move(deviceNotice)),
      m_shuffle(config.seed ^ 0xD1B54A32D192ED03ull) {
    checkRecipeStages(config.recipe, m_model.stageCount());
    if (m_data->train.count() < static_cast<std::size_t>(config.batchSize))
        throw ConfigError("config.train.batch_size: " + std::to_string(config.batchSize) +
                          " is larger than the training set (" +
                          std::to_string(m_data->train.count()) + " samples)");
    const bool engineChosenHere = !m_ops;
    if (engineChosenHere)
        std::tie(m_ops, m_deviceNotice) = tensorOpsFor(config.device);
    if (m_ops->name() == "cpu") // a GPU's engine says when it is out of memory
        refuseWhatMemoryCannotHold(config, m_model);
#if defined(PLAB_HAVE_OPENBLAS)
    openblas_set_num_threads(static_cast<int>(m_pool.threadCount()));
#endif
    try {
        allocateEngineState();
    } catch (const std::exception& e) {
        // Out of device memory (the resident data sets are the largest part) or any other
        // failure of a GPU engine's set-up: a run the config let us place ourselves falls back
        // to the CPU as a missing GPU does, with the reason in the notice. The failed engine
        // and everything it allocated go first.
        if (!engineChosenHere || m_ops->name() == "cpu")
            throw;
        m_deviceNotice = std::string(e.what()) + "; training on the CPU";
        m_out.clear();
        m_dout.clear();
        m_ops = std::make_unique<CpuOps>();
        allocateEngineState();
    }
    for (auto& bank : m_statsBank)
        bank.resize(static_cast<std::size_t>(m_model.stageCount()));
    m_stageScale.assign(static_cast<std::size_t>(m_model.stageCount()), config.lossScale);
    m_caster = std::make_unique<RecipeCaster>(m_config, m_model.stageCount(), *m_ops, &m_pool);
    applyScalingPolicy();
    m_order.resize(m_data->train.count());
    std::iota(m_order.begin(), m_order.end(), 0u);
    std::shuffle(m_order.begin(), m_order.end(), m_shuffle);
    // The master copy starts out in its own format.
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const Tensor w = stageParameters(m_master, s);
        m_ops->quantize(quantizer(s, TensorRole::MasterWeights), w, w, nullptr,
                        options(s, TensorRole::MasterWeights));
    }
}

// Everything the run keeps in the engine's memory: parameters, optimiser state, the resident
// data sets, the batch and each layer's activations and gradients.
void Trainer::allocateEngineState() {
    const TrainConfig& config = m_config;
    const std::size_t params = m_model.parameterCount();
    {
        std::vector<float> initial(params);
        m_model.initParameters(initial.data(), config.seed, config.model.init,
                               config.model.initScale);
        m_master = m_ops->allocate(params);
        m_ops->upload(m_master, initial.data());
    }
    m_weights = m_ops->allocate(params);
    m_grads = m_ops->allocate(params);
    m_update = m_ops->allocate(params);
    m_optimizerState = {};
    m_optimizerState.first = m_ops->allocate(params);
    if (config.optimizer != OptimizerKind::Sgd)
        m_optimizerState.second = m_ops->allocate(params);
    const auto batch = static_cast<std::size_t>(config.batchSize);
    const auto sampleSize = static_cast<std::size_t>(m_model.inputShape().size());
    m_input = m_ops->allocate(batch * sampleSize);
    m_trainRows =
        m_ops->residentRows(m_data->train.features.data(), m_data->train.count(), sampleSize);
    m_testRows =
        m_ops->residentRows(m_data->test.features.data(), m_data->test.count(), sampleSize);
    m_labelsHost.resize(batch);
    m_labels = m_ops->allocateLabels(batch);
    for (const auto& layer : m_model.layers()) {
        const std::size_t size = batch * static_cast<std::size_t>(layer->outputShape().size());
        m_out.push_back(m_ops->allocate(size));
        m_dout.push_back(m_ops->allocate(size));
    }
    // Nothing is known to have failed until the device has run what was queued.
    (void)m_ops->allFinite(m_master);
}

void checkRecipeStages(const PrecisionRecipe& recipe, int stages, bool kindsApply) {
    if (!kindsApply && !recipe.kindScaling.empty())
        throw ConfigError("config.recipe.overrides: kind \"" + recipe.kindScaling.begin()->first +
                          "\" names a transformer's stages; this model has none (give a stage "
                          "index)");
    if (!kindsApply && !recipe.kindOverrides.empty())
        throw ConfigError("config.recipe.overrides: kind \"" + recipe.kindOverrides.begin()->first +
                          "\" names a transformer's stages or sites; this model has none (give "
                          "a stage index)");
    std::vector<int> named;
    for (const auto& entry : recipe.stageOverrides)
        named.push_back(entry.first);
    for (const auto& entry : recipe.stageScaling)
        named.push_back(entry.first);
    for (int stage : named)
        if (stage < -1 || stage >= stages)
            throw ConfigError("config.recipe.overrides: stage " + std::to_string(stage) +
                              " is not a stage of this model (" + std::to_string(stages) +
                              " stages: 0.." + std::to_string(stages - 1) +
                              ", or -1 for the last)");
}

Tensor Trainer::stageParameters(const Tensor& all, int stage) const {
    const std::size_t layer = m_model.stageWeightLayer(stage);
    return all.slice(m_model.parameterOffset(layer), m_model.layers()[layer]->parameterCount());
}

Tensor Trainer::activation(const std::vector<Tensor>& perLayer, std::size_t layer,
                           int batch) const {
    return perLayer[layer].slice(0, static_cast<std::size_t>(batch) *
                                        m_model.layers()[layer]->outputShape().size());
}

void Trainer::startCollecting() {
    // A bank neither on its way nor holding the latest complete statistics, else (one on its
    // way, the other complete) the complete one: its contents were reported already.
    int bank = m_inFlightStep != 0 ? 1 - m_inFlightBank : 1 - m_completeBank;
    if (bank < 0 || bank > 1)
        bank = 0;
    if (bank == m_completeBank) {
        m_completeBank = -1;
        m_completeStep = 0;
    }
    m_collecting = bank;
    for (StageStats& s : stats())
        s = StageStats{};
}

bool Trainer::flushStatistics() const {
    if (m_inFlightStep == 0)
        return false;
    m_ops->receiveStatistics(true);
    statisticsArrived();
    return true;
}

void Trainer::statisticsArrived() const {
    m_completeBank = m_inFlightBank;
    m_completeStep = m_inFlightStep;
    m_inFlightStep = 0;
    // A plain cast's amax is one of its counters: on a GPU it lands only now, with the counts.
    for (StageStats& st : m_statsBank[static_cast<std::size_t>(m_completeBank)])
        for (std::size_t r = 0; r < st.samples.size(); ++r)
            if (st.samples[r].tensorAmax == kAmaxFromCounts)
                st.samples[r].tensorAmax = finiteAmax(st.roles[r].amax);
}

const std::vector<StageStats>& Trainer::stageStats() const {
    flushStatistics();
    return completedStats();
}

const std::vector<StageStats>& Trainer::completedStats() const {
    return m_statsBank[static_cast<std::size_t>(m_completeBank >= 0 ? m_completeBank
                                                                    : m_collecting)];
}

std::vector<float> Trainer::masterWeights() const {
    std::vector<float> host(m_master.size);
    m_ops->download(host.data(), m_master);
    return host;
}

void Trainer::applyScalingPolicy() {
    m_perLayer = m_config.scalingPolicy == ScalingPolicy::PerLayer;
    m_rawOut.assign(m_model.layers().size(), Tensor{});
    m_rawGrad.assign(m_model.layers().size(), Tensor{});
    std::fill(m_stageScale.begin(), m_stageScale.end(), m_config.lossScale);
}

void Trainer::setScaling(const TrainConfig& scaling) {
    m_config.setScalingFrom(scaling);
    m_scaler = makeLossScaler(m_config);
    m_caster->setScaling(scaling);
    applyScalingPolicy();
}

void Trainer::setRecipe(const PrecisionRecipe& recipe) {
    checkRecipeStages(recipe, m_model.stageCount());
    m_config.recipe = recipe;
    m_caster->setRecipe(recipe);
}

const Quantizer& Trainer::quantizer(int stage, TensorRole role) const {
    return m_caster->quantizer(stage, role);
}

QuantizeOptions Trainer::options(int stage, TensorRole role) const {
    return m_caster->options(stage, role);
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
    const std::span<const std::uint32_t> rows(m_order.data() + m_cursor, batch);
    for (std::size_t b = 0; b < batch; ++b)
        m_labelsHost[b] = train.labels[rows[b]];
    m_cursor += batch;
    m_ops->gatherRows(m_input, m_trainRows, static_cast<std::size_t>(train.shape.size()), rows);
    m_ops->uploadLabels(m_labels, m_labelsHost.data(), batch);
}

void Trainer::forward(int batch, bool collect, bool withStats) {
    const Tensor input =
        m_input.slice(0, static_cast<std::size_t>(batch) * m_model.inputShape().size());
    const bool keepRaw = m_caster->hadamard() && withStats; // training, not evaluation
    if (keepRaw)
        m_ops->copy(ensure(m_rawInput, input.size, *m_ops), input);
    // The data enters in stage 0's activation format (not counted: it is the dataset's property).
    m_ops->quantize(quantizer(0, TensorRole::Activations), input, input, nullptr,
                    options(0, TensorRole::Activations));
    const auto& layers = m_model.layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const float* in = i == 0 ? m_input.data : m_out[i - 1].data;
        m_ops->forward(*layers[i], m_out[i].data, in, m_forwardWeights + m_model.parameterOffset(i),
                       batch, m_caster->accumulation());
        if (m_model.endsStage(i)) {
            const Tensor out = activation(m_out, i, batch);
            // Kept for the transform, the copy is the cast's input too: a cast out of place
            // needs no second copy for its error metrics.
            const Tensor raw = keepRaw ? ensure(m_rawOut[i], out.size, *m_ops) : out;
            if (keepRaw)
                m_ops->copy(raw, out);
            quantizeRole(m_model.stageOf(i), TensorRole::Activations, raw, out,
                         activationLayout(i, batch), collect && withStats, withStats);
        }
    }
}

void Trainer::backward(int batch, bool collect) {
    m_ops->fill(m_grads, 0.0f);
    const auto& layers = m_model.layers();
    const std::size_t firstWeight = m_model.stageWeightLayer(0);
    for (std::size_t i = layers.size(); i-- > 0;) {
        if (m_model.endsStage(i)) {
            const Tensor g = activation(m_dout, i, batch);
            const Tensor raw = m_caster->hadamard() ? ensure(m_rawGrad[i], g.size, *m_ops) : g;
            if (m_caster->hadamard())
                m_ops->copy(raw, g);
            quantizeRole(m_model.stageOf(i), TensorRole::ActivationGradients, raw, g,
                         activationLayout(i, batch), collect, true);
        }
        // Nothing below the first weight layer needs a gradient.
        float* din = i > firstWeight ? m_dout[i - 1].data : nullptr;
        const float* in = i == 0 ? m_input.data : m_out[i - 1].data;
        const std::size_t offset = m_model.parameterOffset(i);
        // A layer under the transform takes its parameter gradients from hadamardWeightGradient
        // (the weights' from the transformed operands): its backward here gives the input
        // gradient alone, without the weight product that would be thrown away (a third of an
        // NVFP4 step's matrix products).
        const bool transformed = m_caster->hadamard() && layers[i]->hasWeights() && hadamardFor(i);
        m_ops->backward(*layers[i], din, transformed ? nullptr : m_grads.data + offset,
                        m_dout[i].data, in, m_out[i].data, m_forwardWeights + offset, batch,
                        m_caster->accumulation());
        if (m_caster->hadamard() && layers[i]->hasWeights()) {
            if (transformed)
                hadamardWeightGradient(i, batch);
        } else if (m_caster->hadamard() && m_rawGrad[i].data != nullptr && i > 0 &&
                   m_model.stageOf(i - 1) == m_model.stageOf(i)) {
            // Down to the stage's weight layer, the gradient before the cast follows the same
            // backward (an activation's or a pooling's).
            const Tensor rawBelow =
                ensure(m_rawGrad[i - 1], activation(m_dout, i - 1, batch).size, *m_ops);
            m_ops->backward(*layers[i], rawBelow.data, nullptr, m_rawGrad[i].data, in,
                            m_out[i].data, m_forwardWeights + offset, batch,
                            m_caster->accumulation());
        }
        if (m_perLayer && din != nullptr && layers[i]->hasWeights()) {
            // Zhao et al.: this layer picks the scale of the gradient it passes down.
            const int s = m_model.stageOf(i);
            const TensorMoments g = m_ops->moments(activation(m_dout, i, batch));
            const TensorMoments w = m_ops->moments(
                {const_cast<float*>(m_forwardWeights) + offset, layers[i]->weightCount()});
            const FormatSpec& below =
                quantizer(s - 1, TensorRole::ActivationGradients).config().format;
            const double k = perLayerScale(g, w, layers[i]->backwardFanIn(), below,
                                           m_stageScale[static_cast<std::size_t>(s)] / m_lossScale,
                                           {m_config.perLayerCap, m_config.cumulativeCap});
            m_ops->scale(activation(m_dout, i - 1, batch), static_cast<float>(k));
            m_stageScale[static_cast<std::size_t>(s - 1)] =
                m_stageScale[static_cast<std::size_t>(s)] * k;
        }
    }
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const Tensor g = stageParameters(m_grads, s);
        QuantStats* counted =
            collect ? &stats()[static_cast<std::size_t>(s)].role(TensorRole::WeightGradients)
                    : nullptr;
        if (collect) // before the cast overwrites it
            keepSample(stats()[static_cast<std::size_t>(s)]
                           .samples[static_cast<std::size_t>(TensorRole::WeightGradients)],
                       g, weightLayout(s));
        QuantizeOptions opts = options(s, TensorRole::WeightGradients);
        opts.measureError = collect;
        m_ops->quantize(quantizer(s, TensorRole::WeightGradients), g, g, counted, opts);
        if (collect)
            stats()[static_cast<std::size_t>(s)]
                .samples[static_cast<std::size_t>(TensorRole::WeightGradients)]
                .tensorAmax = kAmaxFromCounts;
    }
}

void Trainer::applyUpdate(bool collect) {
    // Unscale first: clipping, weight decay and the optimiser all see true gradients.
    for (int s = 0; s < m_model.stageCount(); ++s) { // each stage carries its own scale
        const double scale = m_stageScale[static_cast<std::size_t>(s)];
        if (scale != 1.0)
            m_ops->scale(stageParameters(m_grads, s), static_cast<float>(1.0 / scale));
    }
    if (m_config.clipNorm > 0.0) {
        const double norm = std::sqrt(m_ops->sumOfSquares(m_grads));
        if (norm > m_config.clipNorm)
            m_ops->scale(m_grads, static_cast<float>(m_config.clipNorm / norm));
    }
    for (int s = 0; s < m_model.stageCount(); ++s) {
        StageStats& st = stats()[static_cast<std::size_t>(s)];
        const Tensor master = stageParameters(m_master, s);
        const std::size_t offset = static_cast<std::size_t>(master.data - m_master.data);
        const OptimizerState state{stageParameters(m_optimizerState.first, s),
                                   m_optimizerState.second.data != nullptr
                                       ? stageParameters(m_optimizerState.second, s)
                                       : Tensor{}};
        const Tensor update = stageParameters(m_update, s);
        const Quantizer& stateFormat = quantizer(s, TensorRole::OptimizerState);
        const Quantizer& masterFormat = quantizer(s, TensorRole::MasterWeights);
        if (m_optimizerSettings.kind == OptimizerKind::Sgd && stateFormat.isIdentity() &&
            masterFormat.isIdentity()) {
            // Nothing to round: one pass instead of four (same result), then the counting.
            TensorOps::Float32Sgd casts{stateFormat, masterFormat};
            if (collect) {
                casts.stateStats = &st.role(TensorRole::OptimizerState);
                casts.masterStats = &st.role(TensorRole::MasterWeights);
                casts.stateOptions = options(s, TensorRole::OptimizerState);
                casts.masterOptions = options(s, TensorRole::MasterWeights);
                casts.count = true;
            }
            const TensorOps::UpdateCounts counts = m_ops->sgdStepFloat32(
                m_optimizerSettings, state.first, m_grads.slice(offset, master.size), master,
                update, stageParameters(m_grads, s), m_config.learningRate, casts);
            st.updates += counts.updates;
            st.lostUpdates += counts.lost;
            continue;
        }
        m_ops->optimizerUpdate(m_optimizerSettings, state, m_step + 1,
                               m_grads.slice(offset, master.size), master, update,
                               m_config.learningRate, stateFormat,
                               collect ? &st.role(TensorRole::OptimizerState) : nullptr,
                               options(s, TensorRole::OptimizerState));
        // New master = Q(master - update); an update that leaves it unchanged was lost. The
        // gradient is spent: its memory is the work space.
        const TensorOps::UpdateCounts counts =
            m_ops->applyMasterUpdate(master, update, stageParameters(m_grads, s), masterFormat,
                                     collect ? &st.role(TensorRole::MasterWeights) : nullptr,
                                     options(s, TensorRole::MasterWeights), collect);
        st.updates += counts.updates;
        st.lostUpdates += counts.lost;
    }
}

StepResult Trainer::step() {
    const auto start = std::chrono::steady_clock::now();
    const bool collect = (m_step + 1) % m_config.statsEvery == 0;
    m_caster->setStep(m_step);
    const std::int64_t completeBefore = m_completeStep;
    if (collect)
        startCollecting();
    nextBatch();
    const int batch = m_config.batchSize;
    refreshWeights(collect, true);
    forward(batch, collect, true);

    const double scale = m_scaler->scale();
    m_lossScale = scale;
    std::fill(m_stageScale.begin(), m_stageScale.end(), scale);
    const LossResult loss =
        m_ops->softmaxCrossEntropy(m_out.back().data, m_labels, batch, m_model.classes(),
                                   m_dout.back().data, static_cast<float>(scale));
    if (m_perLayer) {
        // The loss layer picks the logits gradient's scale by the same rule, its "weights" the
        // identity (sigma^2 + mu^2 = 1, max 1, one product per element).
        const int last = m_model.stageCount() - 1;
        const Tensor g = activation(m_dout, m_dout.size() - 1, batch);
        const double k =
            perLayerScale(m_ops->moments(g), {0.0, 1.0, 1.0}, 1,
                          quantizer(last, TensorRole::ActivationGradients).config().format, 1.0,
                          {m_config.perLayerCap, m_config.cumulativeCap});
        m_ops->scale(g, static_cast<float>(k));
        m_stageScale.back() = scale * k;
    }
    backward(batch, collect);
    if (collect)
        for (std::size_t s = 0; s < stats().size(); ++s)
            stats()[s].gradientScale = m_stageScale[s];

    const bool overflow = !std::isfinite(loss.loss) || !m_ops->allFinite(m_grads);
    const ScaleDecision decision = m_scaler->update(overflow);
    StepResult result;
    if (!decision.skipStep)
        applyUpdate(collect);
    ++m_step;
    // Statistics: the previous batch (if still on its way) lands, this step's is sent, and
    // whatever has arrived by now is reported, without waiting for this step's.
    if (collect) {
        flushStatistics();
        m_ops->sendStatistics();
        m_inFlightBank = m_collecting;
        m_inFlightStep = m_step;
    }
    if (m_inFlightStep != 0 && m_ops->receiveStatistics(false))
        statisticsArrived();

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = batch / std::max(seconds, 1e-9);
    m_samplesPerSecond = m_samplesPerSecond == 0.0 ? rate : 0.9 * m_samplesPerSecond + 0.1 * rate;

    if (m_completeStep != 0 && m_completeStep != completeBefore) {
        result.statsCollected = true;
        result.statsStep = m_completeStep;
    }
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
    result.diverged = overflow && m_scaler->overflowIsDivergence();
    return result;
}

void Trainer::quantizeRole(int stage, TensorRole role, Tensor in, Tensor values,
                           const BlockLayout& layout, bool collect, bool training) {
    StageStats& st = stats()[static_cast<std::size_t>(stage)];
    const auto r = static_cast<std::size_t>(role);
    if (collect) // before the cast overwrites it
        keepSample(st.samples[r], in, layout);
    const CastCounters counters =
        collect ? CastCounters{&st.roles[r], &st.blocks[r], &st.tensorScale[r], &st.scaling[r]}
                : CastCounters{};
    const double amax = m_caster->cast(stage, role, in, values, layout, counters, training);
    if (collect)
        st.samples[r].tensorAmax =
            amax == RecipeCaster::kAmaxInCounts ? kAmaxFromCounts : finiteAmax(amax);
}

void Trainer::keepSample(StageStats::Sample& sample, Tensor input, const BlockLayout& layout) {
    const std::vector<SampleRun> runs = sampleRuns(input.size);
    sample.values.resize(0);
    for (const SampleRun& run : runs) {
        const std::size_t at = sample.values.size();
        sample.values.resize(at + run.length);
        m_ops->download(sample.values.data() + at, input.slice(run.offset, run.length));
    }
    // Kept whole, the tensor's own rows; else the runs.
    const bool whole = runs.size() == 1 && runs[0].length == input.size;
    sample.runLength = whole ? (layout.cols == 0 ? input.size : layout.cols) : kSampleRunLength;
}

double Trainer::finiteAmax(double castAmax) {
    // A cast's amax is its input's, Inf included: an Inf leaves the finite amax unknown.
    return std::isfinite(castAmax) ? castAmax : 0.0;
}

Tensor Trainer::ensure(Tensor& t, std::size_t n, TensorOps& ops) {
    if (t.size < n)
        t = ops.allocate(n);
    return t.slice(0, n);
}

bool Trainer::hadamardFor(std::size_t layer) const {
    // Linear layers whose gradients are cast narrow (convolutions reduce over positions too).
    return dynamic_cast<const Linear*>(m_model.layers()[layer].get()) != nullptr &&
           m_rawGrad[layer].data != nullptr && m_caster->hadamardFor(m_model.stageOf(layer));
}

void Trainer::hadamardWeightGradient(std::size_t layer, int batch) {
    const auto& l = static_cast<const Linear&>(*m_model.layers()[layer]);
    const auto b = static_cast<std::size_t>(batch);
    const auto in = static_cast<std::size_t>(l.inFeatures());
    const auto out = static_cast<std::size_t>(l.outFeatures());
    const int s = m_model.stageOf(layer);
    const Tensor work = ensure(m_rhtTransformed, b * std::max(in, out), *m_ops);
    const Tensor dy = m_caster->castAlongBatch(s, TensorRole::ActivationGradients,
                                               m_rawGrad[layer].slice(0, b * out), b, out,
                                               ensure(m_rhtOperandA, b * out, *m_ops), work);
    const int inputStage = layer == 0 ? 0 : m_model.stageOf(layer - 1);
    const Tensor rawInput =
        layer == 0 ? m_rawInput.slice(0, b * in) : m_rawOut[layer - 1].slice(0, b * in);
    const Tensor x = m_caster->castAlongBatch(inputStage, TensorRole::Activations, rawInput, b, in,
                                              ensure(m_rhtOperandB, b * in, *m_ops), work);
    // dW = dy^T x from the transformed operands (both transposed: (width, batch)), straight into
    // the gradients (zeroed before the backward, which left this layer's alone); the bias
    // gradient is a sum over the batch, which the transform changes: the sum of the
    // untransformed gradient, as the layer's own backward gives it.
    const std::size_t offset = m_model.parameterOffset(layer);
    m_ops->addWeightGradientTransposed(m_grads.data + offset, dy.data, x.data,
                                       static_cast<int>(out), static_cast<int>(in), batch,
                                       m_caster->accumulation());
    m_ops->addColumnSums(m_grads.data + offset + l.weightCount(), m_dout[layer].data, batch,
                         static_cast<int>(out));
}

BlockLayout Trainer::weightLayout(int stage) const {
    // A weight layer's parameters: its (outputs, fan-in) matrix, then one bias per output.
    const Layer& layer = *m_model.layers()[m_model.stageWeightLayer(stage)];
    const std::size_t outputs = layer.parameterCount() - layer.weightCount();
    if (outputs == 0)
        return {};
    // Tiled where the stage's scaling tiles weights: the caster decides (RecipeCaster::cast).
    return {outputs, layer.weightCount() / outputs, true};
}

BlockLayout Trainer::activationLayout(std::size_t layer, int batch) const {
    return {static_cast<std::size_t>(batch),
            static_cast<std::size_t>(m_model.layers()[layer]->outputShape().size()), false};
}

std::string Trainer::locateOverflow(double loss) const {
    if (!std::isfinite(loss))
        return "the loss (forward pass)";
    for (int s = m_model.stageCount() - 1; s >= 0; --s) // backward order: where it started
        if (!m_ops->allFinite(stageParameters(m_grads, s)))
            return "weight_gradients of " + m_model.stageName(s);
    return "unknown";
}

void Trainer::refreshWeights(bool collect, bool training) {
    // FP32 weights without statistics: forward reads the master copy itself, no copy needed.
    bool identity = !collect;
    for (int s = 0; s < m_model.stageCount() && identity; ++s)
        identity = quantizer(s, TensorRole::Weights).isIdentity();
    m_forwardWeights = identity ? m_master.data : m_weights.data;
    if (identity)
        return;
    for (int s = 0; s < m_model.stageCount(); ++s)
        quantizeRole(s, TensorRole::Weights, stageParameters(m_master, s),
                     stageParameters(m_weights, s), weightLayout(s), collect, training);
}

Evaluation Trainer::evaluate() {
    m_caster->setStep(m_step);
    refreshWeights(false, false); // the weights as the next step would use them
    const Dataset& test = m_data->test;
    const auto size = static_cast<std::size_t>(test.shape.size());
    const auto maxBatch = static_cast<std::size_t>(m_config.batchSize);
    double lossSum = 0.0;
    std::size_t correct = 0;
    for (std::size_t start = 0; start < test.count(); start += maxBatch) {
        const std::size_t n = std::min(maxBatch, test.count() - start);
        m_ops->copy(m_input.slice(0, n * size), m_testRows.slice(start * size, n * size));
        m_ops->uploadLabels(m_labels, test.labels.data() + start, n);
        forward(static_cast<int>(n), false, false);
        const LossResult r = m_ops->softmaxCrossEntropy(
            m_out.back().data, m_labels, static_cast<int>(n), m_model.classes(), nullptr, 1.0f);
        lossSum += r.loss * static_cast<double>(n);
        correct += static_cast<std::size_t>(r.correct);
    }
    return Evaluation::of(lossSum / static_cast<double>(test.count()),
                          static_cast<double>(correct) / static_cast<double>(test.count()));
}

} // namespace plab

namespace plab {

void Trainer::saveState(RunCheckpoint& checkpoint) const {
    flushStatistics(); // a device's queued work is done before its tensors are read
    checkpoint.header["trainer"] = {{"model", m_config.model.type},
                                    {"step", m_step},
                                    {"epoch", m_epoch},
                                    {"cursor", m_cursor},
                                    {"parameters", m_master.size},
                                    {"scaler", m_scaler->checkpointState()}};
    putTensor(checkpoint, "master", *m_ops, m_master);
    putTensor(checkpoint, "optimizer.first", *m_ops, m_optimizerState.first);
    putTensor(checkpoint, "optimizer.second", *m_ops, m_optimizerState.second);
    checkpoint.putWords("order", {m_order.begin(), m_order.end()});
    putGenerator(checkpoint, "shuffle", m_shuffle);
    checkpoint.putDoubles("amax_histories", m_caster->amaxHistories());
}

void Trainer::restoreState(const RunCheckpoint& checkpoint) {
    const nlohmann::json& t = checkpoint.header.at("trainer");
    if (t.at("parameters").get<std::size_t>() != m_master.size)
        throw RecordError("checkpoint: " + t.at("parameters").dump() +
                          " parameters; this run's model has " + std::to_string(m_master.size));
    const std::vector<std::uint64_t> order = checkpoint.words("order");
    if (order.size() != m_order.size())
        throw RecordError("checkpoint: a data order of " + std::to_string(order.size()) +
                          " samples; this run's training set has " +
                          std::to_string(m_order.size()));
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (order[i] >= m_order.size())
            throw RecordError("checkpoint: the data order names sample " +
                              std::to_string(order[i]) + " of " + std::to_string(m_order.size()));
        m_order[i] = static_cast<std::uint32_t>(order[i]);
    }
    restoreTensor(checkpoint, "master", *m_ops, m_master);
    restoreTensor(checkpoint, "optimizer.first", *m_ops, m_optimizerState.first);
    restoreTensor(checkpoint, "optimizer.second", *m_ops, m_optimizerState.second);
    restoreGenerator(checkpoint, "shuffle", m_shuffle);
    m_caster->restoreAmaxHistories(checkpoint.doubles("amax_histories"));
    m_scaler->restoreCheckpointState(t.at("scaler"));
    m_step = t.at("step").get<std::int64_t>();
    m_epoch = t.at("epoch").get<int>();
    m_cursor = t.at("cursor").get<std::size_t>();
    if (m_cursor > m_order.size())
        throw RecordError("checkpoint: data cursor " + std::to_string(m_cursor) + " past the " +
                          std::to_string(m_order.size()) + " samples");
}

} // namespace plab
