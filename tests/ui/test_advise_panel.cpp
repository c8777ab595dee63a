// Tools > Advise on a recorded run: the table of each module's roles with the reason for each
// format, Apply as recipe starting a new run whose config holds the per-layer exceptions,
// Export, and Apply refused (with the reason) for a watched PyTorch run. The Diagnostics tab's
// heat map of what the record holds.
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "advise_panel.h"
#include "data/dataset.h"
#include "diagnostics_view.h"
#include "flush_heatmap_view.h"
#include "gradient_view.h"
#include "main_window.h"
#include "stages_overview.h"
#include "train/run_log.h"
#include "train/training_session.h"

#include <fstream>

using namespace plab;

class TestAdvisePanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void advisesAndAppliesTheRecipeToANewRun();
    void aWatchedRunExportsButDoesNotApply();
    void diagnosticsTabDrawsWhatTheRecordHolds();

private:
    QTemporaryDir m_dataHome;
    QString m_error;
};

namespace {

// How the watcher describes a watched run judging `formats`.
ExternalRun watchedRun(const std::vector<std::string>& formats) {
    ExternalRun run;
    run.config = {{"watch", {{"formats", formats}, {"every", 1}}}};
    run.meta = {{"source", "pytorch-watch"}, {"watch", {{"formats", formats}, {"every", 1}}}};
    return run;
}

} // namespace

void TestAdvisePanel::initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("PrecisionLabTests"));
    QVERIFY(m_dataHome.isValid());
    qputenv("XDG_DATA_HOME", m_dataHome.path().toLocal8Bit());
}

void TestAdvisePanel::advisesAndAppliesTheRecipeToANewRun() {
    // An own run: FP16 everywhere but the last layer's activation gradients (FP32).
    QTemporaryDir tmp;
    const std::string run = tmp.path().toStdString() + "/run";
    const nlohmann::json j = {
        {"model", {{"hidden", {16}}}},
        {"data", {{"train_size", 400}, {"test_size", 100}}},
        {"train", {{"steps", 6}, {"batch_size", 16}}},
        {"recipe",
         {{"weights", "fp16"},
          {"activations", "fp16"},
          {"activation_gradients", "fp16"},
          {"weight_gradients", "fp16"},
          {"overrides", {{{"stage", -1}, {"activation_gradients", "fp32"}}}}}}};
    {
        TrainingSession session(configFromJson(j),
                                std::make_shared<const DataSplit>(makeSyntheticData(3, 400, 100)),
                                run);
        session.start();
        session.waitUntilDone();
    }
    MainWindow window;
    window.setErrorSink(&m_error);
    QCOMPARE(window.openRun(QString::fromStdString(run)), QString());
    // Without a ladder, the run's own: the formats it cast in, then fp32 (an FP16 run is
    // advisable as it is), and the field shows it.
    QCOMPARE(window.openAdvise(), QString());
    AdvisePanel* panel = window.advisePanel();
    QCOMPARE(panel->ladderField()->text(), QStringLiteral("fp16,fp32"));
    QCOMPARE(panel->rolesTable()->rowCount(), 8);
    // A ladder naming formats this run never cast in: one line saying so, and no table.
    panel->ladderField()->setText(QStringLiteral("bf16,fp32"));
    const QString refused = panel->advise(QString::fromStdString(run));
    QVERIFY2(refused.contains(QStringLiteral("holds no statistics in any format of the ladder")) &&
                 refused.contains(QStringLiteral("fp16")),
             qPrintable(refused));
    QCOMPARE(panel->rolesTable()->rowCount(), 0);
    panel->ladderField()->setText(QStringLiteral("fp16,bf16,fp32"));
    QCOMPARE(panel->advise(QString::fromStdString(run)), QString());
    // Two layers x four roles, each with its format and what decided it.
    QCOMPARE(panel->rolesTable()->rowCount(), 8);
    QCOMPARE(panel->productsTable()->rowCount(), 6);
    int exceptions = 0;
    for (int row = 0; row < 8; ++row) {
        const QString module = panel->rolesTable()->item(row, 0)->text();
        const QString role = panel->rolesTable()->item(row, 1)->text();
        const QString format = panel->rolesTable()->item(row, 2)->text();
        const QString why = panel->rolesTable()->item(row, 3)->text();
        if (row >= 4 && role == QLatin1String("activation_gradients")) {
            QCOMPARE(format, QStringLiteral("fp32"));
            QVERIFY2(why.contains(QStringLiteral("fp16 not judged")), qPrintable(why));
            ++exceptions;
        } else {
            const QString line = QStringList({module, role, format, why}).join(QLatin1Char(' '));
            QVERIFY2(format == QLatin1String("fp16") && why.contains(QStringLiteral("fp16 chosen")),
                     qPrintable(line));
        }
    }
    QCOMPARE(exceptions, 1);
    // The All layers view colours each layer by its advice, the reason on hover.
    window.detailTabs()->setCurrentIndex(4);
    const TensorRole shown = window.gradientView()->role();
    const auto& rows = window.stagesOverview()->rows();
    QCOMPARE(rows.size(), std::size_t{2});
    QCOMPARE(rows[0].advised, QStringLiteral("fp16"));
    QCOMPARE(rows[1].advised, shown == TensorRole::ActivationGradients ? QStringLiteral("fp32")
                                                                       : QStringLiteral("fp16"));
    QVERIFY2(rows[1].adviceReason.contains(QStringLiteral(" chosen")),
             qPrintable(rows[1].adviceReason));
    // fp32 ranks past every format of the ladder (drawn grey), fp16 first (green).
    QCOMPARE(rows[1].adviceRank, shown == TensorRole::ActivationGradients ? 3 : 0);
    // Apply: a new own run whose config holds the advice, the exception per layer.
    QVERIFY(panel->applyButton()->isEnabled());
    const QString before = window.controller()->runDir();
    QTest::mouseClick(panel->applyButton(), Qt::LeftButton);
    QCOMPARE(m_error, QString());
    const QString after = window.controller()->runDir();
    QVERIFY(!after.isEmpty() && after != before);
    std::ifstream in((after + QStringLiteral("/config.json")).toStdString());
    const nlohmann::json config = nlohmann::json::parse(in);
    QCOMPARE(config["recipe"]["activation_gradients"]["format"].get<std::string>(),
             std::string("fp16"));
    const nlohmann::json& overrides = config["recipe"]["overrides"];
    QCOMPARE(overrides.size(), std::size_t{1});
    QCOMPARE(overrides[0]["stage"].get<int>(), 1);
    QCOMPARE(overrides[0]["activation_gradients"]["format"].get<std::string>(),
             std::string("fp32"));
    QVERIFY(config["model"]["hidden"] == nlohmann::json({16})); // the run's own model
    // Export (the panel keeps the advice it applied while the window shows the run under it).
    QTemporaryDir out;
    panel->setPathPicker([&](const QString& kind) { return out.filePath(kind); });
    QCOMPARE(
        panel->exportTo(out.filePath(QStringLiteral("advice.yaml")), QStringLiteral("te-yaml")),
        QString());
    std::ifstream yaml(out.filePath(QStringLiteral("advice.yaml")).toStdString());
    const std::string text((std::istreambuf_iterator<char>(yaml)), {});
    QVERIFY2(text.find("DisableQuantizationGEMM") != std::string::npos, text.c_str());
    QVERIFY(panel->exportTo(QStringLiteral("/nonexistent/x.json"), QStringLiteral("recipe"))
                .contains(QStringLiteral("/nonexistent")));
}

void TestAdvisePanel::aWatchedRunExportsButDoesNotApply() {
    QTemporaryDir tmp;
    const std::string run = tmp.path().toStdString() + "/watched";
    const std::string other = tmp.path().toStdString() + "/other";
    for (const std::string& dir : {run, other}) {
        const std::vector<std::string> formats = {"fp8-e4m3", "bf16"};
        RunLog log(dir, watchedRun(formats), {"fc"});
        QuantStats q;
        q.counts[static_cast<std::size_t>(QuantClass::Normal)] = 100;
        const BlockStats blocks;
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (TensorRole role : {TensorRole::Weights, TensorRole::Activations,
                                TensorRole::ActivationGradients, TensorRole::WeightGradients})
            for (const std::string& f : formats)
                log.logRoleStats(1, 0, role, {f, q, blocks, 1.0, 1.0}, histograms);
        log.commit();
    }
    MainWindow window;
    window.setErrorSink(&m_error);
    QCOMPARE(window.openRun(QString::fromStdString(run)), QString());
    QCOMPARE(window.openAdvise(), QString());
    AdvisePanel* panel = window.advisePanel();
    QCOMPARE(panel->rolesTable()->rowCount(), 4);
    QCOMPARE(panel->rolesTable()->item(0, 2)->text(), QStringLiteral("fp8-e4m3"));
    QVERIFY(!panel->applyButton()->isEnabled());
    QVERIFY2(panel->applyButton()->toolTip().contains(QStringLiteral("emulate")),
             qPrintable(panel->applyButton()->toolTip()));
    QVERIFY2(panel->windowTitle().contains(QStringLiteral("watched")),
             qPrintable(panel->windowTitle()));
    // Issue 63 item 6: another run shown, the panel shown follows it (Export wrote the
    // previous run's advice); hidden, it forgets the advice.
    QCOMPARE(window.openRun(QString::fromStdString(other)), QString());
    QCOMPARE(panel->runDir(), QString::fromStdString(other));
    QVERIFY2(panel->windowTitle().contains(QStringLiteral("other")),
             qPrintable(panel->windowTitle()));
    QVERIFY(panel->advice().has_value());
    panel->hide();
    QCOMPARE(window.openRun(QString::fromStdString(run)), QString());
    QVERIFY(!panel->advice().has_value());
    QVERIFY(!panel->exportTo(tmp.filePath(QStringLiteral("advice.json")), QStringLiteral("recipe"))
                 .isEmpty());
}

void TestAdvisePanel::diagnosticsTabDrawsWhatTheRecordHolds() {
    QTemporaryDir tmp;
    const std::string run = tmp.path().toStdString() + "/watched";
    {
        const std::vector<std::string> formats = {"nvfp4", "fp8-e4m3"};
        RunLog log(run, watchedRun(formats), {"fc1", "fc2"});
        for (int step = 1; step <= 3; ++step) {
            log.logReportedStep(step, 1.0, 0.1, 1.0);
            const bool histograms = log.startStatistics(step);
            for (std::size_t stage = 0; stage < 2; ++stage) {
                QuantStats q;
                q.counts[static_cast<std::size_t>(QuantClass::Normal)] = 100;
                q.amax = static_cast<float>(std::ldexp(1.0, step + 4 * static_cast<int>(stage)));
                for (const std::string& f : formats)
                    log.logRoleStats(step, stage, TensorRole::Weights, {f, q, BlockStats{}},
                                     histograms);
                // Gradients at a loss scale of 2^10: their amax 2^10 larger.
                QuantStats g = q;
                g.amax = q.amax * 1024.0f;
                for (const std::string& f : formats)
                    log.logRoleStats(step, stage, TensorRole::ActivationGradients,
                                     {f, g, BlockStats{}, 1024.0, 1.0}, histograms);
                const TensorDiagnostics d{3.0 + step + 10.0 * static_cast<double>(stage), 100};
                log.logDiagnostics(step, stage, TensorRole::Weights, {}, &d, nullptr);
            }
            log.commit();
        }
    }
    MainWindow window;
    window.setErrorSink(&m_error);
    QCOMPARE(window.openRun(QString::fromStdString(run)), QString());
    DiagnosticsView* view = window.diagnosticsView();
    view->roleBox()->setCurrentIndex(0); // weights
    window.detailTabs()->setCurrentWidget(view);
    // log2 amax: step + 4 x layer.
    QCOMPARE(view->map()->valueAt(2, 0), 2.0);
    QCOMPARE(view->map()->valueAt(3, 1), 7.0);
    view->quantityBox()->setCurrentIndex(1); // kurtosis
    QVERIFY(view->quantity() == DiagnosticQuantity::Kurtosis);
    QCOMPARE(view->map()->valueAt(1, 0), 4.0);
    QCOMPARE(view->map()->valueAt(3, 1), 16.0);
    QVERIFY2(view->note().startsWith(QStringLiteral("kurtosis of weights")),
             qPrintable(view->note()));
    // The watcher records the kurtosis of activations only: the note gives that reason.
    view->roleBox()->setCurrentIndex(2);
    QVERIFY2(view->note().contains(QStringLiteral("records the kurtosis of activations only")),
             qPrintable(view->note()));
    // A gradient's log2 amax is the unscaled gradient's (issue 63 item 6: the loss scale moved
    // every layer 10 binades), and the note says so.
    view->quantityBox()->setCurrentIndex(0);
    QCOMPARE(view->map()->valueAt(2, 0), 2.0);
    QCOMPARE(view->map()->valueAt(3, 1), 7.0);
    QVERIFY2(view->note().contains(QStringLiteral("unscaled")), qPrintable(view->note()));
    // Weight gradients were not recorded: said so.
    view->roleBox()->setCurrentIndex(3);
    QVERIFY2(view->note().contains(QStringLiteral("records no statistics of weight gradients")),
             qPrintable(view->note()));
}

QTEST_MAIN(TestAdvisePanel)
#include "test_advise_panel.moc"
