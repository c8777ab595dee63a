// MainWindow layout and wiring.
#include "main_window.h"

#include "data/text_corpus.h"

#include "device/compute_backend.h"
#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "record/run_export.h"
#include "record/run_record.h"

#include "blocks_view.h"
#include "compare_dialog.h"
#include "flush_heatmap_view.h"
#include "format_inspector.h"
#include "format_what_if_table.h"
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "plot_export.h"
#include "recipe_editor.h"
#include "run_folders.h"
#include "stages_overview.h"
#include "time_view.h"
#include "training_controller.h"

#include <qcustomplot.h>

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QVBoxLayout>

#include <cmath>
#include <filesystem>

namespace plab {

namespace {

// What the views need to draw a watched PyTorch run judged in `format`: every role in that
// format, a static loss scale so that the slider's preview moves the gradients' histograms. The
// run itself has no config that replays it. A block format's element bands would not fit the
// recorded histogram (of the values before the block scales), so its view has FP32's bands and
// the block cast's own counts in the shares line.
TrainConfig watchedRunDisplayConfig(const std::string& format, double scale) {
    TrainConfig config;
    const QuantConfig q = QuantConfig::forFormat(
        parseFormat(findBlockFormat(format) != nullptr ? std::string("fp32") : format));
    for (QuantConfig& role : config.recipe.roles)
        role = q;
    config.scalingPolicy = ScalingPolicy::Static;
    config.lossScale = scale > 0 && std::isfinite(scale) ? scale : 1.0;
    return config;
}

std::uint64_t bytesUnder(const std::filesystem::path& dir) {
    std::uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec))
            total += it->file_size(ec);
    return total;
}

QString megabytes(std::uint64_t bytes) {
    return QString::number(static_cast<double>(bytes) / (1024.0 * 1024.0), 'f', 1) +
           QStringLiteral(" MB");
}

} // namespace

void MainWindow::updateDetailViews() {
    // Only the visible one: the what-if casts a few thousand values through 14 formats.
    const TrainingSnapshot& s = m_gradientView->snapshot();
    if (m_detailTabs->currentWidget() == m_blocks)
        m_blocks->show(s, m_gradientView->config(), m_gradientView->stage(),
                       m_gradientView->role());
    else if (m_detailTabs->currentWidget() == m_formatWhatIf)
        m_formatWhatIf->show(s, m_gradientView->config(), m_gradientView->stage(),
                             m_gradientView->role());
    else if (m_detailTabs->currentWidget() == m_overviewTab)
        m_overview->show(s, m_gradientView->config(), m_gradientView->role(),
                         m_gradientView->stage());
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
    setMinimumSize(900, 620);
    m_controller = new TrainingController(this);
    m_gradientView = new GradientView(this);
    m_timeView = new TimeView(this);
    m_slider = new LossScaleSlider(this);
    m_heatmap = new FlushHeatmapView(this);
    m_recipeEditor = new RecipeEditor(this);

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
    connect(m_overview, &StagesOverview::stageClicked, this,
            [this](int stage) { m_gradientView->stageBox()->setCurrentIndex(stage); });
    timeTabs->setTabToolTip(2, tr("The block-scaled cast of the tensor shown above: block "
                                  "scales, dynamic range inside blocks, flushed and saturated "
                                  "blocks"));
    timeTabs->setTabToolTip(3, tr("The tensor shown above in every format and block format, "
                                  "from a sample kept at the last statistics step"));
    connect(m_gradientView, &GradientView::shown, this, &MainWindow::updateDetailViews);
    connect(timeTabs, &QTabWidget::currentChanged, this, &MainWindow::updateDetailViews);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(m_gradientView);
    splitter->addWidget(timeTabs);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
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
        m_controller->setScalingPolicy(static_cast<ScalingPolicy>(m_policy->currentData().toInt()),
                                       m_slider->scale());
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
    sliderRow->addWidget(m_scrubLabel);
    sliderRow->addWidget(m_scrub);
    // Shown only for a watched PyTorch run: the format its counts are shown in.
    m_watchedFormat = new QComboBox(this);
    m_watchedFormat->setToolTip(tr("The watched run judged every tensor in each of these "
                                   "formats: the one whose counts are shown (for a block "
                                   "format, over FP32's bands: the histogram is of the values "
                                   "before the block scales)"));
    m_watchedFormat->hide();
    connect(m_watchedFormat, &QComboBox::activated, this, [this] {
        m_viewedConfig = watchedRunDisplayConfig(watchedFormat(), m_viewedConfig.lossScale);
        m_viewedVersion = -1; // read it all again, in the chosen format
        m_viewedColumns.clear();
        m_viewedStatsSeq = 0;
        if (const QString err = refreshViewedRun(); !err.isEmpty())
            showError(tr("Cannot read the run"), err);
    });
    sliderRow->addWidget(m_watchedFormat);
    m_followTimer = new QTimer(this);
    m_followTimer->setInterval(kFollowMs);
    connect(m_followTimer, &QTimer::timeout, this, &MainWindow::pollViewedRun);
    layout->addLayout(sliderRow);
    layout->addWidget(splitter, 1);
    setCentralWidget(central);

    auto* recipeDock = new QDockWidget(tr("Precision recipe"), this);
    recipeDock->setObjectName(QStringLiteral("recipeDock"));
    recipeDock->setWidget(m_recipeEditor);
    addDockWidget(Qt::RightDockWidgetArea, recipeDock);
    connect(m_recipeEditor, &RecipeEditor::recipeChanged, this, [this](const PrecisionRecipe& r) {
        if (const QString error = m_controller->setRecipe(r); !error.isEmpty()) { // next step
            showError(tr("Cannot use this recipe"), error);
            return;
        }
        if (const TrainingSnapshot* s = m_controller->latest())
            m_gradientView->setSnapshot(*s, m_controller->config());
    });

    buildControls();
    buildActions();

    m_status = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setMaximumWidth(220);
    statusBar()->addWidget(m_status, 1);
    m_backend = new QLabel(this);
    m_disk = new QLabel(this);
    statusBar()->addPermanentWidget(m_disk);
    statusBar()->addPermanentWidget(m_backend);
    statusBar()->addPermanentWidget(m_progress);

    connect(m_slider, &LossScaleSlider::scaleChanged, this, [this](double scale) {
        m_gradientView->setWhatIfScale(scale); // re-shade now, from the last histogram
        if (!m_controller->hasSession() && !m_viewedRun.isEmpty()) {
            statusBar()->showMessage(
                tr("Previewing a loss scale of 2^%1 on the recorded histograms: a recorded "
                   "run's training (another process's, if it is live) cannot be changed from "
                   "here")
                    .arg(std::log2(scale), 0, 'f', 2),
                8000);
            return;
        }
        // Policy `none` means a loss scale of 1: a scale chosen on the slider makes the run
        // static (recorded as a policy change), so the policy shown stays the one training uses.
        if (m_controller->config().scalingPolicy == ScalingPolicy::None) {
            m_policy->setCurrentIndex(m_policy->findData(static_cast<int>(ScalingPolicy::Static)));
            m_controller->setScalingPolicy(ScalingPolicy::Static, scale);
            return;
        }
        m_controller->setLossScale(scale); // training takes it at the next step
    });
    connect(m_controller, &TrainingController::snapshotChanged, this, [this] {
        if (const TrainingSnapshot* s = m_controller->latest()) {
            // A dynamic policy moves the scale itself: the slider follows it (without sending
            // it back), so the axis always shows the scale training uses.
            if (info(m_controller->config().scalingPolicy).adaptsLossScale &&
                s->scalars.scale > 0 &&
                std::fabs(std::log2(s->scalars.scale) - m_slider->log2Scale()) >= 0.25) {
                const QSignalBlocker block(m_slider);
                m_slider->setLog2Scale(std::log2(s->scalars.scale));
                m_gradientView->setWhatIfScale(m_slider->scale());
            }
            m_gradientView->setSnapshot(*s, m_controller->config());
        } else { // a new run, before its first step: nothing of the previous run stays shown
            TrainingSnapshot empty;
            empty.stageNames = m_controller->stageNames();
            m_gradientView->setSnapshot(empty, m_controller->config());
            m_heatmap->setColumns({}, empty.stageNames);
            m_timeView->setHistory({});
        }
        updateStatus();
    });
    connect(m_controller, &TrainingController::historyChanged, this, [this] {
        m_timeView->setHistory(m_controller->history());
        if (const TrainingSnapshot* s = m_controller->latest())
            m_heatmap->setColumns(m_controller->flushHistory(), s->stageNames);
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

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    applySettings();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildActions() {
    auto* toolbar = addToolBar(tr("Run"));
    toolbar->setObjectName(QStringLiteral("runToolbar"));
    m_trainAction = toolbar->addAction(tr("Train"));
    m_trainAction->setShortcut(Qt::Key_Space);
    m_trainAction->setToolTip(tr("Train / pause (Space)"));
    connect(m_trainAction, &QAction::triggered, this, [this] {
        m_controller->toggleTraining();
        updateStatus();
    });
    m_stepAction = toolbar->addAction(tr("Step"));
    m_stepAction->setShortcut(Qt::Key_S);
    m_stepAction->setToolTip(tr("One training step, then pause (S)"));
    connect(m_stepAction, &QAction::triggered, m_controller, &TrainingController::step);
    m_resetAction = toolbar->addAction(tr("Reset"));
    m_resetAction->setToolTip(
        tr("Fresh weights from the seed, step 0: a new run, with the edits made so far"));
    connect(m_resetAction, &QAction::triggered, this, &MainWindow::resetRun);
    toolbar->addSeparator();
    for (QWidget* w : {static_cast<QWidget*>(m_preset), static_cast<QWidget*>(m_model),
                       static_cast<QWidget*>(m_data)})
        toolbar->addWidget(w);
    toolbar->addWidget(new QLabel(tr(" seed "), this));
    toolbar->addWidget(m_seed);
    toolbar->addWidget(new QLabel(tr(" lr "), this));
    toolbar->addWidget(m_lr);
    toolbar->addWidget(new QLabel(tr(" steps "), this));
    toolbar->addWidget(m_steps);
    toolbar->addWidget(m_device);
    toolbar->addWidget(m_pace);
    m_applyAction = toolbar->addAction(tr("Apply"));
    m_applyAction->setToolTip(tr("Start a new run with these settings (Ctrl+Return)"));
    m_applyAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    connect(m_applyAction, &QAction::triggered, this, [this] { applySettings(); });

    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open session…"), QKeySequence::Open, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open session"), {}, tr("Session (*.json)"));
        if (path.isEmpty())
            return;
        if (const QString err = loadSession(path); !err.isEmpty())
            showError(tr("Cannot open the session"), err);
    });
    file->addAction(tr("Open r&un…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(
            this, tr("Open a run folder (holds run.sqlite)"),
            QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                QStringLiteral("/runs"));
        if (dir.isEmpty())
            return;
        if (const QString err = openRun(dir); !err.isEmpty())
            showError(tr("Cannot open the run"), err);
    });
    m_recentMenu = file->addMenu(tr("Open &recent"));
    rebuildRecentMenu();
    file->addAction(tr("&Save session…"), QKeySequence::Save, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Save session"), QStringLiteral("session.json"), tr("Session (*.json)"));
        if (path.isEmpty())
            return;
        if (const QString err = saveSession(path); !err.isEmpty())
            showError(tr("Cannot save the session"), err);
    });
    file->addSeparator();
    m_exportAction = file->addAction(tr("&Export plots…"));
    m_exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(m_exportAction, &QAction::triggered, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plots to"));
        if (dir.isEmpty())
            return;
        if (const QString err = exportPlots(dir); !err.isEmpty())
            showError(tr("Export failed"), err);
        else
            statusBar()->showMessage(tr("Plots written to %1").arg(dir), 5000);
    });
    file->addAction(tr("Export &report…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Write the report into"));
        if (dir.isEmpty())
            return;
        if (const QString err = exportReport(dir); !err.isEmpty())
            showError(tr("Export failed"), err);
        else
            statusBar()->showMessage(tr("Report written to %1").arg(dir), 5000);
    });
    file->addAction(tr("Open run &folder"), this, [this] {
        QDesktopServices::openUrl(QUrl::fromLocalFile(m_controller->runDir()));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    auto* tools = menuBar()->addMenu(tr("&Tools"));
    tools->addAction(tr("&Format inspector…"), QKeySequence(Qt::CTRL | Qt::Key_I), this,
                     [this] { formatInspector()->show(); });
    tools->addAction(tr("&Compare presets…"), this, [this] {
        auto* dialog = new CompareDialog(m_controller->config(), this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
    });
    auto* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Precision Lab"), this, [this] {
        QMessageBox::about(this, tr("About Precision Lab"),
                           tr("<b>Precision Lab</b> 0.1<br>Watch what low-precision number formats "
                              "do to training, live.<br><br>Implements mixed precision training "
                              "(Micikevicius et al., ICLR 2018), 8-bit floating-point training "
                              "(Mellempudi et al., 2019) and per-layer gradient scaling (Zhao et "
                              "al., IJCAI 2020)."));
    });
}

void MainWindow::buildControls() {
    m_preset = new QComboBox(this);
    for (const Preset& p : presets())
        m_preset->addItem(QString::fromStdString(p.name));
    m_preset->setCurrentText(QStringLiteral("fp16-noscale"));
    m_preset->setToolTip(tr("Precision recipe preset"));
    for (int i = 0; i < m_preset->count(); ++i)
        m_preset->setItemData(
            i, QString::fromStdString(presets()[static_cast<std::size_t>(i)].description),
            Qt::ToolTipRole);
    m_model = new QComboBox(this);
    m_model->addItem(tr("MLP 256-256"), QStringLiteral("mlp"));
    m_model->addItem(tr("Small CNN"), QStringLiteral("cnn"));
    m_model->addItem(tr("GPT on text"), QStringLiteral("gpt"));
    m_model->setItemData(2,
                         tr("The tiny byte-level GPT (2 blocks, width 128, context 64) trained "
                            "with AdamW on text"),
                         Qt::ToolTipRole);
    m_model->setToolTip(tr("Network"));
    m_data = new QComboBox(this);
    fillDataChoices();
    // Each network comes with the learning rate that suits it (the CNN does not learn at 0.05)
    // and the data it reads (images or text).
    // Only the box: the learning rate of the run on show changes at Apply (a live edit of the
    // box itself still goes to the run at once).
    connect(m_model, &QComboBox::currentIndexChanged, this, [this] {
        const QSignalBlocker toolbarOnly(m_lr);
        m_lr->setValue(defaultLearningRate(m_model->currentData().toString().toStdString()));
        fillDataChoices();
    });
    connect(m_data, &QComboBox::activated, this, [this](int index) {
        const QString choice = m_data->itemData(index).toString();
        if (choice == QLatin1String("dir"))
            chooseDataDirectory();
        else if (choice == QLatin1String("text-file"))
            chooseTextFile();
    });
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1 << 30);
    m_seed->setValue(1);
    m_lr = new QDoubleSpinBox(this);
    m_lr->setDecimals(4);
    m_lr->setRange(0.0001, 10.0);
    m_lr->setSingleStep(0.01);
    m_lr->setValue(0.05);
    connect(m_lr, &QDoubleSpinBox::valueChanged, m_controller,
            &TrainingController::setLearningRate);
    // Devices: auto, cpu, and each GPU the backend reports (usable or not: choosing an unusable
    // one shows why in the status bar, as the CLI does).
    m_device = new QComboBox(this);
    m_device->addItem(tr("auto"), QStringLiteral("auto"));
    m_device->addItem(tr("CPU"), QStringLiteral("cpu"));
    for (const DeviceReport& r : deviceReports())
        for (const DeviceInfo& d : r.devices)
            m_device->addItem(
                QStringLiteral("cuda:%1 %2").arg(d.index).arg(QString::fromStdString(d.name)),
                QStringLiteral("cuda:%1").arg(d.index));
    m_device->setToolTip(tr("Where to train: auto takes a usable GPU when there is one"));
    m_steps = new QSpinBox(this);
    m_steps->setRange(1, 10000000);
    m_steps->setValue(5000);
    // Pace: the demo trains ~200 steps/s at full speed, too fast to watch the first steps or
    // to pause where the first session (README) says; 50 steps/s leaves time to look.
    m_pace = new QComboBox(this);
    for (const auto& [label, pace] :
         {std::pair{tr("full speed"), 0.0}, std::pair{tr("500 steps/s"), 500.0},
          std::pair{tr("50 steps/s"), 50.0}, std::pair{tr("10 steps/s"), 10.0},
          std::pair{tr("2 steps/s"), 2.0}})
        m_pace->addItem(label, pace);
    m_pace->setToolTip(tr("Training pace, for watching live (results do not depend on it)"));
    connect(m_pace, &QComboBox::currentIndexChanged, this,
            [this] { m_controller->setPace(m_pace->currentData().toDouble()); });
    m_pace->setCurrentIndex(m_pace->findData(kDefaultPace));
}

// The data the chosen network reads: images for the MLP and the CNN, text for the GPT; sources
// whose Debian package is missing are shown but disabled, with the package named.
void MainWindow::fillDataChoices() {
    const bool text = m_model->currentData().toString() == QLatin1String("gpt");
    const QSignalBlocker block(m_data);
    m_data->clear();
    const auto addPackaged = [this](const QString& label, const QString& source, const char* path,
                                    const QString& package) {
        m_data->addItem(label, source);
        const int i = m_data->count() - 1;
        if (!QFileInfo::exists(QString::fromLatin1(path)))
            m_data->setItemData(i, false, Qt::UserRole - 1); // disabled: not installed
        m_data->setItemData(i, tr("Debian package %1").arg(package), Qt::ToolTipRole);
    };
    if (text) {
        m_data->addItem(tr("Built-in text"), QStringLiteral("synthetic"));
        m_data->setItemData(0,
                            tr("A made-up language generated from the seed: words, successors, "
                               "sentences (a bigram model reaches 3.41 bits/byte)"),
                            Qt::ToolTipRole);
        addPackaged(tr("Fortunes"), QStringLiteral("fortunes"), kFortunesDir,
                    QStringLiteral("fortunes"));
        m_data->addItem(tr("Text file…"), QStringLiteral("text-file"));
    } else {
        m_data->addItem(tr("Built-in data"), QStringLiteral("synthetic"));
        addPackaged(tr("Fashion-MNIST"), QStringLiteral("fashion-mnist"), kFashionMnistDir,
                    QStringLiteral("dataset-fashion-mnist"));
        m_data->addItem(tr("Directory…"), QStringLiteral("dir"));
    }
}

void MainWindow::chooseTextFile() {
    const QString file = QFileDialog::getOpenFileName(this, tr("Text to train the GPT on"));
    if (!file.isEmpty())
        m_textFile = file;
}

void MainWindow::chooseDataDirectory() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Directory with IDX files"));
    if (!dir.isEmpty())
        m_dataDir = dir;
}

TrainConfig MainWindow::configFromControls(QString* error) const {
    // An opened session is an entry of the preset box holding its whole config: Apply starts
    // from it (with the toolbar's values), not from the preset the box showed before.
    const QVariant session = m_preset->currentData(kSessionConfigRole);
    nlohmann::json j = session.isValid() ? nlohmann::json::parse(session.toString().toStdString())
                                         : findPreset(m_preset->currentText().toStdString()).json;
    j["seed"] = m_seed->value();
    if (!session.isValid())
        j["threads"] = 1;
    j["model"]["type"] = m_model->currentData().toString().toStdString();
    QString source = m_data->currentData().toString();
    if (source == QLatin1String("dir"))
        source = m_dataDir;
    else if (source == QLatin1String("text-file"))
        source = QStringLiteral("text:") + m_textFile;
    j["data"]["source"] = source.toStdString();
    j["train"]["lr"] = m_lr->value();
    j["train"]["steps"] = m_steps->value();
    j["device"] = m_device->currentData().toString().toStdString();
    try {
        return configFromJson(j);
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return {};
    }
}

QString MainWindow::applySettings() {
    QString error;
    const TrainConfig config = configFromControls(&error);
    if (error.isEmpty())
        error = startRun(config);
    if (!error.isEmpty())
        showError(tr("Cannot start this run"), error);
    return error;
}

// Reset starts a new run, in its own folder, from the run's config with every edit made so far:
// a run folder holds one attempt, so that its exports, summary, config.json and Open run agree
// (one folder holding a 443-step attempt and then steps 1, 2, ... again misled all four).
QString MainWindow::resetRun() {
    if (!m_controller->hasSession())
        return {};
    TrainConfig config = m_controller->effectiveConfig();
    config.timeline.clear(); // the edits are in its settings from step 0
    const QString error = startRun(config);
    if (!error.isEmpty())
        showError(tr("Cannot reset the run"), error);
    return error;
}

QString MainWindow::startRun(const TrainConfig& config) {
    m_viewedRun.clear();
    m_followTimer->stop();
    m_viewedRecord.reset();
    m_viewedLive = false;
    m_watchedFormat->hide();
    m_scrub->hide();
    m_scrubLabel->hide();
    // Every run keeps its record: say when they add up.
    const QString runsFolder =
        QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
        QStringLiteral("/runs");
    m_runsFolderBytes = bytesUnder(runsFolder.toStdString());
    if (m_runsFolderBytes > kRunsFolderNotice)
        statusBar()->showMessage(
            tr("The runs folder %1 holds %2: File > Open run folder to tidy it up.")
                .arg(runsFolder, megabytes(m_runsFolderBytes)),
            15000);
    m_diskCheck.invalidate();
    m_rateClock.invalidate();
    m_samplesPerSecond = 0.0;
    // Every GUI run logs like a CLI run, under the user's data folder.
    const QString runDir = newTimestampedFolder(runsFolder, QString());
    if (const QString error = m_controller->configure(config, runDir); !error.isEmpty())
        return error;
    showDeviceChoice(config);
    showRunSettings(config);
    updateStatus();
    return {};
}

// The settings a run can change while it goes (recipe, policy, scale, learning rate), shown
// without sending them back to the run.
void MainWindow::showRunSettings(const TrainConfig& config) {
    m_recipeEditor->setRecipe(config.recipe);
    m_policy->setCurrentIndex(m_policy->findData(static_cast<int>(config.scalingPolicy)));
    const QSignalBlocker block(m_slider), blockLr(m_lr);
    m_slider->setLog2Scale(std::log2(config.lossScale));
    m_gradientView->setWhatIfScale(m_slider->scale());
    m_lr->setValue(config.learningRate);
}

void MainWindow::showDeviceChoice(const TrainConfig& config) {
    // The status label names the engine the session runs on; its tooltip says what the choice
    // resolved to, why (the fallback notice) and what the machine offers, like
    // `precision-lab-cli devices`.
    const DeviceChoice choice = resolveDevice(parseDeviceSpec(config.device));
    QString devices;
    for (const DeviceReport& r : deviceReports())
        devices += QStringLiteral("%1: %2\n")
                       .arg(QString::fromStdString(r.backend), QString::fromStdString(r.summary));
    QString text =
        tr("Device %1: %2")
            .arg(QString::fromStdString(config.device), QString::fromStdString(choice.label));
    m_deviceNotice = QString::fromStdString(choice.notice);
    m_backend->setToolTip(
        (m_deviceNotice.isEmpty() ? text : text + QLatin1Char('\n') + m_deviceNotice) +
        QLatin1Char('\n') + devices.trimmed());
}

void MainWindow::showConfigInControls(const TrainConfig& config, const QString& label) {
    const QSignalBlocker b1(m_seed), b2(m_lr), b3(m_steps), b4(m_model), b5(m_preset), b6(m_data);
    // The preset box shows the session (its last entry), so Apply keeps what was opened.
    if (const int last = m_preset->count() - 1;
        m_preset->itemData(last, kSessionConfigRole).isValid())
        m_preset->removeItem(last);
    TrainConfig start = config;
    start.timeline.clear(); // Apply starts a new run from the settings, without the edits
    m_preset->addItem(label);
    m_preset->setItemData(m_preset->count() - 1, QString::fromStdString(start.toJson().dump()),
                          kSessionConfigRole);
    m_preset->setCurrentIndex(m_preset->count() - 1);
    m_model->setCurrentIndex(
        std::max(0, m_model->findData(QString::fromStdString(config.model.type))));
    fillDataChoices();
    const QString dataSource = QString::fromStdString(config.dataSource);
    const int source = m_data->findData(dataSource);
    if (source >= 0) {
        m_data->setCurrentIndex(source);
    } else if (dataSource.startsWith(QLatin1String("text:"))) {
        m_textFile = dataSource.mid(5);
        m_data->setCurrentIndex(m_data->findData(QStringLiteral("text-file")));
    } else {
        m_dataDir = dataSource;
        m_data->setCurrentIndex(m_data->findData(QStringLiteral("dir")));
    }
    m_seed->setValue(static_cast<int>(config.seed));
    m_lr->setValue(config.learningRate);
    if (config.steps > 0)
        m_steps->setValue(
            static_cast<int>(std::min<std::int64_t>(config.steps, m_steps->maximum())));
    const int device = m_device->findData(QString::fromStdString(config.device));
    if (device >= 0)
        m_device->setCurrentIndex(device);
}

// plot_export.h's writeWholeFile, for text: the file whole or as it was, errors with the
// system's reason.
QString MainWindow::writeWholeFile(const QString& path, const std::string& text) {
    return plab::writeWholeFile(path, QByteArray::fromStdString(text));
}

QString MainWindow::saveSession(const QString& path) {
    // The start and the timeline of edits, not the state now: a dynamic policy's scale at the
    // end of the run is not the scale it started from.
    const std::string text = m_controller->replayConfig().toJson().dump(2) + "\n";
    if (const QString error = writeWholeFile(path, text); !error.isEmpty())
        return error;
    rememberRecentFile(path);
    return {};
}

QString MainWindow::loadSession(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return tr("%1: cannot open (%2)").arg(path, f.errorString());
    const QByteArray bytes = f.readAll();
    TrainConfig config;
    nlohmann::json document;
    try {
        document = parseConfigText(bytes.toStdString(), path.toStdString()); // names the file
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    try {
        config = configFromJson(document);
    } catch (const std::exception& e) {
        return path + QStringLiteral(": ") + QString::fromUtf8(e.what());
    }
    if (const QString error = startRun(config); !error.isEmpty())
        return error;
    showConfigInControls(config, tr("session: %1").arg(QFileInfo(path).fileName()));
    rememberRecentFile(path);
    return {};
}

QString MainWindow::openRun(const QString& dir) {
    std::unique_ptr<RunRecord> record;
    TrainConfig config;
    try { // read what is needed to show it before the current run is ended for it
        record = std::make_unique<RunRecord>(dir.toStdString());
        if (record->judgesSeveralFormats()) {
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
    m_viewedVersion = -1;
    m_viewedStep = 0;
    m_viewedColumns.clear();
    m_viewedStatsSeq = 0;
    m_scrubSteps.clear();
    showRunSettings(config);
    showConfigInControls(config, tr("run: %1").arg(QFileInfo(dir).fileName()));
    if (const QString err = refreshViewedRun(); !err.isEmpty()) {
        m_viewedRecord.reset();
        return err;
    }
    m_followTimer->start();
    return {};
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
    } catch (const std::exception& e) {
        return dir + QStringLiteral(": ") + QString::fromStdString(e.what());
    }
    m_viewedLive = live;
    m_viewedHistory = history;
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
    if (live)
        m_status->setText(tr("Following run %1 (live: another process is writing it), %2 steps "
                             "so far. Apply starts a new run of the app's own.")
                              .arg(name)
                              .arg(steps));
    else
        m_status->setText(tr("Viewing run %1 (ended: %2), %3 steps. Apply starts a new run from "
                             "its settings.")
                              .arg(name, QString::fromStdString(summary.stopReason))
                              .arg(steps));
    m_status->setToolTip(dir);
    m_disk->setText(tr("record %1").arg(megabytes(runRecordBytes(dir.toStdString()))));
    m_disk->setToolTip(dir);
    return {};
}

// The run's statistics step at `index` of the recorded histogram steps, in the gradient view
// (an empty view when the run recorded none).
void MainWindow::showViewedStep(int index) {
    TrainingSnapshot snapshot;
    snapshot.stageNames = m_viewedNames;
    std::int64_t shown = 0;
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
    m_gradientView->setSnapshot(snapshot, m_viewedConfig);
}

void MainWindow::rememberRecentFile(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentSessions")).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > 8)
        recent.removeLast();
    settings.setValue(QStringLiteral("recentSessions"), recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    if (!m_recentMenu)
        return;
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recentSessions")).toStringList();
    for (const QString& path : recent)
        m_recentMenu->addAction(path, this, [this, path] {
            if (const QString err = loadSession(path); !err.isEmpty())
                showError(tr("Cannot open the session"), err);
        });
    m_recentMenu->setEnabled(!recent.isEmpty());
}

FormatInspector* MainWindow::formatInspector() {
    if (!m_inspector)
        m_inspector = new FormatInspector(this);
    return m_inspector;
}

QString MainWindow::exportReport(const QString& dir) {
    if (const QString error = exportPlots(dir); !error.isEmpty())
        return error;
    if (const QString error = saveSession(dir + QStringLiteral("/config.json")); !error.isEmpty())
        return error;
    const TrainingSnapshot* s = m_controller->latest();
    nlohmann::json summary = {{"run_directory", m_controller->runDir().toStdString()},
                              {"state", toString(m_controller->state())}};
    if (s) {
        summary["step"] = s->scalars.step;
        summary["epoch"] = s->scalars.epoch;
        summary["loss"] = s->scalars.loss;
        summary["loss_scale"] = s->scalars.scale;
        nlohmann::json layers = nlohmann::json::array();
        for (std::size_t i = 0; i < s->stages.size(); ++i) {
            nlohmann::json roles;
            for (TensorRole r : kAllRoles) {
                const QuantStats& q = s->stages[i].role(r);
                roles[std::string(toString(r))] = {{"zero", q.fraction(QuantClass::Zero)},
                                                   {"flushed", q.flushedShare()},
                                                   {"subnormal", q.fraction(QuantClass::Subnormal)},
                                                   {"overflow", q.fraction(QuantClass::Overflow)},
                                                   {"amax", q.amax}};
            }
            layers.push_back({{"name", s->stageNames[i]},
                              {"lost_updates", s->stages[i].lostUpdateFraction()},
                              {"roles", roles}});
        }
        summary["layers"] = layers;
    }
    if (const QString error =
            writeWholeFile(dir + QStringLiteral("/summary.json"), summary.dump(2) + "\n");
        !error.isEmpty())
        return error;
    // The run's record as CSV/JSONL, as far as the run has gone.
    if (!m_controller->runDir().isEmpty()) {
        try {
            exportRunRecord(m_controller->runDir().toStdString(), dir.toStdString());
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
    }
    return {};
}

QString MainWindow::exportPlots(const QString& dir) {
    std::error_code ec; // QDir::mkpath says only that it failed; this says why
    if (!std::filesystem::create_directories(dir.toStdString(), ec) && ec)
        return tr("%1: cannot create the folder (%2)")
            .arg(dir, QString::fromStdString(ec.message()));
    const std::pair<QCustomPlot*, QString> plots[] = {
        {m_gradientView->plot(), QStringLiteral("gradients")},
        {m_timeView->plot(), QStringLiteral("training")},
        {m_heatmap->plot(), QStringLiteral("flushed_per_layer")}};
    for (const auto& [plot, name] : plots)
        if (const QString error =
                exportPlot(plot, dir + QLatin1Char('/') + name, std::max(plot->width(), 800),
                           std::max(plot->height(), 400));
            !error.isEmpty())
            return error;
    return {};
}

void MainWindow::showError(const QString& title, const QString& message) {
    if (m_errorSink) {
        *m_errorSink = message;
        return;
    }
    QMessageBox::warning(this, title, message);
}

void MainWindow::updateStatus() {
    if (!m_controller->hasSession() && !m_viewedRun.isEmpty())
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
    m_disk->setText(tr("record %1").arg(megabytes(record)));
    m_disk->setToolTip(
        tr("This run's record (%1): %2\nAll runs in %3: %4")
            .arg(run, megabytes(record), QFileInfo(run).path(), megabytes(m_runsFolderBytes)));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

} // namespace plab
