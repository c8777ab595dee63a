#include "train/gpt_trainer.h"

#include "data/text_corpus.h"
#include "device/compute_backend.h"
#include "engine/cpu_ops.h"
#include "train/trainer.h" // checkRecipeStages

#include <algorithm>
#include <thread>

namespace plab {
namespace {

GptRunSettings settingsFor(const TrainConfig& config) {
    if (config.optimizer != OptimizerKind::AdamW)
        throw ConfigError("config.train.optimizer: the gpt model trains with adamw (the peer's "
                          "recipe: decay on matrices and embeddings only)");
    if (config.clipNorm != 0.0)
        throw ConfigError("config.train.clip_norm: the gpt model trains without clipping, as its "
                          "peer does (expected 0)");
    GptRunSettings s;
    s.spec.context = config.model.context;
    s.spec.width = config.model.width;
    s.spec.heads = config.model.heads;
    s.spec.blocks = config.model.blocks;
    s.batch = config.batchSize;
    s.lr = config.learningRate;
    s.beta1 = config.beta1;
    s.beta2 = config.beta2;
    s.epsilon = config.epsilon;
    s.weightDecay = config.weightDecay;
    s.seed = config.seed;
    s.threads = config.threads == 0
                    ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                    : static_cast<int>(config.threads);
    s.precision = config;
    return s;
}

} // namespace

GptTrainer::GptTrainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data)
    : GptTrainer(config, std::move(data), nullptr) {}

GptTrainer::GptTrainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
                       std::unique_ptr<TensorOps> ops)
    : m_config(config), m_data(std::move(data)) {
    if (!m_data || !m_data->text)
        throw DataError("the gpt model reads text (data.source synthetic, fortunes or text:FILE); "
                        "the data loaded holds none");
    const GptRunSettings settings = settingsFor(config);
    const bool engineChosenHere = !ops;
    if (engineChosenHere)
        std::tie(ops, m_deviceNotice) = tensorOpsFor(config.device);
    const bool onCpu = ops->name() == "cpu";
    try {
        m_run = std::make_unique<GptRun>(settings, *m_data->text, std::move(ops));
    } catch (const std::exception& e) {
        // As the MLP's Trainer: a GPU engine out of memory while the run is set up (parameters,
        // optimiser state, the batch's activations) trains on the CPU with the reason. The
        // failed run and its engine are gone by now.
        if (!engineChosenHere || onCpu)
            throw;
        m_deviceNotice = std::string(e.what()) + "; training on the CPU";
        m_run = std::make_unique<GptRun>(settings, *m_data->text, std::make_unique<CpuOps>());
    }
    checkRecipeStages(config.recipe, m_run->model().stageCount(), true);
    if (!m_run->notice().empty())
        m_deviceNotice += (m_deviceNotice.empty() ? "" : "; ") + m_run->notice();
}

std::vector<std::string> GptTrainer::stageNames() const {
    std::vector<std::string> names;
    for (int s = 0; s < stageCount(); ++s)
        names.push_back(m_run->model().stageName(s));
    return names;
}

std::int64_t GptTrainer::stepsPerEpoch() const {
    // An epoch: as many windows as the training text holds bytes (each byte a target once on
    // average), at least one step.
    const auto window = static_cast<std::size_t>(m_config.batchSize) *
                        static_cast<std::size_t>(m_config.model.context);
    return std::max<std::int64_t>(1,
                                  static_cast<std::int64_t>(m_data->text->train.size() / window));
}

std::int64_t GptTrainer::plannedSteps() const {
    return m_config.steps > 0 ? m_config.steps : m_config.epochs * stepsPerEpoch();
}

StepResult GptTrainer::step() {
    const auto start = std::chrono::steady_clock::now();
    const bool collect = (m_run->stepsTaken() + 1) % m_config.statsEvery == 0;
    if (collect)
        m_run->resetStats();
    m_run->setCounting(collect);
    const GptStepResult r = m_run->step();
    StepResult result;
    if (collect) {
        m_stats = m_run->stageStats();
        m_statsStep = m_run->stepsTaken();
        result.statsCollected = true;
        result.statsStep = m_statsStep;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Samples are windows of context bytes (what the peer counts as a sample too).
    const double rate = m_config.batchSize / std::max(seconds, 1e-9);
    m_samplesPerSecond = m_samplesPerSecond == 0.0 ? rate : 0.9 * m_samplesPerSecond + 0.1 * rate;
    StepScalars& sc = result.scalars;
    sc.step = m_run->stepsTaken();
    sc.epoch = static_cast<int>((sc.step - 1) / stepsPerEpoch());
    sc.loss = r.loss;
    sc.accuracy = r.accuracy;
    sc.scale = r.scale;
    sc.skipped = r.skipped;
    sc.samplesPerSecond = m_samplesPerSecond;
    sc.learningRate = m_config.learningRate;
    result.event = r.event;
    result.diverged = r.diverged;
    return result;
}

Evaluation GptTrainer::evaluate() {
    const GptEvaluation e = m_run->evaluate();
    Evaluation out = Evaluation::of(e.loss, e.accuracy);
    // What the model writes after the validation text's first line (a fixed prompt, so samples
    // from one evaluation to the next show what changed), drawn from a generator seeded by the
    // run's seed and the step: a replay writes the same text.
    const std::vector<std::uint8_t>& v = m_data->text->validation;
    const auto newline = std::find(v.begin(), v.end(), std::uint8_t{'\n'});
    std::string prompt(v.begin(),
                       v.begin() + std::min<std::ptrdiff_t>(newline - v.begin() + 1, 64));
    if (prompt.empty())
        prompt.push_back('\n'); // not = "\n": GCC 12's -Wrestrict false positive
    out.sample = prompt;
    out.sample +=
        m_run->sample(prompt, 160, m_config.seed ^ static_cast<std::uint64_t>(m_run->stepsTaken()));
    // Bytes outside printable ASCII (a control byte, half a UTF-8 sequence) become '?': the
    // sample goes into the record's events and on screen as text.
    for (char& ch : out.sample)
        if ((static_cast<unsigned char>(ch) < 32 && ch != '\n') ||
            static_cast<unsigned char>(ch) > 126)
            ch = '?';
    return out;
}

void GptTrainer::setLearningRate(double lr) {
    m_config.learningRate = lr;
    m_run->setLearningRate(lr);
}

void GptTrainer::setRecipe(const PrecisionRecipe& recipe) {
    checkRecipeStages(recipe, stageCount(), true);
    m_config.recipe = recipe;
    m_run->setPrecision(m_config);
}

void GptTrainer::setScaling(const TrainConfig& scaling) {
    TrainConfig next = m_config;
    next.setScalingFrom(scaling);
    m_run->setPrecision(next);
    m_config = next;
}

} // namespace plab
