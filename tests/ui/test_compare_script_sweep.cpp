// The Compare dialog on a sweep of a user's script (sweep --recipes ... -- COMMAND): its records
// written here by the recorder the script's children use (WatchRecorder), as a child would.
#include "compare_dialog.h"
#include "record/run_record.h"
#include "sweep/script_sweep.h"
#include "sweep/sweep_run.h"
#include "torch_runs/watch_recorder.h"
#include "train/train_config.h"

#include <QHeaderView>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <qcustomplot.h>

#include <memory>

using namespace plab;

class TestCompareScriptSweep : public QObject {
    Q_OBJECT
private slots:
    void showsTheScriptsMetricsAndFollowsTheSweep();
};

namespace {

// A run as a script child records it: 5 steps, a loss falling from `start`, its own val_loss.
std::unique_ptr<WatchRecorder> startRun(const std::string& dir) {
    WatchSettings settings;
    settings.formats = {"bf16"};
    settings.stageNames = {"fc"};
    settings.every = 1000;
    return std::make_unique<WatchRecorder>(dir, settings);
}

void recordSteps(WatchRecorder& run, double start, double valLoss) {
    for (int step = 1; step <= 5; ++step) {
        WatchedStep s;
        s.step = step;
        s.loss = start / step;
        s.metrics = {{"val_loss", valLoss}};
        QVERIFY(run.submit(std::move(s)));
    }
    run.close("completed", true);
}

int columnOf(const QTableWidget* table, const QString& header) {
    for (int c = 0; c < table->columnCount(); ++c)
        if (table->horizontalHeaderItem(c)->text() == header)
            return c;
    return -1;
}

} // namespace

// The table's columns are the script's metrics (its final loss, val_loss) with their verdicts
// against the baseline recipe, the plot its final loss; an opened sweep whose last run another
// process still writes is followed until that run ends; a double-click shows a member's run.
void TestCompareScriptSweep::showsTheScriptsMetricsAndFollowsTheSweep() {
    QTemporaryDir runs;
    const std::string dir = runs.path().toStdString() + "/mine";
    Sweep sweep;
    sweep.command = {"/usr/bin/python3", "train.py"};
    sweep.seeds = 2;
    resolveScriptRecipes(sweep, {"fp32", "bf16"});
    sweep.baseline = "fp32";
    sweep.steps = 0;
    claimSweepFolder(dir, sweep);
    const std::vector<SweepRun> planned = planSweepRuns(sweep, dir);
    QCOMPARE(planned.size(), std::size_t{4});
    // fp32's two seeds and bf16's first are done; bf16's second is still being written.
    recordSteps(*startRun(planned[0].dir), 2.0, 0.50);
    recordSteps(*startRun(planned[1].dir), 2.1, 0.52);
    recordSteps(*startRun(planned[2].dir), 2.0, 0.90);
    std::unique_ptr<WatchRecorder> going = startRun(planned[3].dir);

    CompareDialog dialog(TrainConfig{}, nullptr, runs.path());
    QSignalSpy ended(&dialog, &CompareDialog::comparisonEnded);
    QCOMPARE(dialog.openSweep(QString::fromStdString(dir)), QString());
    QTableWidget* table = dialog.resultsTable();
    QTRY_COMPARE_WITH_TIMEOUT(table->rowCount(), 2, 10000);
    const int runsColumn = 1, verdict = columnOf(table, QStringLiteral("vs fp32: val_loss"));
    QVERIFY(verdict > 0 && columnOf(table, QStringLiteral("val_loss")) > 0);
    QCOMPARE(table->item(1, 0)->text(), QStringLiteral("bf16"));
    QCOMPARE(table->item(1, runsColumn)->text(), QStringLiteral("1"));
    QCOMPARE(dialog.metricsPlot()->yAxis->label(), QStringLiteral("final loss"));
    QCOMPARE(ended.count(), 0); // followed: bf16/seed-2 is locked by its writer

    recordSteps(*going, 2.05, 0.92);
    going.reset();
    QVERIFY(ended.wait(20000)); // read again, then ended with every run done
    QCOMPARE(table->item(1, runsColumn)->text(), QStringLiteral("2"));
    QVERIFY2(table->item(1, verdict)->text().startsWith(QLatin1String("worse by")),
             qPrintable(table->item(1, verdict)->text()));
    QCOMPARE(dialog.lossPlot()->graph(0)->data()->size(), 5); // fp32's mean over its seeds

    QSignalSpy chosen(&dialog, &CompareDialog::runChosen);
    table->cellDoubleClicked(1, 0);
    QCOMPARE(chosen.count(), 1);
    QCOMPARE(chosen.front().front().toString(), QString::fromStdString(planned[2].dir));
}

QTEST_MAIN(TestCompareScriptSweep)
#include "test_compare_script_sweep.moc"
