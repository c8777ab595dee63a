// MainWindow's live run: the toolbar controls (preset, network, data, seed, lr, steps, device,
// pace), the config they make, and Apply / Reset, each starting a run in a new run folder.
#include "main_window.h"

#include "util/folder_size.h"

#include "data/text_corpus.h"
#include "device/compute_backend.h"
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "recipe_editor.h"
#include "record/run_folder.h"
#include "record/run_record.h"
#include "run_steering.h"
#include "train/presets.h"
#include "train/run_config_builder.h"
#include "train/run_log.h"
#include "training_controller.h"
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QToolBar>
#include <cmath>

namespace plab {

void MainWindow::buildControls() {
    m_preset = new QComboBox(this);
    for (const Preset& p : presets())
        m_preset->addItem(QString::fromStdString(p.name));
    m_preset->setCurrentText(QStringLiteral("fp16-noscale"));
    m_preset->setToolTip(tr("Precision recipe preset"));
    for (int i = 0; i < m_preset->count(); ++i)
        m_preset->setItemData(
            i,
            QString::fromStdString(presets()[static_cast<std::size_t>(i)].description + "\n" +
                                   presets()[static_cast<std::size_t>(i)].paper),
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
    // A folder or file entry opens its dialog every time it is chosen (again: another one);
    // the entry then names what it holds, and a cancelled first choice goes back to where the
    // box was.
    connect(m_data, &QComboBox::activated, this, [this](int index) {
        const QString choice = m_data->itemData(index).toString();
        if (choice == QLatin1String("dir"))
            chooseDataDirectory();
        else if (choice == QLatin1String("text-file"))
            chooseTextFile();
        m_dataChoice = m_data->currentIndex();
    });
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1 << 30);
    m_seed->setValue(1);
    m_lr = new QDoubleSpinBox(this);
    m_lr->setDecimals(4);
    m_lr->setRange(0.0001, 10.0);
    m_lr->setSingleStep(0.01);
    m_lr->setValue(0.05);
    // One edit when the value is entered (Return, leaving the box, an arrow step), not one per
    // key typed (issue 65 item 31: "0.1" and Return wrote two learning_rate events).
    m_lr->setKeyboardTracking(false);
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
    showChosenPath(QStringLiteral("dir"), m_dataDir);
    showChosenPath(QStringLiteral("text-file"), m_textFile);
    m_dataChoice = m_data->currentIndex();
}

void MainWindow::chooseTextFile() {
    const QString file = m_pathPicker
                             ? m_pathPicker()
                             : QFileDialog::getOpenFileName(this, tr("Text to train the GPT on"),
                                                            QFileInfo(m_textFile).absolutePath());
    if (!file.isEmpty())
        m_textFile = file;
    showChosenPath(QStringLiteral("text-file"), m_textFile);
}

void MainWindow::chooseDataDirectory() {
    const QString dir =
        m_pathPicker
            ? m_pathPicker()
            : QFileDialog::getExistingDirectory(this, tr("Directory with IDX files"), m_dataDir);
    if (!dir.isEmpty())
        m_dataDir = dir;
    showChosenPath(QStringLiteral("dir"), m_dataDir);
}

// "Folder: fashion" (the whole path in its tooltip), "Text file…" while none is chosen; a
// cancelled first choice returns the box to its previous entry.
void MainWindow::showChosenPath(const QString& choice, const QString& path) {
    const int i = m_data->findData(choice);
    if (i < 0)
        return;
    const bool dir = choice == QLatin1String("dir");
    if (path.isEmpty()) {
        if (m_data->currentIndex() == i && m_dataChoice != i)
            m_data->setCurrentIndex(m_dataChoice);
        return;
    }
    const QString name = QFileInfo(path).fileName().isEmpty() ? path : QFileInfo(path).fileName();
    m_data->setItemText(i, dir ? tr("Folder: %1").arg(name) : tr("Text: %1").arg(name));
    m_data->setItemData(i,
                        tr("%1 (choose this entry again for another %2)")
                            .arg(QDir::toNativeSeparators(path), dir ? tr("folder") : tr("file")),
                        Qt::ToolTipRole);
}

// The data box's choice as a config's data.source: a named source, the folder chosen for
// "Directory…", or "text:FILE".
QString MainWindow::dataSourceFromControls() const {
    const QString source = m_data->currentData().toString();
    if (source == QLatin1String("dir"))
        return m_dataDir;
    if (source == QLatin1String("text-file"))
        return QStringLiteral("text:") + m_textFile;
    return source;
}

TrainConfig MainWindow::configFromControls(QString* error) const {
    // An opened session is an entry of the preset box holding its whole config: Apply starts
    // from it (with the toolbar's values), not from the preset the box showed before.
    const QVariant session = m_preset->currentData(kSessionConfigRole);
    const QString source = dataSourceFromControls();
    // The toolbar's values as settings over the preset or session, by the one builder.
    RunConfigParts parts;
    try {
        if (session.isValid()) {
            parts.base = nlohmann::json::parse(session.toString().toStdString());
            // Another network than the session's takes its own defaults (the GPT trains with
            // AdamW, its batch and evaluation), not the settings of the session's network.
            const std::string chosen = m_model->currentData().toString().toStdString();
            nlohmann::json& base = parts.base;
            if (base.contains("model") && base["model"].value("type", "mlp") != chosen) {
                base.erase("model");
                if (base.contains("train"))
                    for (const char* key :
                         {"optimizer", "momentum", "weight_decay", "beta1", "beta2", "eps",
                          "clip_norm", "batch_size", "eval_every"})
                        base["train"].erase(key);
            }
        } else {
            parts.preset = m_preset->currentText().toStdString();
        }
        parts.settings = {
            "model.type=" + nlohmann::json(m_model->currentData().toString().toStdString()).dump(),
            "train.lr=" + nlohmann::json(m_lr->value()).dump()};
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return {};
    }
    parts.seed = m_seed->value();
    parts.steps = m_steps->value();
    if (!session.isValid())
        parts.threads = 1;
    parts.data = source.toStdString();
    parts.device = m_device->currentData().toString().toStdString();
    try {
        TrainConfig config = configFromJson(buildRunConfigJson(parts));
        // What the window shows is what Apply uses (issue 65 item 29: the dock's edits were
        // dropped, a typed lr kept): while the preset box names the own run's preset and the
        // network is the run's, the new run takes the recipe, policy and loss scale the dock,
        // the policy box and the slider show.
        const TrainConfig& shown = m_controller->config();
        if (m_controller->hasSession() && !m_viewed && m_preset->currentText() == m_runPreset &&
            config.model.type == shown.model.type) {
            config.recipe = shown.recipe;
            config.setScalingFrom(shown);
        }
        return config;
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
    // What the controls show: an ended run's session takes no more edits, so the lr typed or the
    // recipe set after it ended are in the controller's config only (they were dropped before).
    TrainConfig config =
        hasEnded(m_controller->state()) ? m_controller->config() : m_controller->effectiveConfig();
    config.timeline.clear(); // the edits are in its settings from step 0
    const QString error = startRun(config);
    if (!error.isEmpty())
        showError(tr("Cannot reset the run"), error);
    return error;
}

// The recorded run on show gives way to the app's own (only once that one could start: a
// failed Apply leaves the view as it was).
void MainWindow::leaveViewedRun() {
    m_viewed.reset();
    m_source = m_live.get();
    m_pollTimer->setInterval(m_source->pollIntervalMs());
    m_pollTimer->start(); // also after a record that failed to follow
    m_offeredRoles.clear();
    m_watchedFormat->hide();
    m_recipeEditor->showRecordOnly({}); // the app's own run: a recipe, every role
    m_gradientView->setRoles({kAllRoles.begin(), kAllRoles.end()});
    if (const int last = m_preset->count() - 1; // the watched run's entry (never current here)
        m_preset->itemData(last, kWatchedRunRole).isValid() && m_preset->currentIndex() != last)
        m_preset->removeItem(last);
    m_scrub->hide();
    m_scrubLabel->hide();
}

QString MainWindow::startRun(const TrainConfig& config) {
    // Every run keeps its record: say when they add up.
    const QString runsFolder =
        QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
        QStringLiteral("/runs");
    m_runsFolderBytes = bytesUnder(runsFolder.toStdString());
    if (m_runsFolderBytes > kRunsFolderNotice)
        statusBar()->showMessage(
            tr("The runs folder %1 holds %2: File > Open run folder to tidy it up.")
                .arg(runsFolder, QString::fromStdString(megabytesText(m_runsFolderBytes))),
            15000);
    m_diskCheck.invalidate();
    m_rateClock.invalidate();
    m_samplesPerSecond = 0.0;
    // Every GUI run logs like a CLI run, under the user's data folder.
    const QString runDir =
        QString::fromStdString(newTimestampedFolder(runsFolder.toStdString(), ""));
    const QString previousDir = m_controller->runDir();
    if (const QString error = m_controller->configure(config, runDir); !error.isEmpty()) {
        removeRunWithoutSteps(runDir.toStdString()); // the folder made for a run that never was
        return error;
    }
    leaveViewedRun();
    // The run this one replaces took no step (ten quick Applies): its folder goes with it.
    if (!previousDir.isEmpty())
        removeRunWithoutSteps(previousDir.toStdString());
    showDeviceChoice(config);
    m_recipeEditor->setStageNames(m_controller->stageNames());
    showRunSettings(config);
    m_runPreset = m_preset->currentText(); // the box's entry the run was started from
    updateRunControls();
    updateStatus();
    markPendingValues();
    return {};
}

// The settings a run can change while it goes (recipe, policy, scale, learning rate), shown
// without sending them back to the run.
void MainWindow::showRunSettings(const TrainConfig& config) {
    m_recipeEditor->setRecipe(config.recipe, config.scalingPolicy);
    m_policy->setCurrentIndex(m_policy->findData(static_cast<int>(config.scalingPolicy)));
    const QSignalBlocker block(m_slider), blockLr(m_lr);
    if (!m_slider->slider()->isSliderDown()) { // a held slider is the user's
        m_slider->setLog2Scale(std::log2(config.lossScale));
        m_gradientView->setWhatIfScale(m_slider->scale());
    }
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
    removeRunEntry();
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
    showChosenPath(QStringLiteral("dir"), m_dataDir);
    showChosenPath(QStringLiteral("text-file"), m_textFile);
    m_dataChoice = m_data->currentIndex();
    m_seed->setValue(static_cast<int>(config.seed));
    m_lr->setValue(config.learningRate);
    if (config.steps > 0)
        m_steps->setValue(
            static_cast<int>(std::min<std::int64_t>(config.steps, m_steps->maximum())));
    const int device = m_device->findData(QString::fromStdString(config.device));
    if (device >= 0)
        m_device->setCurrentIndex(device);
    m_runPreset = label; // the run on show was started from this entry
    updateTrainingFields();
    markPendingValues();
}

void MainWindow::removeRunEntry() {
    const int last = m_preset->count() - 1;
    if (m_preset->itemData(last, kSessionConfigRole).isValid() ||
        m_preset->itemData(last, kWatchedRunRole).isValid())
        m_preset->removeItem(last);
}

void MainWindow::showWatchedRunInControls(const QString& label) {
    {
        const QSignalBlocker block(m_preset);
        removeRunEntry();
        m_preset->addItem(label);
        m_preset->setItemData(m_preset->count() - 1, true, kWatchedRunRole);
        m_preset->setCurrentIndex(m_preset->count() - 1);
    }
    updateTrainingFields();
}

void MainWindow::updateTrainingFields() {
    const bool watched = m_preset->currentData(kWatchedRunRole).toBool();
    for (QWidget* field :
         std::initializer_list<QWidget*>{m_model, m_data, m_seed, m_lr, m_steps, m_device, m_pace})
        field->setEnabled(!watched);
    m_applyAction->setEnabled(!watched);
    // Not shown either: greyed, they still read as the script's ("MLP 256-256", "Built-in
    // data", 5000 steps: the app's last values, issue 65 item 33).
    if (m_settingsToolbar != nullptr) { // built (the constructor shows a config before them)
        m_modelAction->setVisible(!watched);
        m_dataAction->setVisible(!watched);
        m_settingsToolbar->setVisible(!watched);
    }
    markPendingValues();
    m_preset->setToolTip(watched ? tr("A PyTorch script's run (watched or emulated): its model "
                                      "and settings are its script's, not the app's. Pick a "
                                      "preset to train here.")
                                 : tr("Precision recipe preset"));
}

} // namespace plab
