// WatchRecorder: the hand-over queue, and the counting thread that judges and records.
#include "torch_runs/watch_recorder.h"

#include "engine/cpu_ops.h"
#include "train/recipe_candidates.h"
#include "recipe/recipe_caster.h"
#include "train/run_log.h"
#include "util/thread_pool.h"

#include <chrono>
#include <cmath>
#include <optional>

namespace plab {

// A plain format judges with its TensorCast; a recipe candidate with a RecipeCaster of its own
// recipe and scaling (its delayed scaling's amax histories and stochastic rounding streams are
// the candidate's), so that it casts as a run under that recipe does.
struct FormatJudge {
    std::optional<TensorCast> plain;
    const RecipeCandidate* candidate = nullptr;
    std::unique_ptr<RecipeCaster> caster;
};
namespace {

using Clock = std::chrono::steady_clock;

nlohmann::json watchMeta(const WatchSettings& s) {
    nlohmann::json watch = s.description.is_object() ? s.description : nlohmann::json::object();
    if (s.source == ExternalSource::Watch) // an emulated run's rows are its casts': no what-if
        watch["formats"] = s.formats;
    watch["every"] = s.every;
    return watch;
}

} // namespace

WatchRecorder::WatchRecorder(const std::string& dir, const WatchSettings& settings)
    : m_dir(dir), m_settings(settings) {
    const bool emulated = m_settings.source == ExternalSource::Emulate;
    if (m_settings.formats.empty() && !emulated)
        throw FormatError("watch: no formats to judge the tensors in (give at least one)");
    if (!m_settings.formats.empty() && emulated)
        throw FormatError("emulate: an emulated run records its own casts, not formats to judge "
                          "them in");
    if (m_settings.every < 1)
        throw FormatError("watch: every " + std::to_string(m_settings.every) +
                          ": expected a whole number of steps, 1 or more");
    if (m_settings.threads > 1)
        m_pool = std::make_unique<ThreadPool>(m_settings.threads);
    bool anyElementFormat = false;
    for (std::string& f : m_settings.formats) {
        FormatJudge& judge = m_judges.emplace_back();
        if ((judge.candidate = findRecipeCandidate(f)) != nullptr) {
            if (!m_ops)
                m_ops = std::make_unique<CpuOps>();
            judge.caster = std::make_unique<RecipeCaster>(
                candidateConfig(*judge.candidate), static_cast<int>(m_settings.stageNames.size()),
                *m_ops, m_pool.get());
            continue;
        }
        judge.plain.emplace(TensorCastSpec{.format = f});
        anyElementFormat = anyElementFormat || !judge.plain->isBlockFormat();
        f = judge.plain->name(); // the record names it in the core's canonical spelling
    }
    if (!anyElementFormat && !emulated)
        m_histogramCast = std::make_unique<TensorCast>(TensorCastSpec{.format = "fp32"});
    const char* key = emulated ? "emulate" : "watch";
    ExternalRun run;
    run.config = {{key, watchMeta(m_settings)}};
    run.meta = {{"source", emulated ? "pytorch-emulate" : "pytorch-watch"},
                {key, watchMeta(m_settings)}};
    run.histogramsEvery = std::max(1, m_settings.histogramsEvery);
    m_log = std::make_unique<RunLog>(dir, run, m_settings.stageNames,
                                     RunLogOptions{m_settings.overwrite});
    m_log->logEvent(0, "start",
                    std::string(emulated ? "emulating " : "watching ") +
                        std::to_string(m_settings.stageNames.size()) +
                        " modules, statistics every " + std::to_string(m_settings.every) +
                        " steps");
    m_log->commit();
    m_thread = std::jthread([this](std::stop_token stop) { countingLoop(stop); });
}

WatchRecorder::~WatchRecorder() {
    try {
        close("stopped (the watcher was destroyed without close())", false);
    } catch (...) { // a destructor reports nothing: the record keeps its whole steps
    }
}

void WatchRecorder::throwIfFailed() const {
    if (!m_failure.empty())
        throw RecordError(m_failure);
}

bool WatchRecorder::submit(WatchedStep step) {
    std::unique_lock lock(m_mutex);
    throwIfFailed();
    if (m_closed)
        throw RecordError(m_dir + ": the watcher is closed; steps are no longer recorded");
    bool kept = true;
    if (step.statistics && m_waitingStatistics >= std::max<std::size_t>(1, m_settings.queueSteps)) {
        kept = false;
        ++m_dropped;
        Item dropped;
        dropped.eventStep = step.step;
        dropped.eventType = "statistics_dropped";
        dropped.eventMessage = "the statistics of step " + std::to_string(step.step) +
                               " were dropped: " + std::to_string(m_waitingStatistics) +
                               " statistics steps were still waiting to be counted";
        step.statistics = false;
        step.tensors.clear();
        m_queue.push_back(std::move(dropped));
    }
    if (step.statistics)
        ++m_waitingStatistics;
    Item item;
    item.step = std::move(step);
    m_queue.push_back(std::move(item));
    lock.unlock();
    m_wake.notify_one();
    return kept;
}

void WatchRecorder::event(std::int64_t step, const std::string& type, const std::string& message,
                          const nlohmann::json& change) {
    Item item;
    item.eventStep = step;
    item.eventType = type;
    item.eventMessage = message;
    item.eventChange = change;
    enqueue(std::move(item));
}

void WatchRecorder::describe(const nlohmann::json& description) {
    Item item;
    item.description = description;
    enqueue(std::move(item));
}

void WatchRecorder::enqueue(Item item) {
    std::unique_lock lock(m_mutex);
    throwIfFailed();
    if (m_closed)
        return;
    m_queue.push_back(std::move(item));
    lock.unlock();
    m_wake.notify_one();
}

void WatchRecorder::flush() {
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return (m_queue.empty() && !m_busy) || !m_failure.empty(); });
    throwIfFailed();
}

void WatchRecorder::close(const std::string& stopReason, bool finished) {
    {
        std::unique_lock lock(m_mutex);
        if (m_closed)
            return;
        m_closed = true;
        m_idle.wait(lock, [this] { return (m_queue.empty() && !m_busy) || !m_failure.empty(); });
    }
    m_thread.request_stop(); // wakes the counting thread's wait (it waits with the stop token)
    if (m_thread.joinable())
        m_thread.join();
    std::string failure;
    {
        const std::lock_guard lock(m_mutex);
        failure = m_failure;
    }
    const RunSummary summary = summaryNow(finished && failure.empty(),
                                          failure.empty() ? stopReason : "failed: " + failure);
    m_log->logEvent(m_lastStep, "end", summary.stopReason);
    m_log->writeSummary(summary);
    m_log->close();
    m_log.reset(); // the folder's lock with it: another run may write there now
    if (!failure.empty())
        throw RecordError(failure);
}

std::uint64_t WatchRecorder::droppedSteps() const {
    const std::lock_guard lock(m_mutex);
    return m_dropped;
}

std::uint64_t WatchRecorder::recordedSteps() const {
    const std::lock_guard lock(m_mutex);
    return m_recorded;
}

void WatchRecorder::countingLoop(std::stop_token stop) {
    auto lastSummary = Clock::now();
    for (;;) {
        Item item;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, stop, [&] { return !m_queue.empty(); });
            if (m_queue.empty()) // the stop, with nothing left to count
                return;
            item = std::move(m_queue.front());
            m_queue.pop_front();
            m_busy = true;
        }
        std::string failure;
        try {
            if (item.step) {
                record(*item.step);
            } else if (item.description) {
                WatchSettings described = m_settings; // m_settings stays as other threads read it
                described.description = *item.description;
                const char* key = described.source == ExternalSource::Emulate ? "emulate" : "watch";
                const nlohmann::json meta = watchMeta(described);
                m_log->writeExternalConfig({{key, meta}}, key, meta);
                m_log->commit();
            } else {
                m_log->logEvent(item.eventStep, item.eventType, item.eventMessage,
                                item.eventChange);
                m_log->commit();
            }
            if (Clock::now() - lastSummary > std::chrono::seconds(2)) {
                m_log->writeSummary(summaryNow(false, "running"));
                m_log->commit();
                lastSummary = Clock::now();
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
        {
            const std::lock_guard lock(m_mutex);
            m_busy = false;
            if (item.step && item.step->statistics)
                --m_waitingStatistics;
            if (!failure.empty() && m_failure.empty())
                m_failure = failure;
            if (failure.empty() && item.step)
                ++m_recorded;
        }
        m_idle.notify_all();
        if (!failure.empty())
            return; // the record keeps its whole steps; submit() reports the failure
    }
}

void WatchRecorder::record(const WatchedStep& step) {
    m_log->logReportedStep(step.step, step.loss, step.learningRate, step.scale, step.skipped);
    m_log->logReportedMetrics(step.step, step.metrics);
    if (step.statistics) {
        const bool withHistograms = m_log->startStatistics(step.step);
        for (const CountedTensor& t : step.counted) {
            if (t.stage >= m_settings.stageNames.size())
                throw RecordError(m_dir + ": a counted cast names stage " +
                                  std::to_string(t.stage) + " of " +
                                  std::to_string(m_settings.stageNames.size()));
            const bool gradient =
                t.role == TensorRole::ActivationGradients || t.role == TensorRole::WeightGradients;
            m_log->logRoleStats(step.step, t.stage, t.role,
                                {t.format, t.stats, t.blocks, gradient ? step.scale : 1.0,
                                 t.tensorScale, 0, 0, t.scaling},
                                withHistograms);
            if (withHistograms)
                m_log->logHistogram(step.step, t.stage, t.role, t.stats.histogram);
        }
        std::vector<float> out;
        std::vector<BlockInfo> blockInfos;
        QuantizeOptions options;
        options.pool = m_pool.get();
        options.measureError = true; // each format's SQNR
        for (const CapturedTensor& t : step.tensors) {
            if (t.stage >= m_settings.stageNames.size())
                throw RecordError(m_dir + ": a captured tensor names stage " +
                                  std::to_string(t.stage) + " of " +
                                  std::to_string(m_settings.stageNames.size()));
            out.resize(t.values.size());
            const std::size_t rows =
                t.rowLength != 0 && t.values.size() % t.rowLength == 0 ? t.rowLength : 0;
            // Gradients are judged at the scale the step used, and their rows say which.
            const bool gradient =
                t.role == TensorRole::ActivationGradients || t.role == TensorRole::WeightGradients;
            const double gradientScale = gradient ? step.scale : 1.0;
            bool histogramWritten = false;
            // The activations' kurtosis (the instability warning the papers watch; on every
            // role it would cost the counting thread a sixth more), then each block format's
            // scales.
            if (t.role == TensorRole::Activations) {
                const TensorDiagnostics diagnostics = tensorDiagnostics(t.values);
                m_log->logDiagnostics(step.step, t.stage, t.role, {}, &diagnostics, nullptr);
            }
            for (FormatJudge& judge : m_judges) {
                if (judge.candidate) {
                    judgeInCandidate(judge, step, t, out, withHistograms);
                    continue;
                }
                const TensorCast& cast = *judge.plain;
                // The inputs' histogram, counted by the first element format only (every element
                // format bins the same values; once saves the counting thread a sixth of each
                // further cast): on histogram steps, and nowhere else read.
                QuantizeOptions castOptions = options;
                castOptions.countHistogram =
                    withHistograms && !histogramWritten && !cast.isBlockFormat();
                TensorCastResult result;
                cast.cast(t.values, out, rows, t.multiplier, castOptions, &result,
                          cast.isBlockFormat() ? &blockInfos : nullptr);
                if (cast.isBlockFormat()) {
                    const BlockScaleSpread spread = blockScaleSpread(blockInfos);
                    m_log->logDiagnostics(step.step, t.stage, t.role, cast.name(), nullptr,
                                          &spread);
                }
                m_log->logRoleStats(
                    step.step, t.stage, t.role,
                    {cast.name(), result.stats, result.blocks, gradientScale, result.tensorScale},
                    withHistograms);
                if (castOptions.countHistogram) {
                    m_log->logHistogram(step.step, t.stage, t.role, result.stats.histogram);
                    histogramWritten = true;
                }
            }
            if (withHistograms && !histogramWritten) {
                TensorCastResult result;
                m_histogramCast->cast(t.values, out, rows, t.multiplier, options, &result);
                m_log->logHistogram(step.step, t.stage, t.role, result.stats.histogram);
            }
        }
    }
    m_log->commit();
    m_lastStep = step.step;
    if (step.loss)
        m_lastLoss = *step.loss;
    for (const auto& [name, value] : step.metrics)
        m_lastMetrics[name] = value;
    if (step.skipped)
        ++m_skippedSteps;
}

void WatchRecorder::judgeInCandidate(FormatJudge& judge, const WatchedStep& step,
                                     const CapturedTensor& t, std::vector<float>& out,
                                     bool withHistograms) {
    if (!candidateJudges(t.role))
        return; // a weight gradient: no cast of it in the candidate
    m_scaled.assign(t.values.begin(), t.values.end());
    if (t.multiplier != 1.0f)
        for (float& v : m_scaled)
            v *= t.multiplier;
    const std::size_t n = m_scaled.size();
    // A tensor's rows as the watcher got them (its last dimension); a weight may be tiled where
    // the candidate tiles weights (NVFP4's 16x16, the FP8 blocks' 128x128).
    BlockLayout layout;
    if (t.rowLength != 0 && n % t.rowLength == 0)
        layout = {n / t.rowLength, t.rowLength, t.role == TensorRole::Weights};
    QuantStats stats;
    BlockStats blocks;
    double tensorScale = 1.0;
    std::string_view scaling;
    // Step k's streams, as the trainer draws them; the candidate's amax histories hold the
    // statistics steps only (the steps the watcher sees).
    judge.caster->setStep(step.step);
    judge.caster->cast(static_cast<int>(t.stage), t.role, {m_scaled.data(), n}, {out.data(), n},
                       layout, {&stats, &blocks, &tensorScale, &scaling}, true);
    const bool gradient = t.role == TensorRole::ActivationGradients;
    m_log->logRoleStats(step.step, t.stage, t.role,
                        {judge.candidate->name, stats, blocks, gradient ? step.scale : 1.0,
                         tensorScale, 0, 0, scaling},
                        withHistograms);
    // A block-scaled candidate's scales for the diagnostics (their spread, blocks whose scale
    // underflowed): the same blocks again, as its cast scaled them (into no statistics).
    const int stage = static_cast<int>(t.stage);
    if (const std::optional<BlockScheme> scheme = judge.caster->scaling(stage).blockScheme()) {
        const Quantizer& element = judge.caster->quantizer(stage, t.role);
        quantizeBlocks(element, *scheme, m_scaled, out, layout, nullptr, nullptr,
                       judge.caster->options(stage, t.role), m_blockInfos, BlockRecords::All);
        const BlockScaleSpread spread = blockScaleSpread(m_blockInfos);
        m_log->logDiagnostics(step.step, t.stage, t.role, judge.candidate->name, nullptr, &spread);
    }
}

RunSummary WatchRecorder::summaryNow(bool finished, const std::string& stopReason) const {
    RunSummary s;
    s.finished = finished;
    s.stopReason = stopReason;
    s.steps = m_lastStep;
    s.skippedSteps = m_skippedSteps;
    s.finalTrainLoss = m_lastLoss;
    s.finalMetrics = m_lastMetrics;
    s.wallSeconds = std::chrono::duration<double>(Clock::now() - m_started).count();
    s.samplesPerSecond = std::nan("");
    return s;
}

} // namespace plab
