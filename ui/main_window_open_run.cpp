// MainWindow showing a run from its record: a past run, or one another process still writes
// (a watched PyTorch run, a CLI train, a sweep's run), followed by polling.
#include "main_window.h"

#include "flush_heatmap_view.h"
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "recipe_editor.h"
#include "record/run_record.h"
#include "run_steering.h"
#include "time_view.h"
#include "training_controller.h"
#include "util/folder_size.h"
#include <QAction>
#include <QComboBox>
#include <QDir>
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

namespace {

// A run's name as the window shows it: a sweep's or comparison's member with its point
// ("fp16-amp/seed-1", issue 65 item 32: "seed-1" named no preset), else its folder's name.
QString runLabel(const QString& dir) {
    const QString path = QFileInfo(dir).absoluteFilePath();
    QDir up(path);
    for (int level = 0; level < 2 && up.cdUp(); ++level)
        if (QFileInfo::exists(up.filePath(QStringLiteral("sweep.json"))))
            return up.relativeFilePath(path);
    return QFileInfo(path).fileName();
}

} // namespace

const std::vector<StepScalars>& MainWindow::viewedHistory() const {
    static const std::vector<StepScalars> none;
    return m_viewed ? m_viewed->steps() : none;
}

QString MainWindow::openRun(const QString& dir) {
    std::unique_ptr<RecordRunSource> source;
    try { // read what is needed to show it before the current run is ended for it
        source = std::make_unique<RecordRunSource>(dir);
    } catch (const std::exception& e) {
        return dir + QStringLiteral(": ") + QString::fromStdString(e.what());
    }
    m_controller->closeSession(); // also when dir is the current run's: its record is now whole
    m_viewed = std::move(source);
    m_source = m_viewed.get();
    try {
        m_viewed->refresh();
    } catch (const std::exception& e) {
        m_viewed.reset();
        m_source = m_live.get();
        return dir + QStringLiteral(": ") + QString::fromStdString(e.what());
    }
    const RecordRunSource& run = *m_viewed;
    {
        const QSignalBlocker block(m_watchedFormat);
        m_watchedFormat->clear();
        for (const std::string& f : run.judgedFormats())
            m_watchedFormat->addItem(QString::fromStdString(f));
        m_watchedFormat->setVisible(run.watched());
    }
    m_viewedStep = 0;
    m_scrubSteps.clear();
    m_offeredRoles.clear();
    m_recipeEditor->setStageNames(run.stageNames());
    TrainConfig controls = run.config();
    if (run.watched()) { // no config: the controls show the judged format, a static scale
        const ShownPrecision judged = run.precisionAt(0);
        controls.recipe = judged.recipe;
        controls.scalingPolicy = judged.scalingPolicy;
        const double last = run.steps().empty() ? 1.0 : run.steps().back().scale;
        controls.lossScale = last > 0 && std::isfinite(last) ? last : 1.0;
    }
    showRunSettings(controls);
    m_recipeEditor->showRecordOnly({});
    if (run.watched()) { // a PyTorch script's run: nothing to replay
        showWatchedRunInControls(tr("watched: %1").arg(QFileInfo(dir).fileName()));
        QStringList judged;
        for (const std::string& f : run.judgedFormats())
            judged << QString::fromStdString(f);
        m_recipeEditor->showRecordOnly(
            tr("<b>A watched run has no recipe.</b> Its script trains in its own precision; the "
               "watcher recorded each module's weights, activations, activation gradients and "
               "weight gradients as they were, judged in %1 (the format box right of the step "
               "slider picks the "
               "one on show). Master weights and optimiser state are not recorded.")
                .arg(judged.join(QStringLiteral(", "))));
    } else if (run.emulated())
        showWatchedRunInControls(tr("emulated: %1").arg(QFileInfo(dir).fileName()));
    else
        showConfigInControls(controls, tr("run: %1").arg(runLabel(dir)));
    showViewedRun();
    m_pollTimer->setInterval(m_source->pollIntervalMs());
    m_pollTimer->start();
    markPendingValues();
    return {};
}

// The one timer's tick: the run on show reads what is new; a record's news are drawn here, the
// session's arrive as the controller's signals.
void MainWindow::pollRunSource() {
    if (m_source != m_viewed.get()) {
        m_source->poll();
        return;
    }
    try {
        if (!m_viewed->poll())
            return; // nothing committed since the last look
    } catch (const std::exception& e) {
        m_pollTimer->stop(); // once: a new run or another record starts it again
        showError(tr("Cannot follow the run"),
                  m_viewed->folder() + QStringLiteral(": ") + QString::fromStdString(e.what()));
        return;
    }
    showViewedRun();
}

QString MainWindow::refreshViewedRun() {
    try {
        m_viewed->refresh();
    } catch (const std::exception& e) {
        return m_viewed->folder() + QStringLiteral(": ") + QString::fromStdString(e.what());
    }
    showViewedRun();
    return {};
}

void MainWindow::showViewedRun() {
    const RecordRunSource& run = *m_viewed;
    if (run.roles() != m_offeredRoles) { // the Tensor box offers what the record holds
        m_offeredRoles = run.roles();
        m_gradientView->setRoles(m_offeredRoles);
    }
    showSteeringReplies(run.replies());
    updateRunControls();
    m_timeView->setHistory(run.history());
    m_heatmap->setColumns(run.flushColumns(), run.stageNames());
    // The gradient view follows the newest recorded step unless the user scrubbed back.
    const bool following = m_scrubSteps.empty() || m_scrub->value() >= m_scrub->maximum();
    const std::int64_t shownStep =
        m_scrubSteps.empty() ? -1 : m_scrubSteps[static_cast<std::size_t>(m_scrub->value())];
    m_scrubSteps = run.histogramSteps();
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
    const RunSummary& summary = run.summary();
    m_progress->setRange(0, 1);
    m_progress->setValue(summary.finished ? 1 : 0);
    const QString dir = run.folder();
    const QString name = QFileInfo(dir).fileName();
    const std::int64_t steps = run.steps().empty() ? 0 : run.steps().back().step;
    // A watched or emulated run has no settings the app could train (its toolbar fields are
    // disabled).
    const QString next =
        run.steering().steerable()
            ? tr("The slider, the policy box, the recipe and Pause / Step steer its script.")
        : run.watched() || run.emulated() ? tr("Pick a preset to train a run of the app's own.")
                                          : tr("Apply starts a new run from its settings.");
    if (run.live())
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
}

// The run's statistics step at `index` of the recorded histogram steps, in the gradient view
// (an empty view when the run recorded none).
void MainWindow::showViewedStep(int index) {
    if (!m_viewed)
        return;
    std::int64_t shown = 0;
    if (index >= 0 && static_cast<std::size_t>(index) < m_scrubSteps.size()) {
        const std::int64_t step = m_scrubSteps[static_cast<std::size_t>(index)];
        try {
            m_viewed->showStep(step);
        } catch (const std::exception& e) {
            showError(tr("Cannot read the run"), QString::fromStdString(e.what()));
        }
        const TrainingSnapshot& snapshot = *m_viewed->snapshot();
        if (snapshot.statsStep == step) { // recorded
            // The settings that step ran with (the config's timeline up to it): the policy box,
            // the dock and the bands say what that step used, not what the run started with.
            const ShownPrecision used = m_viewed->precision();
            m_policy->setCurrentIndex( // emits no `activated`: sends nothing anywhere
                m_policy->findData(static_cast<int>(used.scalingPolicy)));
            if (!(used.recipe == m_recipeEditor->recipe()) ||
                used.scalingPolicy != m_recipeEditor->runScaling())
                m_recipeEditor->setRecipe(used.recipe, used.scalingPolicy);
            // A step newly on show is drawn at the loss scale it was recorded at (a dynamic
            // policy's or a GradScaler's, not the run's first); the slider previews from there.
            // A held slider is left alone (issue 65 item 27: the refresh of a live run snapped
            // a slow drag back, and its release sent nothing).
            if (step != m_viewedStep && snapshot.scalars.scale > 0 &&
                std::isfinite(snapshot.scalars.scale) && !m_slider->slider()->isSliderDown()) {
                const QSignalBlocker block(m_slider);
                m_slider->setLog2Scale(std::log2(snapshot.scalars.scale));
                m_gradientView->setWhatIfScale(snapshot.scalars.scale);
            }
            shown = step;
        }
        m_scrubLabel->setText(tr("histograms of step %1").arg(step));
    } else {
        m_viewed->showNoStep();
    }
    m_viewedStep = shown;
    m_gradientView->setSnapshot(*m_viewed->snapshot(), m_viewed->precision());
}

} // namespace plab
