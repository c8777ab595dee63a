// The run sources the main window's views read (ui/run_source.h): a record (a trained run with
// a timeline of edits, a watched run judged in several formats), the app's own session polled by
// its owner, and the window's one timer reading whichever is on show.
#include "compare_dialog.h"
#include "live_run_source.h"
#include "main_window.h"
#include "recipe_editor.h"
#include "record_run_source.h"
#include "training_controller.h"

#include "torch_runs/watch_recorder.h"
#include "train/presets.h"
#include "train/run_data.h"
#include "train/training_session.h"

#include <QComboBox>
#include <QLabel>
#include <QListWidget>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <random>

using namespace plab;

class TestRunSource : public QObject {
    Q_OBJECT
private slots:
    void recordSourceFollowsItsTimeline();
    void watchedSourceShowsTheJudgedFormat();
    void liveSourceIsPolledByItsOwner();
    void windowPollsTheRunOnShowFromOneTimer();
    void windowShowsASweepMemberChosenInCompare();
    void aboutNamesTheVersion();
    void aStageWithItsOwnScalingIsShownInIt();
    void theDockGivesALayerItsOwnScaling();
    void theDockShowsTheOverflowInEffect();
};

namespace {

TrainConfig tinyConfig(int steps) {
    return configFromJson(
        {{"data", {{"train_size", 200}, {"test_size", 50}}},
         {"model", {{"hidden", {8}}}},
         {"train", {{"steps", steps}, {"batch_size", 16}, {"histograms_every", 1}}},
         // switched to dynamic after step 2
         {"timeline", {{{"step", 2}, {"set", {{"scaling", {{"policy", "dynamic"}}}}}}}}});
}

// A trained run's record: every step with histograms, dynamic scaling from step 3.
void trainRecord(const std::string& dir, int steps) {
    const TrainConfig config = tinyConfig(steps);
    TrainingSession session(config, loadRunData(config), dir);
    session.start();
    session.waitUntilDone();
    QCOMPARE(session.state(), SessionState::Finished);
}

// A watched run (as precision_lab.torch.watch writes it): two modules' activation gradients,
// judged in three formats, statistics at steps 1 and 6.
void watchRecord(const std::string& dir) {
    WatchSettings settings;
    settings.formats = {"fp16", "fp8-e4m3", "nvfp4"};
    settings.stageNames = {"fc1", "head"};
    settings.every = 5;
    WatchRecorder recorder(dir, settings);
    std::mt19937 random(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int step = 1; step <= 6; ++step) {
        WatchedStep s;
        s.step = step;
        s.loss = 1.0 / step;
        s.scale = 256.0;
        s.statistics = (step - 1) % settings.every == 0;
        if (s.statistics)
            for (std::size_t stage = 0; stage < 2; ++stage) {
                CapturedTensor t;
                t.stage = stage;
                t.role = TensorRole::ActivationGradients;
                t.rowLength = 32;
                for (int i = 0; i < 32 * 8; ++i) // small enough that FP16 flushes some
                    t.values.push_back(1e-6f * normal(random));
                s.tensors.push_back(std::move(t));
            }
        recorder.submit(std::move(s));
    }
    recorder.close();
}

} // namespace

void TestRunSource::recordSourceFollowsItsTimeline() {
    QTemporaryDir runs;
    const std::string dir = runs.path().toStdString() + "/trained";
    trainRecord(dir, 5);
    RecordRunSource source(QString::fromStdString(dir));
    QVERIFY(!source.watched() && !source.emulated());
    QVERIFY(source.poll());  // the first read
    QVERIFY(!source.poll()); // nothing committed since
    QCOMPARE(source.steps().size(), std::size_t{5});
    QCOMPARE(source.history().size(), std::size_t{5});
    QCOMPARE(source.histogramSteps(), (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
    QCOMPARE(source.flushColumns().size(), std::size_t{5});
    QCOMPARE(source.roles().size(), kAllRoles.size()); // a trained run records every role
    QVERIFY(!source.live());
    // Each step is drawn in the precision it ran with: the timeline's edit from step 3.
    source.showStep(2);
    QCOMPARE(source.snapshot()->statsStep, std::int64_t{2});
    QCOMPARE(source.snapshot()->stages.size(), source.stageNames().size());
    QCOMPARE(source.snapshot()->scalars.step, std::int64_t{2});
    QVERIFY(source.precision().scalingPolicy == ScalingPolicy::Static);
    source.showStep(3);
    QVERIFY(source.precision().scalingPolicy == ScalingPolicy::Dynamic);
    QVERIFY(source.precision() == ShownPrecision::of(configAfterSteps(source.config(), 2)));
    // A record keeps no samples: the what-if says so rather than compare nothing.
    const FormatComparison& none = source.compareFormats(0, TensorRole::ActivationGradients);
    QVERIFY(none.rows.empty());
    QVERIFY2(none.caption.contains(QLatin1String("No sample")), qPrintable(none.caption));
    // A step without histograms: nothing on show, the start's precision.
    source.showStep(99);
    QVERIFY(source.snapshot()->stages.empty());
    QVERIFY(source.precision().scalingPolicy == ScalingPolicy::Static);
}

void TestRunSource::watchedSourceShowsTheJudgedFormat() {
    QTemporaryDir runs;
    const std::string dir = runs.path().toStdString() + "/watched";
    watchRecord(dir);
    RecordRunSource source(QString::fromStdString(dir));
    QVERIFY(source.watched());
    QCOMPARE(source.judgedFormat(), std::string("fp16"));
    source.refresh();
    QCOMPARE(source.histogramSteps(), (std::vector<std::int64_t>{1, 6}));
    QCOMPARE(source.roles(), std::vector<TensorRole>{TensorRole::ActivationGradients});
    source.showStep(6);
    // Every role in the judged format, under a static scale (the slider previews).
    const ShownPrecision fp16 = source.precision();
    QVERIFY(fp16.scalingPolicy == ScalingPolicy::Static && !fp16.blockScheme);
    for (const QuantConfig& role : fp16.recipe.roles)
        QCOMPARE(role.format.name, std::string("fp16"));
    QCOMPARE(source.flushColumns().size(), std::size_t{2});
    const double fp16Flushed = source.flushColumns().back().flushed[0];
    QVERIFY(fp16Flushed > 0.0);
    // The what-if: every judged format's counts for the whole tensor, the one on show current.
    const FormatComparison& judged = source.compareFormats(1, TensorRole::ActivationGradients);
    QCOMPARE(judged.rows.size(), std::size_t{3});
    QCOMPARE(judged.current, std::string("fp16"));
    QVERIFY2(judged.caption.contains(QLatin1String("head")), qPrintable(judged.caption));
    // Another format on show: read again in it; a block format over FP32's bands.
    source.setJudgedFormat("nvfp4");
    QVERIFY(source.poll());
    source.showStep(6);
    for (const QuantConfig& role : source.precision().recipe.roles)
        QCOMPARE(role.format.name, std::string("fp32"));
    QCOMPARE(source.flushColumns().size(), std::size_t{2});
    QVERIFY(source.flushColumns().back().flushed[0] != fp16Flushed);
    QCOMPARE(source.compareFormats(1, TensorRole::ActivationGradients).current,
             std::string("nvfp4"));
    // No such stage: no read, the last comparison stays.
    QCOMPARE(source.compareFormats(7, TensorRole::ActivationGradients).current,
             std::string("nvfp4"));
}

void TestRunSource::liveSourceIsPolledByItsOwner() {
    QTemporaryDir runs;
    TrainingController controller(nullptr, TrainingController::Polling::ByOwner);
    LiveRunSource source(controller);
    TrainConfig config = tinyConfig(3);
    config.timeline.clear();
    QCOMPARE(controller.configure(config, runs.path() + QStringLiteral("/own")), QString());
    QCOMPARE(source.folder(), runs.path() + QStringLiteral("/own"));
    QCOMPARE(source.stageNames(), controller.stageNames());
    controller.train();
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), SessionState::Finished, 30000);
    QTest::qWait(100);
    QVERIFY(source.snapshot() == nullptr); // nothing polled it: no timer of its own
    source.poll();
    QVERIFY(source.snapshot() != nullptr);
    QCOMPARE(source.snapshot()->scalars.step, std::int64_t{3});
    QCOMPARE(source.history().size(), std::size_t{3});
    QVERIFY(source.precision() == ShownPrecision::of(controller.config()));
    // The step's sample compared in every format, its own cast's exact counts in bold.
    const FormatComparison& compared = source.compareFormats(0, TensorRole::ActivationGradients);
    const std::string inUse =
        controller.config()
            .recipe.stageConfig(0, source.stageNames(), TensorRole::ActivationGradients)
            .format.name;
    QCOMPARE(compared.current, inUse);
    QVERIFY(compared.rows.size() > 10);
    QVERIFY(&source.compareFormats(0, TensorRole::ActivationGradients) == &compared);
}

void TestRunSource::windowPollsTheRunOnShowFromOneTimer() {
    QTemporaryDir runs;
    const std::string dir = runs.path().toStdString() + "/trained";
    trainRecord(dir, 2);
    MainWindow w;
    QString error;
    w.setErrorSink(&error);
    auto* timer = w.findChild<QTimer*>(QStringLiteral("pollTimer"));
    QVERIFY(timer != nullptr);
    QVERIFY(timer->isActive());
    QCOMPARE(timer->interval(), 33); // the app's own session
    // The session's steps arrive through the window's timer (the controller has none running).
    w.controller()->step();
    QTRY_VERIFY_WITH_TIMEOUT(w.controller()->latest() != nullptr, 30000);
    QCOMPARE(w.openRun(QString::fromStdString(dir)), QString());
    QVERIFY(timer->isActive());
    QCOMPARE(timer->interval(), RecordRunSource::kFollowMs);
    QCOMPARE(w.viewedStep(), std::int64_t{2});
    QCOMPARE(w.applySettings(), QString()); // the app's own again
    QCOMPARE(timer->interval(), 33);
    QVERIFY(w.viewedRun().isEmpty());
    QCOMPARE(error, QString());
}

// Compare's point double-clicked: its first seed's run on show in the main window.
void TestRunSource::windowShowsASweepMemberChosenInCompare() {
    QTemporaryDir runs;
    MainWindow w;
    QString error;
    w.setErrorSink(&error);
    CompareDialog* compare = w.openCompare(runs.path());
    QSignalSpy ended(compare, &CompareDialog::comparisonEnded);
    compare->run({QStringLiteral("fp32"), QStringLiteral("bf16")}, 3, 1);
    QVERIFY(ended.wait(60000));
    QSignalSpy chosen(compare, &CompareDialog::runChosen);
    QTableWidget* results = compare->resultsTable();
    QCOMPARE(results->rowCount(), 2);
    QCOMPARE(results->item(1, 0)->text(), QStringLiteral("bf16"));
    emit results->cellDoubleClicked(1, 0);
    QCOMPARE(chosen.count(), 1);
    const QString member = compare->compareDir() + QStringLiteral("/bf16/seed-1");
    QCOMPARE(w.viewedRun(), member);
    QCOMPARE(w.viewedHistory().size(), std::size_t{3});
    QVERIFY(!w.controller()->hasSession());
    // A preset the comparison did not run: no run to show, the dialog says so.
    auto* presets = compare->findChild<QListWidget*>();
    const QList<QListWidgetItem*> fp16 =
        presets->findItems(QStringLiteral("fp16-amp"), Qt::MatchExactly);
    QCOMPARE(fp16.size(), 1);
    emit presets->itemDoubleClicked(fp16.front());
    QCOMPARE(chosen.count(), 1);
    QCOMPARE(w.viewedRun(), member);
    QVERIFY(compare->findChildren<QLabel*>().size() > 0);
    bool said = false;
    for (const QLabel* label : compare->findChildren<QLabel*>())
        said = said || label->text().startsWith(QLatin1String("No run of fp16-amp"));
    QVERIFY(said);
    QCOMPARE(error, QString());
    compare->close();
}

void TestRunSource::aboutNamesTheVersion() {
    QCoreApplication::setApplicationVersion(QStringLiteral("9.8.7"));
    MainWindow w;
    QVERIFY2(w.aboutText().contains(QLatin1String("Precision Lab</b> 9.8.7")),
             qPrintable(w.aboutText()));
}

// Issue 65 item 21: under a scaled policy a product input saturates whatever the recipe's
// overflow says (fp8-hybrid's E5M2 gradients are "inf" in the recipe): the dock shows
// "saturate", greyed, saying why; a layer without scaling of its own follows the run's policy,
// one with its own follows that; an edit of the row keeps the recipe's own setting.
void TestRunSource::theDockShowsTheOverflowInEffect() {
    RecipeEditor dock;
    dock.setStageNames({"fc1", "fc2", "head"});
    const TrainConfig hybrid = configFromJson(findPreset("fp8-hybrid-delayed").json);
    QVERIFY(
        hybrid.recipe.roles[static_cast<std::size_t>(TensorRole::ActivationGradients)].overflow ==
        Overflow::Inf);
    dock.setRecipe(hybrid.recipe, hybrid.scalingPolicy);
    QComboBox* gradients = dock.overflowBox(TensorRole::ActivationGradients);
    QCOMPARE(gradients->currentText(), QStringLiteral("saturate"));
    QVERIFY(!gradients->isEnabled());
    QVERIFY2(gradients->toolTip().contains(QLatin1String("amax-delayed")) &&
                 gradients->toolTip().contains(QLatin1String("inf")),
             qPrintable(gradients->toolTip()));
    QVERIFY(dock.overflowBox(TensorRole::MasterWeights)->isEnabled()); // not a product input
    // Without tensor scaling the recipe's own setting shows, and can be edited.
    dock.setRecipe(hybrid.recipe, ScalingPolicy::Static);
    QCOMPARE(gradients->currentText(), QStringLiteral("inf"));
    QVERIFY(gradients->isEnabled());
    // A format edit of a greyed row keeps its overflow "inf" in the recipe sent.
    dock.setRecipe(hybrid.recipe, hybrid.scalingPolicy);
    std::vector<PrecisionRecipe> sent;
    connect(&dock, &RecipeEditor::recipeChanged, this,
            [&](const PrecisionRecipe& r) { sent.push_back(r); });
    QComboBox* format = dock.formatBox(TensorRole::ActivationGradients);
    format->setEditText(QStringLiteral("fp8-e4m3"));
    emit format->activated(format->currentIndex());
    QCOMPARE(sent.size(), std::size_t{1});
    const QuantConfig& edited =
        sent.back().roles[static_cast<std::size_t>(TensorRole::ActivationGradients)];
    QCOMPARE(edited.format.name, std::string("fp8-e4m3"));
    QVERIFY(edited.overflow == Overflow::Inf);
}

QTEST_MAIN(TestRunSource)
// Issue 63 item 1: a stage the recipe gives its own scaling is drawn in it (its block scheme, its
// policy for the loss-scale preview); the other stages in the run's.
void TestRunSource::aStageWithItsOwnScalingIsShownInIt() {
    const TrainConfig config = configFromJson(findPreset("nvfp4-mxfp8-tail").json);
    const ShownPrecision run = ShownPrecision::of(config);
    const std::vector<std::string> names = {"fc1", "fc2", "head"};
    const ShownPrecision first = run.forStage(0, names), tail = run.forStage(2, names);
    QVERIFY(first == run);
    QVERIFY(first.blockScheme && first.blockScheme->kind == BlockScaleKind::Nvfp4);
    QVERIFY(tail.scalingPolicy == ScalingPolicy::Mx);
    QVERIFY(tail.blockScheme && tail.blockScheme->kind == BlockScaleKind::Mx &&
            tail.blockScheme->blockSize == 32 &&
            tail.blockScheme->scaleRounding == ScaleRounding::Ceil);
    QCOMPARE(tail.format(2, names, TensorRole::Weights).name, std::string("fp8-e4m3"));
}

// The recipe dock's Scaling box (issue 63 item 1): disabled for all layers; for one layer it shows
// the layer's own scaling and sets or removes it, and the recipe it sends says so.
void TestRunSource::theDockGivesALayerItsOwnScaling() {
    RecipeEditor dock;
    dock.setStageNames({"fc_1", "fc2", "head"});
    dock.setRecipe(configFromJson(findPreset("nvfp4-mxfp8-tail").json).recipe);
    QVERIFY(!dock.scalingBox()->isEnabled());
    std::vector<PrecisionRecipe> sent;
    connect(&dock, &RecipeEditor::recipeChanged, this,
            [&](const PrecisionRecipe& r) { sent.push_back(r); });
    dock.layerBox()->setCurrentIndex(3); // head: the preset's MXFP8 tail
    QVERIFY(dock.scalingBox()->isEnabled());
    QCOMPARE(dock.scalingBox()->currentText(), QStringLiteral("mx"));
    dock.layerBox()->setCurrentIndex(1);            // fc1: the run's NVFP4
    QCOMPARE(dock.scalingBox()->currentIndex(), 0); // the run's
    const int current = dock.scalingBox()->findText(QStringLiteral("amax-current"));
    QVERIFY(current > 0);
    dock.scalingBox()->setCurrentIndex(current);
    emit dock.scalingBox()->activated(current);
    QCOMPARE(sent.size(), std::size_t{1});
    QVERIFY(sent.back().stageScaling.at(0).policy == ScalingPolicy::AmaxCurrent);
    // A module's name as it is (issue 65 item 30: underscores were shown as spaces); role names
    // as words.
    QVERIFY2(dock.exceptionsText().contains(QStringLiteral("layer fc_1: scaling amax-current")),
             qPrintable(dock.exceptionsText()));
    QVERIFY2(dock.exceptionsText().contains(QStringLiteral("activation gradients")),
             qPrintable(dock.exceptionsText()));
    // Back to the run's: the layer's own goes.
    dock.scalingBox()->setCurrentIndex(0);
    emit dock.scalingBox()->activated(0);
    QCOMPARE(sent.size(), std::size_t{2});
    QVERIFY(sent.back().stageScaling.count(0) == 0);
}

#include "test_run_source.moc"
