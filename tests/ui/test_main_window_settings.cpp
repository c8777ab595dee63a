// The desktop app offscreen: the run's settings: Apply, sessions saved and loaded, the device and
// data boxes, run folders.
#include "test_main_window.h"

// Issue 65 item 29: what the window shows is what Apply and Save session use. Apply kept a typed
// lr but dropped the dock's recipe edit; another preset chosen is pending and Apply takes its
// recipe; Save session after the run ended holds the lr set since (it held the old one).
void TestMainWindow::applyAndSaveUseWhatTheWindowShows() {
    QComboBox* preset = m_window->presetBox();
    preset->setCurrentText(QStringLiteral("fp16-noscale"));
    QCOMPARE(m_window->applySettings(), QString());
    TrainingController* c = m_window->controller();
    RecipeEditor* dock = m_window->recipeEditor();
    dock->layerBox()->setCurrentIndex(0); // all layers
    QComboBox* weights = dock->formatBox(TensorRole::Weights);
    weights->setCurrentText(QStringLiteral("bf16"));
    QVERIFY(QMetaObject::invokeMethod(weights, "activated", Q_ARG(int, weights->currentIndex())));
    const auto weightFormat = [&] {
        return c->config().recipe.roles[static_cast<std::size_t>(TensorRole::Weights)].format.name;
    };
    QCOMPARE(weightFormat(), std::string("bf16"));
    auto* lr = m_window->findChild<QDoubleSpinBox*>();
    lr->setValue(0.07);
    QCOMPARE(m_window->pendingValues(), QStringList());
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(weightFormat(), std::string("bf16")); // the preset's fp16 before
    QCOMPARE(c->config().learningRate, 0.07);
    QCOMPARE(dock->formatBox(TensorRole::Weights)->currentText(), QStringLiteral("bf16"));
    // Another preset: pending (shaded) until Apply, which takes the preset's recipe.
    preset->setCurrentText(QStringLiteral("fp32"));
    QCOMPARE(m_window->pendingValues(), QStringList({QStringLiteral("preset")}));
    QVERIFY(!preset->styleSheet().isEmpty());
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(weightFormat(), std::string("fp32"));
    QCOMPARE(m_window->pendingValues(), QStringList());

    // Save session after the end holds the lr set since, at the last step (a replay of as many
    // steps never reaches it).
    TrainConfig small = c->config();
    small.steps = 3;
    small.timeline.clear();
    QCOMPARE(c->configure(small), QString());
    c->train();
    QTRY_VERIFY_WITH_TIMEOUT(hasEnded(c->state()), kWorkerWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 3, kWorkerWaitMs);
    lr->setValue(0.09);
    QTemporaryDir dir;
    const QString path = dir.path() + QStringLiteral("/session.json");
    QCOMPARE(m_window->saveSession(path), QString());
    const TrainConfig saved = savedSession(path);
    QCOMPARE(saved.learningRate, 0.07); // what the run used
    QVERIFY(isOneEdit(saved, 3, R"({"train":{"lr":0.09}})"));
    preset->setCurrentText(QStringLiteral("fp16-noscale")); // the demo again, for what follows
    lr->setValue(0.05);
    QCOMPARE(m_window->applySettings(), QString());
}

// Save session holds the run's start and its timeline of edits (here a loss scale dragged at
// step 3), not the state at the end; opening it replays the run step for step, the edit
// arriving in the controls when the replay reaches it; the CLI takes the same file.
void TestMainWindow::sessionSaveLoadRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.path() + QStringLiteral("/session.json");
    TrainConfig start = m_window->controller()->config();
    start.timeline.clear();
    start.lossScale = 1.0;
    QCOMPARE(m_window->controller()->configure(start), QString());
    stepAndCollectLosses(*m_window, 3);
    m_window->scaleSlider()->setLog2Scale(5.0); // the user drags the slider at step 3
    const std::vector<double> original = stepAndCollectLosses(*m_window, 2);
    QCOMPARE(original.size(), std::size_t{5});
    QCOMPARE(m_window->saveSession(path), QString());

    const TrainConfig saved = savedSession(path);
    QCOMPARE(saved.lossScale, 1.0); // where the run started
    QVERIFY(isOneEdit(saved, 3, R"({"scaling":{"scale":32.0}})"));

    QCOMPARE(m_window->loadSession(path), QString());
    QCOMPARE(m_window->scaleSlider()->log2Scale(), 0.0);
    const std::vector<double> replayed = stepAndCollectLosses(*m_window, 5);
    QCOMPARE(replayed, original); // same machine, same arithmetic: bit for bit
    m_window->controller()->poll();
    QCOMPARE(m_window->controller()->config().lossScale, 32.0);
    QCOMPARE(m_window->scaleSlider()->log2Scale(), 5.0);
    // The toolbar shows the opened session: Apply starts a run of it, not of the old preset,
    // with what the window shows now (issue 65 item 29): the slider's 2^5 the replay reached.
    QCOMPARE(m_window->applySettings(), QString());
    TrainConfig applied = m_window->controller()->config();
    TrainConfig expected = applyEdit(saved, saved.timeline[0].set);
    expected.timeline.clear();
    QVERIFY2(applied == expected, applied.toJson().dump().c_str());

    QVERIFY(!m_window->loadSession(dir.path() + QStringLiteral("/missing.json")).isEmpty());
    QFile bad(dir.path() + QStringLiteral("/bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(R"({"train": {"lr": "fast"}})");
    bad.close();
    QVERIFY(m_window->loadSession(bad.fileName()).contains(QLatin1String("config.train.lr")));
    m_window->scaleSlider()->setLog2Scale(0.0);
}

void TestMainWindow::deviceBoxFeedsConfigAndSaysWhereItRuns() {
    // Re-applying with the same data reuses the loaded split (no reload on the GUI thread).
    const auto before = m_window->controller()->data();
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(m_window->controller()->data().get(), before.get());

    QComboBox* box = m_window->deviceBox();
    QVERIFY(box->findData(QStringLiteral("auto")) >= 0);
    QVERIFY(box->findData(QStringLiteral("cpu")) >= 0);
    box->setCurrentIndex(box->findData(QStringLiteral("cpu")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(m_window->controller()->config().device, std::string("cpu"));
    QVERIFY(m_window->deviceNotice().isEmpty()); // the CPU needs no explanation
    box->setCurrentIndex(box->findData(QStringLiteral("auto")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(m_window->controller()->config().device, std::string("auto"));
    const DeviceChoice choice = resolveDevice(parseDeviceSpec("auto"));
    QCOMPARE(m_window->deviceNotice(), QString::fromStdString(choice.notice));
    QVERIFY(m_window->backendLabel()->toolTip().contains(QStringLiteral("cpu: ")));
    if (!choice.cuda)
        QVERIFY2(m_window->deviceNotice().contains(QStringLiteral("using the CPU")),
                 qPrintable(m_window->deviceNotice()));
}

// The data box's "Directory…" names the folder in use once chosen, opens its dialog again when
// chosen again (another folder), and a cancelled first choice leaves the box where it was
// (issue 52 item 17: no dialog the second time, no folder shown, Apply failing on an old one).
void TestMainWindow::dataFolderIsShownAndChosenAgain() {
    QComboBox* data = m_window->dataBox();
    const int builtIn = data->currentIndex();
    const int dir = data->findData(QStringLiteral("dir"));
    QVERIFY(dir >= 0);
    QString answer;
    int asked = 0;
    m_window->setPathPicker([&] {
        ++asked;
        return answer;
    });
    const auto choose = [&](const QString& path) {
        answer = path;
        data->setCurrentIndex(dir);
        emit data->activated(dir);
    };
    choose(QString()); // cancelled
    QCOMPARE(asked, 1);
    QCOMPARE(data->currentIndex(), builtIn);
    QTemporaryDir first, second;
    choose(first.path());
    QCOMPARE(data->currentIndex(), dir);
    QCOMPARE(data->itemText(dir), QStringLiteral("Folder: ") + QFileInfo(first.path()).fileName());
    QVERIFY(data->itemData(dir, Qt::ToolTipRole).toString().contains(first.path()));
    choose(second.path());
    QCOMPARE(asked, 3);
    QCOMPARE(data->itemText(dir), QStringLiteral("Folder: ") + QFileInfo(second.path()).fileName());
    choose(QString()); // cancelled: the folder chosen stays
    QCOMPARE(data->currentIndex(), dir);
    QCOMPARE(data->itemText(dir), QStringLiteral("Folder: ") + QFileInfo(second.path()).fileName());
    m_window->setPathPicker({});
    data->setCurrentIndex(builtIn);
}

// A toolbar value that is not the run on show's is marked pending until Apply (issue 52 item 22:
// switching the network showed the CNN's lr 0.0100 while the run kept 0.05, unmarked); the lr
// typed during the app's own run goes to it at once and is not pending.
void TestMainWindow::unappliedValuesArePending() {
    QComboBox* model = m_window->modelBox();
    model->setCurrentIndex(model->findData(QStringLiteral("mlp")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(m_window->pendingValues(), QStringList());
    auto* lr = m_window->findChild<QDoubleSpinBox*>();
    QVERIFY(lr != nullptr);
    lr->setValue(lr->value() * 2); // a live edit
    QCOMPARE(m_window->controller()->config().learningRate, lr->value());
    QCOMPARE(m_window->pendingValues(), QStringList());
    model->setCurrentIndex(model->findData(QStringLiteral("cnn")));
    QCOMPARE(m_window->pendingValues(),
             QStringList({QStringLiteral("network"), QStringLiteral("lr")}));
    QVERIFY(!model->styleSheet().isEmpty());
    QVERIFY(model->toolTip().contains(QLatin1String("pending")));
    QVERIFY(m_window->applyAction()->toolTip().contains(QLatin1String("pending: network, lr")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(m_window->controller()->config().model.type, std::string("cnn"));
    QCOMPARE(m_window->pendingValues(), QStringList());
    QVERIFY(model->styleSheet().isEmpty());
    model->setCurrentIndex(model->findData(QStringLiteral("mlp")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(m_window->pendingValues(), QStringList());
}

// Apply (here: the small CNN after MLP steps) shows the new run at once: its own layer names in
// the Layer box, no histogram, curve or heat map of the previous run.
void TestMainWindow::applyShowsTheNewRunAtOnce() {
    TrainingController* c = m_window->controller();
    QCOMPARE(m_window->applySettings(), QString());
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 1, kWorkerWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(!c->history().empty(), kWorkerWaitMs);
    QComboBox* modelBox = nullptr;
    for (QComboBox* box : m_window->findChildren<QComboBox*>())
        if (box->findData(QStringLiteral("cnn")) >= 0)
            modelBox = box;
    QVERIFY(modelBox != nullptr);
    // Picking another network changes nothing of the paused run until Apply: not its learning
    // rate, which the box fills in with the network's own (issue 42 item 13).
    const double lr = c->replayConfig().learningRate;
    modelBox->setCurrentIndex(modelBox->findData(QStringLiteral("cnn")));
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 2, kWorkerWaitMs);
    const TrainConfig untouched = c->replayConfig();
    QCOMPARE(untouched.learningRate, lr);
    QVERIFY(untouched.timeline.empty());
    QCOMPARE(c->latest()->scalars.learningRate, lr);
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(c->config().model.type, std::string("cnn"));
    QCOMPARE(c->config().learningRate, defaultLearningRate("cnn")); // taken at Apply
    QComboBox* layers = m_window->gradientView()->stageBox();
    const std::vector<std::string> names = c->stageNames();
    QCOMPARE(layers->count(), static_cast<int>(names.size()));
    for (int i = 0; i < layers->count(); ++i)
        QCOMPARE(layers->itemText(i).toStdString(), names[static_cast<std::size_t>(i)]);
    QVERIFY(layers->itemText(0).contains(QLatin1String("conv")));
    QCOMPARE(m_window->gradientView()->currentFractions().flushed, 0.0);
    QVERIFY(c->history().empty());
    modelBox->setCurrentIndex(modelBox->findData(QStringLiteral("mlp")));
    QCOMPARE(m_window->applySettings(), QString());
}

// Ten Applies in a row, none stepping: each replaced run's folder goes with it (issue 42 item
// 28), while a run that took a step keeps its record.
void TestMainWindow::quickAppliesLeaveNoEmptyFolders() {
    QStringList replaced;
    for (int i = 0; i < 10; ++i) {
        replaced << m_window->controller()->runDir();
        QCOMPARE(m_window->applySettings(), QString());
    }
    for (const QString& dir : replaced)
        QVERIFY2(!QFileInfo::exists(dir), qPrintable(dir));
    const QString stepped = m_window->controller()->runDir();
    m_window->controller()->step();
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest() &&
                                 m_window->controller()->latest()->scalars.step == 1,
                             kWorkerWaitMs);
    QCOMPARE(m_window->applySettings(), QString());
    QVERIFY(QFileInfo::exists(stepped + QStringLiteral("/run.sqlite")));
}

// Two starts in one millisecond (the test's own two shards did it) get two folders: the second
// run was refused by the first one's lock.
void TestMainWindow::runFoldersAreNeverShared() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    const std::string parent = root.path().toStdString() + "/runs"; // made by the first call
    std::tm now{};
    now.tm_year = 2026 - 1900;
    now.tm_mon = 11;
    now.tm_mday = 3;
    now.tm_hour = 10;
    now.tm_min = 54;
    now.tm_sec = 27;
    const std::string first = newTimestampedFolder(parent, "compare-", now, 976);
    QCOMPARE(first, parent + "/compare-20261203-105427-976");
    QCOMPARE(newTimestampedFolder(parent, "compare-", now, 976), first + "-2");
    QCOMPARE(newTimestampedFolder(parent, "compare-", now, 976), first + "-3");
    for (const char* suffix : {"", "-2", "-3"})
        QVERIFY(QFileInfo(QString::fromStdString(first + suffix)).isDir());
    // A parent that is a file: no folder can be made, and the first name comes back at once.
    QFile blocker(root.path() + QStringLiteral("/file"));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    QCOMPARE(newTimestampedFolder(blocker.fileName().toStdString(), "", now, 976),
             blocker.fileName().toStdString() + "/20261203-105427-976");
}
