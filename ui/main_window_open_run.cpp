// MainWindow showing a run from its record: a past run, or one another process still writes
// (a watched PyTorch run, a CLI train, a sweep's run), followed by polling.
#include "main_window.h"

#include "flush_heatmap_view.h"
#include "format_what_if_table.h"
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "recipe_editor.h"
#include "record/run_record.h"
#include "run_steering.h"
#include "stats/what_if_formats.h"
#include "time_view.h"
#include "training_controller.h"
#include "util/folder_size.h"
#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QSlider>
#include <QSpinBox>
#include <QStatusBar>
#include <QTimer>
#include <cmath>

namespace plab {

// What the views need to draw a watched PyTorch run judged in `format`: every role in that
// format, a static loss scale so that the slider's preview moves the gradients' histograms. The
// run itself has no config that replays it. A block format's element bands would not fit the
// recorded histogram (of the values before the block scales), so its view has FP32's bands and
// the block cast's own counts in the shares line.
TrainConfig MainWindow::watchedRunDisplayConfig(const std::string& format, double scale) {
    TrainConfig config;
    const QuantConfig q = QuantConfig::forFormat(
        parseFormat(findBlockFormat(format) != nullptr ? std::string("fp32") : format));
    for (QuantConfig& role : config.recipe.roles)
        role = q;
    config.scalingPolicy = ScalingPolicy::Static;
    config.lossScale = scale > 0 && std::isfinite(scale) ? scale : 1.0;
    return config;
}

// An emulated PyTorch run (precision_lab.torch.emulate) records the config its recipe resolved
// to; its own config.json describes the script's run, which replays by running the script.
static bool isEmulatedRun(const RunRecord& record) {
    return record.meta("source") == "pytorch-emulate";
}

QString MainWindow::openRun(const QString& dir) {
    std::unique_ptr<RunRecord> record;
    TrainConfig config;
    try { // read what is needed to show it before the current run is ended for it
        record = std::make_unique<RunRecord>(dir.toStdString());
        if (isEmulatedRun(*record)) {
            const nlohmann::json emulate = record->meta("emulate");
            if (!emulate.is_object() || !emulate.contains("train_config"))
                throw RecordError(dir.toStdString() +
                                  ": an emulated run's record without its recipe (meta "
                                  "emulate.train_config)");
            config = configFromJson(emulate["train_config"]);
        } else if (record->judgesSeveralFormats()) {
            const std::vector<StepScalars> steps = record->steps();
            config = watchedRunDisplayConfig(record->judgedFormats().front(),
                                             steps.empty() ? 1.0 : steps.back().scale);
        } else {
            config = configFromJson(record->config());
        }
    } catch (const std::exception& e) {
        return dir + QStringLiteral(": ") + QString::fromStdString(e.what());
    }
    m_controller->closeSession(); // also when dir is the current run's: its record is now whole
    m_viewedRun = dir;
    m_viewedNames = record->stageNames();
    m_viewedConfig = config;
    {
        const QSignalBlocker block(m_watchedFormat);
        m_watchedFormat->clear();
        for (const std::string& f : record->judgedFormats())
            m_watchedFormat->addItem(QString::fromStdString(f));
        m_watchedFormat->setVisible(record->judgesSeveralFormats());
    }
    m_viewedRecord = std::move(record);
    m_steering = std::make_unique<RunSteering>(dir.toStdString());
    m_recordedWhatIfKey = {-1, -1, -1, {}}; // another record: read its rows afresh
    m_viewedVersion = -1;
    m_viewedStep = 0;
    m_viewedColumns.clear();
    m_viewedStatsSeq = 0;
    m_scrubSteps.clear();
    m_recipeEditor->setStageNames(m_viewedNames);
    showRunSettings(config);
    m_recipeEditor->showRecordOnly({});
    m_viewedRolesKnown = false;
    if (m_viewedRecord->judgesSeveralFormats()) { // a PyTorch script's run: nothing to replay
        showWatchedRunInControls(tr("watched: %1").arg(QFileInfo(dir).fileName()));
        QStringList judged;
        for (const std::string& f : m_viewedRecord->judgedFormats())
            judged << QString::fromStdString(f);
        m_recipeEditor->showRecordOnly(
            tr("<b>A watched run has no recipe.</b> Its script trains in its own precision; the "
               "watcher recorded each module's weights, activations, activation gradients and "
               "weight gradients as they were, judged in %1 (the format box right of the step "
               "slider picks the "
               "one on show). Master weights and optimiser state are not recorded.")
                .arg(judged.join(QStringLiteral(", "))));
    } else if (isEmulatedRun(*m_viewedRecord))
        showWatchedRunInControls(tr("emulated: %1").arg(QFileInfo(dir).fileName()));
    else
        showConfigInControls(config, tr("run: %1").arg(QFileInfo(dir).fileName()));
    if (const QString err = refreshViewedRun(); !err.isEmpty()) {
        m_viewedRecord.reset();
        return err;
    }
    m_followTimer->start();
    markPendingValues();
    return {};
}

// The Tensor box offers what the record holds: a PyTorch run's four product tensors (no master
// weights, no optimiser state), a trained run's every role; until the first statistics step,
// what its kind of run records.
void MainWindow::showRecordedRoles() {
    std::vector<TensorRole> roles = m_viewedRecord->recordedRoles();
    m_viewedRolesKnown = !roles.empty();
    if (roles.empty()) {
        const bool script =
            m_viewedRecord->judgesSeveralFormats() || isEmulatedRun(*m_viewedRecord);
        for (TensorRole r : kAllRoles)
            if (!script || (r != TensorRole::MasterWeights && r != TensorRole::OptimizerState))
                roles.push_back(r);
    }
    m_gradientView->setRoles(roles);
}

std::string MainWindow::watchedFormat() const {
    return m_watchedFormat->isVisible() || m_watchedFormat->count() > 0
               ? m_watchedFormat->currentText().toStdString()
               : std::string();
}

void MainWindow::pollViewedRun() {
    if (!m_viewedRecord)
        return;
    try {
        if (m_viewedRecord->dataVersion() == m_viewedVersion &&
            m_viewedLive == m_viewedRecord->isBeingWritten())
            return; // nothing committed since the last look
    } catch (const std::exception&) {
        // the folder went away or cannot be read now: the next refresh says so
    }
    if (const QString err = refreshViewedRun(); !err.isEmpty()) {
        m_followTimer->stop();
        showError(tr("Cannot follow the run"), err);
    }
}

QString MainWindow::refreshViewedRun() {
    const QString dir = m_viewedRun;
    std::vector<StepScalars> history;
    std::vector<std::int64_t> scrubSteps;
    std::vector<RecordedEvent> replies;
    RunSummary summary;
    bool live = false;
    try {
        const RunRecord& record = *m_viewedRecord;
        // The version first: a commit between it and the reads shows at the next poll.
        m_viewedVersion = record.dataVersion();
        live = record.isBeingWritten();
        history = record.steps();
        // The heat map: activation gradients' flushed shares, from the rows not read yet.
        for (const StatsRow& row :
             record.statsRows(watchedFormat(), TensorRole::ActivationGradients, m_viewedStatsSeq)) {
            if (m_viewedColumns.empty() || m_viewedColumns.back().step != row.step)
                m_viewedColumns.push_back({row.step, std::vector<double>(m_viewedNames.size())});
            m_viewedColumns.back().flushed[row.stage] = row.flushedShare();
            m_viewedStatsSeq = row.seq;
        }
        summary = record.summary();
        scrubSteps = record.histogramSteps();
        if (!m_viewedRolesKnown) // until its first statistics step is in
            showRecordedRoles();
        replies = m_steering->refresh(record, history.empty() ? 0 : history.back().step);
    } catch (const std::exception& e) {
        return dir + QStringLiteral(": ") + QString::fromStdString(e.what());
    }
    m_viewedLive = live;
    m_viewedHistory = history;
    showSteeringReplies(replies);
    updateRunControls();
    // As the live views do: at most ~4k points, evaluations always kept.
    const std::size_t every = history.size() / TrainingController::kHistoryCapacity + 1;
    std::vector<StepScalars> shown;
    for (std::size_t i = 0; i < history.size(); ++i)
        if (i % every == 0 || history[i].evaluated || i + 1 == history.size())
            shown.push_back(history[i]);
    m_timeView->setHistory(shown);
    m_heatmap->setColumns(m_viewedColumns, m_viewedNames);
    // The gradient view follows the newest recorded step unless the user scrubbed back.
    const bool following = m_scrubSteps.empty() || m_scrub->value() >= m_scrub->maximum();
    const std::int64_t shownStep =
        m_scrubSteps.empty() ? -1 : m_scrubSteps[static_cast<std::size_t>(m_scrub->value())];
    m_scrubSteps = scrubSteps;
    {
        const QSignalBlocker block(m_scrub);
        m_scrub->setRange(0, std::max<int>(0, static_cast<int>(m_scrubSteps.size()) - 1));
        if (following) {
            m_scrub->setValue(m_scrub->maximum());
        } else { // stay on the step the user chose
            const auto at = std::find(m_scrubSteps.begin(), m_scrubSteps.end(), shownStep);
            if (at != m_scrubSteps.end())
                m_scrub->setValue(static_cast<int>(at - m_scrubSteps.begin()));
        }
    }
    m_scrub->setVisible(m_scrubSteps.size() > 1);
    m_scrubLabel->setVisible(!m_scrubSteps.empty());
    showViewedStep(m_scrub->value());
    m_progress->setRange(0, 1);
    m_progress->setValue(summary.finished ? 1 : 0);
    const QString name = QFileInfo(dir).fileName();
    const std::int64_t steps = history.empty() ? 0 : history.back().step;
    // A watched or emulated run has no settings the app could train (its toolbar fields are
    // disabled).
    const QString next =
        m_steering->steerable()
            ? tr("The slider, the policy box, the recipe and Pause / Step steer its script.")
        : m_viewedRecord->judgesSeveralFormats() || isEmulatedRun(*m_viewedRecord)
            ? tr("Pick a preset to train a run of the app's own.")
            : tr("Apply starts a new run from its settings.");
    if (live)
        m_status->setText(
            tr("Following run %1 (live: another process is writing it), %2 steps so far. %3")
                .arg(name)
                .arg(steps)
                .arg(next));
    else
        m_status->setText(tr("Viewing run %1 (ended: %2), %3 steps. %4")
                              .arg(name, QString::fromStdString(summary.stopReason))
                              .arg(steps)
                              .arg(next));
    m_status->setToolTip(dir);
    m_disk->setText(
        tr("record %1")
            .arg(QString::fromStdString(megabytesText(runRecordBytes(dir.toStdString())))));
    m_disk->setToolTip(dir);
    return {};
}

// The run's statistics step at `index` of the recorded histogram steps, in the gradient view
// (an empty view when the run recorded none).
void MainWindow::showViewedStep(int index) {
    TrainingSnapshot snapshot;
    snapshot.stageNames = m_viewedNames;
    std::int64_t shown = 0;
    TrainConfig shownConfig = m_viewedConfig;
    if (m_viewedRecord && index >= 0 && static_cast<std::size_t>(index) < m_scrubSteps.size()) {
        const std::int64_t step = m_scrubSteps[static_cast<std::size_t>(index)];
        std::optional<RecordedStatistics> stats;
        try {
            stats = m_viewedRecord->histogramsAt(step, watchedFormat());
        } catch (const std::exception& e) {
            showError(tr("Cannot read the run"), QString::fromStdString(e.what()));
        }
        if (stats) {
            snapshot.statsStep = step;
            snapshot.stages = stats->stages;
            for (const StepScalars& s : m_viewedHistory)
                if (s.step == step)
                    snapshot.scalars = s;
            // The settings that step ran with (the config's timeline up to it): the policy box,
            // the dock and the bands say what that step used, not what the run started with.
            shownConfig = configAfterSteps(m_viewedConfig, step - 1);
            m_policy->setCurrentIndex( // emits no `activated`: sends nothing anywhere
                m_policy->findData(static_cast<int>(shownConfig.scalingPolicy)));
            if (!(shownConfig.recipe == m_recipeEditor->recipe()))
                m_recipeEditor->setRecipe(shownConfig.recipe);
            // A step newly on show is drawn at the loss scale it was recorded at (a dynamic
            // policy's or a GradScaler's, not the run's first); the slider previews from there.
            if (step != m_viewedStep && snapshot.scalars.scale > 0 &&
                std::isfinite(snapshot.scalars.scale)) {
                const QSignalBlocker block(m_slider);
                m_slider->setLog2Scale(std::log2(snapshot.scalars.scale));
                m_gradientView->setWhatIfScale(snapshot.scalars.scale);
            }
            shown = step;
        }
        m_scrubLabel->setText(tr("histograms of step %1").arg(step));
    }
    m_viewedStep = shown;
    m_gradientView->setSnapshot(snapshot, shownConfig);
}

void MainWindow::showRecordedWhatIf() {
    const TrainingSnapshot& shown = m_gradientView->snapshot();
    const int stage = m_gradientView->stage();
    if (stage < 0 || static_cast<std::size_t>(stage) >= shown.stageNames.size() ||
        shown.stages.empty())
        return; // no recorded step on show yet
    const TensorRole role = m_gradientView->role();
    auto key = std::make_tuple(shown.statsStep, stage, static_cast<int>(role), watchedFormat());
    if (key == m_recordedWhatIfKey)
        return; // a step's rows are committed at once: the table already shows them
    std::vector<FormatOutcome> judged;
    try {
        for (const StatsRow& row :
             m_viewedRecord->tensorRows(shown.statsStep, static_cast<std::size_t>(stage), role))
            judged.push_back(recordedOutcome(row.format, row.blocks > 0, row.counts, row.error));
    } catch (const std::exception& e) {
        showError(tr("Cannot read the run"), QString::fromStdString(e.what()));
        return;
    }
    m_recordedWhatIfKey = std::move(key); // read: a failed read is tried again next time
    m_formatWhatIf->showRecorded(judged, shown.stageNames[static_cast<std::size_t>(stage)], role,
                                 shown.statsStep, watchedFormat());
}

} // namespace plab
