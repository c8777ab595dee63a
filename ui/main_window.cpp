// MainWindow: the window's layout (views, tabs, docks) and its status bar; the detail tab on show.
// Its other rooms: main_window_menus.cpp (menus and toolbar actions), main_window_live_run.cpp
// (the controls that start and reset a run), main_window_open_run.cpp (a past or running
// record on show), main_window_files.cpp (sessions and exports).
#include "main_window.h"

#include "run_steering.h"

#include "util/folder_size.h"

#include "blocks_view.h"
#include "diagnostics_view.h"
#include "flush_heatmap_view.h"
#include "format_what_if_table.h"
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "recipe_editor.h"
#include "record/run_record.h"
#include "stages_overview.h"
#include "time_view.h"
#include "training_controller.h"
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <cmath>

namespace plab {

void MainWindow::showDiagnostics() {
    // Read from the record, at most once a second while a run goes (a query over its rows).
    if (m_diagnosticsClock.isValid() && m_diagnosticsClock.elapsed() < 1000)
        return;
    m_diagnosticsClock.start();
    try {
        if (viewingRecord()) {
            m_diagnostics->show(m_viewed->record(), m_viewed->judgedFormat());
        } else if (!m_controller->runDir().isEmpty()) {
            m_diagnostics->show(RunRecord(m_controller->runDir().toStdString()), {});
        }
    } catch (const std::exception&) {
        // A record not written yet (the run's first step): the next update reads it.
        m_diagnostics->showNothingYet();
        m_diagnosticsClock.invalidate();
    }
}

void MainWindow::updateDetailViews() {
    followRunInAdvise();
    // Only the visible one: the what-if casts a few thousand values through 14 formats.
    // The gradient view holds the run source's step on show and its precision.
    const TrainingSnapshot& s = m_gradientView->snapshot();
    if (m_detailTabs->currentWidget() == m_blocks) {
        m_blocks->show(s, m_gradientView->precision(), m_gradientView->stage(),
                       m_gradientView->role());
    } else if (m_detailTabs->currentWidget() == m_formatWhatIf) {
        try {
            m_formatWhatIf->show(
                m_source->compareFormats(m_gradientView->stage(), m_gradientView->role()));
        } catch (const std::exception& e) { // a record's counts that cannot be read now
            showError(tr("Cannot read the run"), QString::fromStdString(e.what()));
        }
    } else if (m_detailTabs->currentWidget() == m_overviewTab) {
        // Advice colours belong to the run they were computed for.
        if (m_overview->hasAdvice() && m_source->folder() != m_adviceRun)
            m_overview->setAdvice({}, 1);
        m_overview->show(s, m_gradientView->precision(), m_gradientView->role(),
                         m_gradientView->stage());
    } else if (m_detailTabs->currentWidget() == m_diagnostics)
        showDiagnostics();
    // What a text model wrote at its latest evaluation (cheap: only when it changed).
    if (s.sampleStep != m_sampleStep) {
        m_sampleStep = s.sampleStep;
        m_textSample->setPlainText(
            s.sample.empty() ? QString()
                             : tr("After step %1:\n%2")
                                   .arg(s.sampleStep)
                                   .arg(QString::fromLatin1(
                                       s.sample.data(), static_cast<qsizetype>(s.sample.size()))));
    }
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("Precision Lab"));
    setMinimumSize(800, 600); // a small laptop screen; every control stays readable there
    // The window's one timer polls the session (pollRunSource), as it does a record on show.
    m_controller = new TrainingController(this, TrainingController::Polling::ByOwner);
    m_live = std::make_unique<LiveRunSource>(*m_controller);
    m_source = m_live.get();
    m_gradientView = new GradientView(this);
    m_timeView = new TimeView(this);
    m_slider = new LossScaleSlider(this);
    m_heatmap = new FlushHeatmapView(this);
    m_recipeEditor = new RecipeEditor(this);

    QTabWidget* tabs = buildDetailTabs();
    buildCentralArea(tabs);
    buildRecipeDock();
    buildControls();
    buildActions();
    rememberControlTips();
    watchForPendingValues();

    buildStatusBar();
    connectLossScaleSlider();
    connectSession();

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    applySettings();
}

// The tabs under the histogram: the views over time and the step's details.
QTabWidget* MainWindow::buildDetailTabs() {
    m_blocks = new BlocksView(this);
    m_formatWhatIf = new FormatWhatIfTable(this);
    auto* timeTabs = new QTabWidget(this);
    m_detailTabs = timeTabs;
    timeTabs->addTab(m_timeView, tr("Loss and scale"));
    timeTabs->addTab(m_heatmap, tr("Flushed per layer"));
    timeTabs->addTab(m_blocks, tr("Blocks"));
    timeTabs->addTab(m_formatWhatIf, tr("Formats what-if"));
    m_overview = new StagesOverview(this);
    m_overviewTab = new QScrollArea(this);
    m_overviewTab->setWidget(m_overview);
    m_overviewTab->setWidgetResizable(true);
    timeTabs->addTab(m_overviewTab, tr("All layers"));
    timeTabs->setTabToolTip(4, tr("Every stage's histogram for the role shown above: where in "
                                  "the network values flush or saturate. Click one to open it "
                                  "above."));
    m_textSample = new QPlainTextEdit(this);
    m_textSample->setReadOnly(true);
    m_textSample->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_textSample->setPlaceholderText(tr("A text model (the GPT) writes a few lines here at each "
                                        "evaluation"));
    timeTabs->addTab(m_textSample, tr("Text sample"));
    m_diagnostics = new DiagnosticsView(this);
    timeTabs->addTab(m_diagnostics, tr("Diagnostics"));
    timeTabs->setTabToolTip(6, tr("A quantity over training per layer, read from the run's "
                                  "record: amax, kurtosis, signal to quantisation noise, block "
                                  "scale spread"));
    connect(timeTabs, &QTabWidget::currentChanged, this,
            [this] { m_diagnosticsClock.invalidate(); }); // before updateDetailViews (below)
    connect(m_diagnostics, &DiagnosticsView::choiceChanged, this, [this] {
        m_diagnosticsClock.invalidate();
        updateDetailViews();
    });
    connect(m_overview, &StagesOverview::stageClicked, this,
            [this](int stage) { m_gradientView->stageBox()->setCurrentIndex(stage); });
    timeTabs->setTabToolTip(2, tr("The block-scaled cast of the tensor shown above: block "
                                  "scales, dynamic range inside blocks, flushed and saturated "
                                  "blocks"));
    timeTabs->setTabToolTip(3, tr("The tensor shown above in every format and block format, "
                                  "from a sample kept at the last statistics step"));
    connect(m_gradientView, &GradientView::shown, this, &MainWindow::updateDetailViews);
    connect(timeTabs, &QTabWidget::currentChanged, this, &MainWindow::updateDetailViews);
    return timeTabs;
}

// The histogram above the detail tabs, the loss-scale slider and policy box over them, and the
// row a past run's step scrubber and watched format take.
void MainWindow::buildCentralArea(QTabWidget* timeTabs) {
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(m_gradientView);
    splitter->addWidget(timeTabs);
    // Neither pane below its minimum (a small window squeezed the shares line onto the histogram).
    splitter->setChildrenCollapsible(false);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    splitter->setSizes({600, 400}); // 3 : 2 from the start, whatever the panes' size hints
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    m_policy = new QComboBox(this);
    for (const ScalingPolicyInfo& p : kScalingPolicies) {
        m_policy->addItem(QString::fromLatin1(p.name), static_cast<int>(p.policy));
        m_policy->setItemData(m_policy->count() - 1, QString::fromLatin1(p.description),
                              Qt::ToolTipRole);
    }
    m_policy->setToolTip(tr("Scaling policy, switched at the next step"));
    connect(m_policy, &QComboBox::activated, this, [this] {
        const auto policy = static_cast<ScalingPolicy>(m_policy->currentData().toInt());
        if (!sentToRun(m_source->setScalingPolicy(policy, m_slider->scale()),
                       tr("scaling policy %1").arg(QString::fromLatin1(info(policy).name))))
            return;
        // The dock's rows show the overflow the new policy casts with (a script's run: when
        // it answers that it took it, showSteeringReplies).
        if (!m_source->remote())
            m_recipeEditor->setRecipe(m_recipeEditor->recipe(), policy);
    });
    auto* sliderRow = new QHBoxLayout;
    sliderRow->addWidget(m_slider, 1);
    sliderRow->addWidget(m_policy);
    // Shown only while a past run is on show: scrubs its recorded histograms.
    m_scrubLabel = new QLabel(this);
    m_scrub = new QSlider(Qt::Horizontal, this);
    m_scrub->setToolTip(tr("The steps whose histograms the run recorded"));
    m_scrub->setMinimumWidth(200);
    connect(m_scrub, &QSlider::valueChanged, this, &MainWindow::showViewedStep);
    m_scrubLabel->hide();
    m_scrub->hide();
    // The past run's controls in a row of their own: beside them the loss-scale slider
    // collapsed to a bare handle (issue 65 item 28).
    auto* viewRow = new QHBoxLayout;
    viewRow->addWidget(m_scrubLabel);
    viewRow->addWidget(m_scrub, 1);
    // Shown only for a watched PyTorch run: the format its counts are shown in.
    m_watchedFormat = new QComboBox(this);
    m_watchedFormat->setToolTip(tr("The watched run judged every tensor in each of these "
                                   "formats: the one whose counts are shown (for a block "
                                   "format, over FP32's bands: the histogram is of the values "
                                   "before the block scales)"));
    m_watchedFormat->hide();
    connect(m_watchedFormat, &QComboBox::activated, this, [this] {
        if (!m_viewed)
            return;
        m_viewed->setJudgedFormat(m_watchedFormat->currentText().toStdString());
        // The dock shows the format on show.
        const ShownPrecision shown = m_viewed->precisionAt(0);
        m_recipeEditor->setRecipe(shown.recipe, shown.scalingPolicy);
        if (const QString err = refreshViewedRun(); !err.isEmpty())
            showError(tr("Cannot read the run"), err);
    });
    viewRow->addWidget(m_watchedFormat);
    m_pollTimer = new QTimer(this);
    m_pollTimer->setObjectName(QStringLiteral("pollTimer")); // tests wait on its polls
    m_pollTimer->setInterval(m_source->pollIntervalMs());
    connect(m_pollTimer, &QTimer::timeout, this, &MainWindow::pollRunSource);
    m_pollTimer->start();
    layout->addLayout(sliderRow);
    layout->addLayout(viewRow);
    layout->addWidget(splitter, 1);
    setCentralWidget(central);
}

// The precision recipe dock: the recipe the run on show casts with, edited from the next step.
void MainWindow::buildRecipeDock() {
    auto* recipeDock = new QDockWidget(tr("Precision recipe"), this);
    m_recipeDock = recipeDock;
    recipeDock->setObjectName(QStringLiteral("recipeDock"));
    // Scrolls rather than widening the window: at 800 px the rows would not fit beside the view.
    auto* recipeScroll = new QScrollArea(recipeDock);
    recipeScroll->setWidget(m_recipeEditor);
    recipeScroll->setWidgetResizable(true);
    recipeScroll->setFrameShape(QFrame::NoFrame);
    recipeScroll->setMinimumWidth(240);
    recipeDock->setWidget(recipeScroll);
    addDockWidget(Qt::RightDockWidgetArea, recipeDock);
    connect(m_recipeEditor, &RecipeEditor::recipeChanged, this, [this](const PrecisionRecipe& r) {
        if (!sentToRun(m_source->setRecipe(r), tr("the recipe"), tr("Cannot use this recipe")))
            return;
        if (const TrainingSnapshot* s = m_source->snapshot()) // the formats it shows now
            m_gradientView->setSnapshot(*s, m_source->precision());
    });
}

void MainWindow::buildStatusBar() {
    m_status = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setMaximumWidth(220);
    statusBar()->addWidget(m_status, 1);
    m_backend = new QLabel(this);
    m_disk = new QLabel(this);
    statusBar()->addPermanentWidget(m_disk);
    statusBar()->addPermanentWidget(m_backend);
    statusBar()->addPermanentWidget(m_progress);
}

// The slider previews on the histogram as it moves and sends its scale to the run on show (on
// release for a drag).
void MainWindow::connectLossScaleSlider() {
    connect(m_slider, &LossScaleSlider::scaleChanged, this, [this](double scale) {
        m_gradientView->setWhatIfScale(scale); // re-shade now, from the last histogram
        if (!m_source->whyNot().empty()) {
            statusBar()->showMessage(
                tr("Previewing a loss scale of 2^%1 on the recorded histograms: a recorded "
                   "run's training (another process's, if it is live) cannot be changed from "
                   "here")
                    .arg(std::log2(scale), 0, 'f', 2),
                8000);
            return;
        }
        // One drag, one edit (issue 65 item 31: a drag on a paused run wrote an event for each
        // position it passed): while held only a preview, the release sends it. Keys and the
        // wheel move it a step at a time, each an edit.
        if (m_slider->slider()->isSliderDown()) {
            statusBar()->showMessage(
                tr("Release to use a loss scale of 2^%1").arg(std::log2(scale), 0, 'f', 2), 8000);
            return;
        }
        useSliderScale(scale);
    });
    // A drag sends its scale on release, and only when it moved: a click that leaves the handle
    // where it was changes nothing.
    connect(m_slider->slider(), &QSlider::sliderPressed, this,
            [this] { m_scaleAtPress = m_slider->scale(); });
    connect(m_slider->slider(), &QSlider::sliderReleased, this, [this] {
        if (m_slider->scale() != m_scaleAtPress && m_source->whyNot().empty())
            useSliderScale(m_slider->scale());
    });
}

// The app's own session's news, read from its run source.
void MainWindow::connectSession() {
    // The session's news, read from its run source (the window's timer polled it, or a run
    // started).
    connect(m_controller, &TrainingController::snapshotChanged, this, [this] {
        if (const TrainingSnapshot* s = m_live->snapshot()) {
            // A dynamic policy moves the scale itself: the slider follows it (without sending
            // it back), so the axis always shows the scale training uses.
            if (info(m_controller->config().scalingPolicy).adaptsLossScale &&
                s->scalars.scale > 0 && !m_slider->slider()->isSliderDown() &&
                std::fabs(std::log2(s->scalars.scale) - m_slider->log2Scale()) >= 0.25) {
                const QSignalBlocker block(m_slider);
                m_slider->setLog2Scale(std::log2(s->scalars.scale));
                m_gradientView->setWhatIfScale(m_slider->scale());
            }
            m_gradientView->setSnapshot(*s, m_live->precision());
        } else { // a new run, before its first step: nothing of the previous run stays shown
            TrainingSnapshot empty;
            empty.stageNames = m_live->stageNames();
            m_gradientView->setSnapshot(empty, m_live->precision());
            m_heatmap->setColumns({}, empty.stageNames);
            m_timeView->setHistory({});
        }
        updateStatus();
    });
    connect(m_controller, &TrainingController::historyChanged, this, [this] {
        m_timeView->setHistory(m_live->history());
        if (const TrainingSnapshot* s = m_live->snapshot())
            m_heatmap->setColumns(m_live->flushColumns(), s->stageNames);
    });
    connect(m_controller, &TrainingController::stateChanged, this, &MainWindow::updateStatus);
    connect(m_controller, &TrainingController::configChanged, this,
            [this] { showRunSettings(m_controller->config()); });
    connect(m_controller, &TrainingController::errorOccurred, this, [this](const QString& msg) {
        // The advice fits the cause: an overflow the policy cannot recover from, or a failure
        // (the run record's disk, an error) that no loss scale would have avoided.
        const bool diverged = m_controller->state() == SessionState::Diverged;
        showError(tr("Training stopped"),
                  msg + (diverged ? tr("\n\nLower the loss scale, choose a saturating overflow "
                                       "mode or a dynamic policy, or press Reset to start again.")
                                  : tr("\n\nPress Reset to start again.")));
    });
}

MainWindow::~MainWindow() = default;

void MainWindow::showError(const QString& title, const QString& message) {
    if (m_errorSink) {
        *m_errorSink = message;
        return;
    }
    QMessageBox::warning(this, title, message);
}

void MainWindow::updateStatus() {
    if (viewingRecord())
        return; // openRun() wrote the status of the run on show
    const SessionState state = m_controller->state();
    const std::string engine = m_controller->deviceName();
    m_backend->setText(
        engine.empty() || engine == "cpu"
            ? tr("CPU, %1 thread(s)").arg(std::max(1u, m_controller->config().threads))
            : QString::fromStdString(engine));
    m_trainAction->setText(m_controller->wantsRunning() ? tr("Pause") : tr("Train"));
    const TrainingSnapshot* s = m_controller->latest();
    const std::int64_t planned = m_controller->plannedSteps();
    m_progress->setRange(0, static_cast<int>(std::min<std::int64_t>(planned, 1 << 30)));
    m_progress->setValue(s ? static_cast<int>(s->scalars.step) : 0);
    updateDiskUse(); // a new run's (Apply, Reset) from its start, not the last run's size
    if (!s) {
        m_status->setText(tr("Ready: press Train (Space) or Step."));
        return;
    }
    // Throughput over wall time: steps taken in about the last second times the batch. While
    // paused or paced it is what the run gets, not the engine's rate while it steps (that one,
    // s->scalars.samplesPerSecond, is in the tooltip).
    const std::int64_t step = s->scalars.step;
    if (!m_rateClock.isValid() || step < m_rateStep) {
        m_rateClock.start();
        m_rateStep = step;
    } else if (m_rateClock.elapsed() >= 1000) {
        m_samplesPerSecond = static_cast<double>(step - m_rateStep) *
                             m_controller->config().batchSize /
                             (static_cast<double>(m_rateClock.restart()) / 1000.0);
        m_rateStep = step;
    }
    m_status->setToolTip(tr("The engine trains %1 samples/s while it steps (its compute rate; "
                            "the pace and pauses space the steps)")
                             .arg(s->scalars.samplesPerSecond, 0, 'f', 0));
    m_status->setText(tr("%1 · step %2 · epoch %3 · loss %4 · %5 samples/s · %6 scale 2^%7")
                          .arg(QString::fromLatin1(toString(state)))
                          .arg(s->scalars.step)
                          .arg(s->scalars.epoch)
                          .arg(s->scalars.loss, 0, 'f', 4)
                          .arg(m_samplesPerSecond, 0, 'f', 0)
                          .arg(QString::fromLatin1(info(m_controller->config().scalingPolicy).name))
                          .arg(std::log2(s->scalars.scale)));
}

// The disk a person's runs take, in the status bar: this run's record (every second) and the
// runs folder (when a run starts), with a notice once the folder passes kRunsFolderNotice.
void MainWindow::updateDiskUse() {
    const QString run = m_controller->runDir();
    if (run.isEmpty() || (m_diskCheck.isValid() && m_diskCheck.elapsed() < 1000))
        return;
    m_diskCheck.start();
    const std::uint64_t record = runRecordBytes(run.toStdString());
    m_disk->setText(tr("record %1").arg(QString::fromStdString(megabytesText(record))));
    m_disk->setToolTip(tr("This run's record (%1): %2\nAll runs in %3: %4")
                           .arg(run, QString::fromStdString(megabytesText(record)),
                                QFileInfo(run).path(),
                                QString::fromStdString(megabytesText(m_runsFolderBytes))));
}

void MainWindow::resizeEvent(QResizeEvent* event) {
    QMainWindow::resizeEvent(event);
    if (m_runToolbar && m_settingsToolbar) {
        const bool narrow =
            width() < m_runToolbar->sizeHint().width() + m_settingsToolbar->sizeHint().width() + 24;
        if (narrow != toolBarBreak(m_settingsToolbar)) { // a restored layout may hold one
            if (narrow)
                insertToolBarBreak(m_settingsToolbar);
            else
                removeToolBarBreak(m_settingsToolbar);
        }
    }
    if (width() < 1000 && m_recipeDock && m_recipeDock->isVisible() &&
        !m_recipeDock->isFloating() && m_recipeDock->width() > width() / 3)
        resizeDocks({m_recipeDock}, {width() * 3 / 10}, Qt::Horizontal);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

// The slider's scale for the run on show: the steered script's, or the app's own session's
// (training takes it at its next step).
void MainWindow::useSliderScale(double scale) {
    if (!sentToRun(m_source->setLossScale(scale),
                   tr("loss scale 2^%1").arg(std::log2(scale), 0, 'f', 2)))
        return;
    // A scale given to the app's run without one (policy none) made it static: the policy box
    // shows the one training uses.
    if (!m_source->remote())
        m_policy->setCurrentIndex(
            m_policy->findData(static_cast<int>(m_controller->config().scalingPolicy)));
}

} // namespace plab
