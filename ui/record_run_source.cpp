// RecordRunSource: reading a run record for the views, and following it while it grows.
#include "record_run_source.h"

#include "training_controller.h"

#include <algorithm>

namespace plab {

RecordRunSource::RecordRunSource(const QString& dir)
    : m_dir(dir), m_record(std::make_unique<RunRecord>(dir.toStdString())),
      m_steering(dir.toStdString()) {
    // An emulated PyTorch run (precision_lab.torch.emulate) records the config its recipe
    // resolved to; its own config.json describes the script's run, which replays by running the
    // script. A watched run has no config at all.
    m_emulated = m_record->meta("source") == "pytorch-emulate";
    if (m_emulated) {
        const nlohmann::json emulate = m_record->meta("emulate");
        if (!emulate.is_object() || !emulate.contains("train_config"))
            throw RecordError(dir.toStdString() +
                              ": an emulated run's record without its recipe (meta "
                              "emulate.train_config)");
        m_config = configFromJson(emulate["train_config"]);
    } else if (watched()) {
        m_judged = m_record->judgedFormats().front();
    } else {
        m_config = configFromJson(m_record->config());
    }
    m_names = m_record->stageNames();
    m_snapshot.stageNames = m_names;
}

bool RecordRunSource::poll() {
    try {
        if (m_record->dataVersion() == m_version && m_live == m_record->isBeingWritten())
            return false; // nothing committed since the last look
    } catch (const std::exception&) {
        // the folder went away or cannot be read now: the refresh says so
    }
    refresh();
    return true;
}

void RecordRunSource::refresh() {
    const RunRecord& record = *m_record;
    // The version first: a commit between it and the reads shows at the next poll.
    const std::int64_t version = record.dataVersion();
    const bool live = record.isBeingWritten();
    std::vector<StepScalars> history = record.steps();
    // The heat map: activation gradients' flushed shares, from the rows not read yet.
    for (const StatsRow& row :
         record.statsRows(m_judged, TensorRole::ActivationGradients, m_statsSeq)) {
        if (m_columns.empty() || m_columns.back().step != row.step)
            m_columns.push_back({row.step, std::vector<double>(m_names.size())});
        m_columns.back().flushed[row.stage] = row.flushedShare();
        m_statsSeq = row.seq;
    }
    RunSummary summary = record.summary();
    std::vector<std::int64_t> histogramSteps = record.histogramSteps();
    if (!m_rolesKnown) { // until its first statistics step is in
        // What the record holds: a PyTorch run's four product tensors (no master weights, no
        // optimiser state), a trained run's every role; until then, what its kind records.
        std::vector<TensorRole> roles = record.recordedRoles();
        m_rolesKnown = !roles.empty();
        if (roles.empty())
            for (TensorRole r : kAllRoles)
                if (!(watched() || m_emulated) ||
                    (r != TensorRole::MasterWeights && r != TensorRole::OptimizerState))
                    roles.push_back(r);
        m_roles = std::move(roles);
    }
    m_replies = m_steering.refresh(record, history.empty() ? 0 : history.back().step);
    m_version = version;
    m_live = live;
    m_history = std::move(history);
    // As the live views do: at most ~4k points, evaluations always kept.
    const std::size_t every = m_history.size() / TrainingController::kHistoryCapacity + 1;
    m_shownHistory.clear();
    for (std::size_t i = 0; i < m_history.size(); ++i)
        if (i % every == 0 || m_history[i].evaluated || i + 1 == m_history.size())
            m_shownHistory.push_back(m_history[i]);
    m_summary = std::move(summary);
    m_histogramSteps = std::move(histogramSteps);
}

void RecordRunSource::showNoStep() {
    m_snapshot = TrainingSnapshot();
    m_snapshot.stageNames = m_names;
}

void RecordRunSource::showStep(std::int64_t step) {
    showNoStep(); // also when the read fails
    TrainingSnapshot snapshot;
    snapshot.stageNames = m_names;
    if (const std::optional<RecordedStatistics> stats = m_record->histogramsAt(step, m_judged)) {
        snapshot.statsStep = step;
        snapshot.stages = stats->stages;
        for (const StepScalars& s : m_history)
            if (s.step == step)
                snapshot.scalars = s;
    }
    m_snapshot = std::move(snapshot);
}

void RecordRunSource::setJudgedFormat(const std::string& format) {
    m_judged = format;
    m_version = -1; // read it all again, in the chosen format
    m_columns.clear();
    m_statsSeq = 0;
}

TrainConfig RecordRunSource::configAt(std::int64_t step) const {
    // The config's timeline up to the step: what that step ran with, not what the run started
    // with.
    return configAfterSteps(m_config, step - 1);
}

ShownPrecision RecordRunSource::precisionAt(std::int64_t step) const {
    return watched() ? ShownPrecision::judgedIn(m_judged) : ShownPrecision::of(configAt(step));
}

const FormatComparison& RecordRunSource::compareFormats(int stage, TensorRole role) {
    if (!watched())
        return m_sampled.compare(m_snapshot, precision(), stage, role);
    // A watched run keeps no samples, but every judged format's counts for the whole tensor.
    if (stage < 0 || static_cast<std::size_t>(stage) >= m_names.size() || m_snapshot.stages.empty())
        return m_judgedComparison; // no recorded step on show yet
    const std::string& name = m_names[static_cast<std::size_t>(stage)];
    if (m_judgedComparison.key == judgedComparisonKey(m_snapshot.statsStep, name, role, m_judged))
        return m_judgedComparison; // a step's rows are committed at once: read already
    std::vector<FormatOutcome> judged;
    for (const StatsRow& row :
         m_record->tensorRows(m_snapshot.statsStep, static_cast<std::size_t>(stage), role))
        judged.push_back(recordedOutcome(row.format, row.blocks > 0, row.counts, row.error));
    // Made only after a read that did not throw: a failed read is tried again next time.
    m_judgedComparison =
        judgedFormatComparison(std::move(judged), name, role, m_snapshot.statsStep, m_judged);
    return m_judgedComparison;
}

std::string RecordRunSource::whyNot() const {
    return m_steering.steerable() ? std::string() : m_steering.whyNot();
}

std::string RecordRunSource::setLossScale(double scale) {
    return m_steering.steerable() ? m_steering.sendScale(scale) : whyNot();
}

std::string RecordRunSource::setScalingPolicy(ScalingPolicy policy, double scale) {
    return m_steering.steerable() ? m_steering.sendPolicy(policy, scale) : whyNot();
}

std::string RecordRunSource::setRecipe(const PrecisionRecipe& recipe) {
    return m_steering.steerable() ? m_steering.sendRecipe(recipe) : whyNot();
}

std::string RecordRunSource::toggleRunning() {
    if (!m_steering.steerable())
        return whyNot();
    return m_steering.sendAction(m_steering.paused() ? "resume" : "pause");
}

std::string RecordRunSource::stepOnce() {
    return m_steering.steerable() ? m_steering.sendAction("step") : whyNot();
}

} // namespace plab
