// precision-lab-cli end to end: sweep: resume, verdicts, its children's configs, signals, Slurm's
// values.
#include "test_cli.h"

// A sweep: presets x a grid value x seeds, one folder per run, a table of means and intervals
// with verdicts against FP32. A run that fails (its data directory does not exist) is a failure
// in the table and the exit status; a second invocation skips every run that is done and the
// failed ones unless --rerun-failed; a run whose summary is gone (a killed sweep) runs again.
void TestCli::sweepResumesAndKeepsFailures() {
    QTemporaryDir dir;
    const QStringList sweep = QStringList{QStringLiteral("sweep"),
                                          QStringLiteral("--presets"),
                                          QStringLiteral("fp32,fp16-amp"),
                                          QStringLiteral("--seeds"),
                                          QStringLiteral("2"),
                                          QStringLiteral("--steps"),
                                          QStringLiteral("5"),
                                          QStringLiteral("--grid"),
                                          QStringLiteral("data.source=synthetic,/nonexistent"),
                                          QStringLiteral("--out"),
                                          dir.path()} +
                              kTinyRun;
    const Result first = runCli(sweep);
    QCOMPARE(first.exitCode, 3);
    QVERIFY2(first.err.contains("8 run(s) started"), first.err.constData());
    const QList<QByteArray> rows = fileLines(dir.filePath(QStringLiteral("sweep.csv")));
    QCOMPARE(rows.size(), 5); // a header and 2 presets x 2 sources
    QVERIFY2(rows[1].startsWith("fp32_data.source=synthetic,fp32,synthetic,2,"),
             rows[1].constData());
    QVERIFY2(rows[2].startsWith("fp32_data.source=/nonexistent,fp32,/nonexistent,0,") ||
                 rows[2].startsWith("fp32_data.source=-nonexistent,fp32,/nonexistent,0,"),
             rows[2].constData());
    QVERIFY2(rows[3].contains("indistinguishable at n = 2") || rows[3].contains(" by "),
             rows[3].constData());
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("sweep.json"))));
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("sweep.md"))));
    for (const char* chart :
         {"test_accuracy.png", "test_accuracy.svg", "test_accuracy.pdf", "test_loss.pdf"})
        QVERIFY2(QFileInfo(dir.filePath(QLatin1String(chart))).size() > 500, chart);

    const Result again = runCli(sweep);
    QCOMPARE(again.exitCode, 3);
    QVERIFY2(again.err.contains("0 run(s) started, 8 found done or failed earlier"),
             again.err.constData());
    QVERIFY2(again.err.contains("--rerun-failed"), again.err.constData());
    QCOMPARE(fileLines(dir.filePath(QStringLiteral("sweep.csv"))), rows);

    QVERIFY(QFile::remove(dir.filePath(QStringLiteral("fp16-amp_data.source=synthetic/seed-2/"
                                                      "summary.json"))));
    const Result resumed =
        runCli({QStringLiteral("sweep"), QStringLiteral("--file"),
                dir.filePath(QStringLiteral("sweep.json")), QStringLiteral("--out"), dir.path()});
    QVERIFY2(resumed.err.contains("1 run(s) started"), resumed.err.constData());
    const Result rerun = runCli(sweep + QStringList{QStringLiteral("--rerun-failed")});
    QVERIFY2(rerun.err.contains("4 run(s) started"), rerun.err.constData());
}

// Runs without a statistics step have counted nothing: the table shows no flushed shares (a
// dash; NaN in the CSV, with no verdict) instead of 0%, and still compares the accuracies.
void TestCli::sweepWithoutStatisticsShowsNoFlushedShares() {
    QTemporaryDir dir;
    const Result r = runCli(
        QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                    QStringLiteral("fp32,fp16-amp"), QStringLiteral("--seeds"), QStringLiteral("2"),
                    QStringLiteral("--steps"), QStringLiteral("5"), QStringLiteral("--set"),
                    QStringLiteral("train.stats_every=1000"), QStringLiteral("--out"), dir.path()} +
        kTinyRun);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> md = fileLines(dir.filePath(QStringLiteral("sweep.md")));
    const auto row = std::find_if(md.begin(), md.end(), [](const QByteArray& line) {
        return line.startsWith("| fp16-amp | 2 |");
    });
    QVERIFY(row != md.end());
    const QList<QByteArray> cells = row->split('|'); // "", point, runs, 8 metrics, 2 verdicts, ""
    QCOMPARE(cells.size(), 14);
    QVERIFY2(cells[3].trimmed().size() > 1 && !cells[3].contains("–"), row->constData());
    for (int c = 7; c <= 10; ++c) // the four flushed shares
        QVERIFY2(cells[c].trimmed() == "–", row->constData());
    QVERIFY2(cells[11].contains("indistinguishable") || cells[11].contains(" by "),
             row->constData());
    const QList<QByteArray> csv = fileLines(dir.filePath(QStringLiteral("sweep.csv")));
    QVERIFY2(csv.size() == 3 && csv[2].contains(",nan,") &&
                 csv[2].contains("\"no finite values\"") && !csv[1].contains("no finite"),
             csv.size() == 3 ? csv[2].constData() : "rows");
}

// End to end, a difference the verdict must name: FP16 with a static loss scale of 10^12 overflows
// on every step and skips them all, so its model stays as initialised while FP32's learns (test
// loss 3.16 ± 0.41 against 2.16 ± 0.03 over 3 seeds, the same under OPENBLAS_CORETYPE=Prescott).
// A verdict function that always said "indistinguishable" passed every other test.
void TestCli::sweepVerdictNamesARealDifference() {
    QTemporaryDir dir;
    const Result r =
        runCli(QStringList{QStringLiteral("compare"), QStringLiteral("--presets"),
                           QStringLiteral("fp32,fp16-static"), QStringLiteral("--seeds"),
                           QStringLiteral("3"), QStringLiteral("--steps"), QStringLiteral("100"),
                           QStringLiteral("--set"), QStringLiteral("scaling.scale=1e12"),
                           QStringLiteral("--out"), dir.path()} +
               kTinyRun);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> md = fileLines(dir.filePath(QStringLiteral("sweep.md")));
    const auto row = std::find_if(md.begin(), md.end(), [](const QByteArray& line) {
        return line.startsWith("| fp16-static | 3 |");
    });
    QVERIFY(row != md.end());
    const QList<QByteArray> cells = row->split('|'); // "", point, runs, 8 metrics, 2 verdicts, ""
    QCOMPARE(cells.size(), 14);
    QVERIFY2(cells[6].trimmed() == "1.0000 ± 0.0000", row->constData());     // every step skipped
    QVERIFY2(cells[12].trimmed().startsWith("worse by "), row->constData()); // test loss
    QVERIFY2(!cells[11].contains("better"), row->constData());               // test accuracy
}

// SIGINT to a sweep (as Ctrl-C gives it: the children are in groups of their own, so only the
// sweep gets it) is passed on once to each run, which writes its summary ("interrupted"); the
// sweep marks none failed, writes its table and exits 128 + 2; the runs count as still to do.
void TestCli::sweepStopsItsRunsOnASignal() {
    QTemporaryDir dir;
    QProcess sweep;
    sweep.start(QStringLiteral(PLAB_CLI_PATH),
                QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                            QStringLiteral("fp32"), QStringLiteral("--seeds"), QStringLiteral("3"),
                            QStringLiteral("--jobs"), QStringLiteral("2"),
                            QStringLiteral("--steps"), QStringLiteral("1000000"),
                            QStringLiteral("--out"), dir.path()} +
                    kTinyRun);
    QVERIFY(sweep.waitForStarted());
    const QString seed1 = dir.filePath(QStringLiteral("fp32/seed-1"));
    const QString seed2 = dir.filePath(QStringLiteral("fp32/seed-2"));
    for (int i = 0; i < 1500 && (recordedSteps(seed1) < 5 || recordedSteps(seed2) < 5); ++i)
        QTest::qWait(20);
    QVERIFY(recordedSteps(seed1) >= 5 && recordedSteps(seed2) >= 5);
    QCOMPARE(::kill(static_cast<pid_t>(sweep.processId()), SIGINT), 0);
    QVERIFY(sweep.waitForFinished(20000));
    const QByteArray err = sweep.readAllStandardError();
    QCOMPARE(sweep.exitCode(), 128 + SIGINT);
    QVERIFY2(err.contains("2 run(s) started"), err.constData());
    QVERIFY2(err.contains("stopped by signal 2"), err.constData());
    for (const QString& run : {seed1, seed2}) {
        const QString reason = readSummary(run).value(QStringLiteral("stop_reason")).toString();
        QVERIFY2(reason.startsWith(QStringLiteral("interrupted by SIGINT")), qPrintable(reason));
        QVERIFY(!QFile::exists(run + QStringLiteral(".failed")));
    }
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("fp32/seed-3")))); // never started
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("sweep.csv"))));
    // All three are still to do.
    const Result collected =
        runCli({QStringLiteral("sweep"), QStringLiteral("--file"),
                dir.filePath(QStringLiteral("sweep.json")), QStringLiteral("--out"), dir.path(),
                QStringLiteral("--collect")});
    QCOMPARE(collected.exitCode, 3);
    // Each as it is: the two interrupted say so (they said "interrupted" and then "not run
    // yet"), and that they go on from their checkpoints (they said "runs again"); the third was
    // never started.
    QCOMPARE(collected.err.count("stopped before its end; goes on from its checkpoint when the "
                                 "sweep resumes"),
             2);
    QCOMPARE(collected.err.count("not run yet"), 1);
}

// A run of a sweep trains what Sweep::runConfigJson says (which the app's Compare dialog uses):
// the config.json its `train` child wrote equals that config, for every grid point and seed.
void TestCli::sweepChildTrainsTheSweepsRunConfig() {
    using plab::Sweep, plab::SweepPoint;
    QTemporaryDir dir;
    const Result r =
        runCli(QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                           QStringLiteral("fp16-static,bf16"), QStringLiteral("--seeds"),
                           QStringLiteral("2"), QStringLiteral("--steps"), QStringLiteral("2"),
                           QStringLiteral("--grid"), QStringLiteral("scaling.scale=2^4,2^9"),
                           QStringLiteral("--set"), QStringLiteral("train.lr=0.03"),
                           QStringLiteral("--data"), QStringLiteral("synthetic"),
                           QStringLiteral("--out"), dir.path()} +
               kTinyRun);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const Sweep sweep =
        plab::readSweepFile(dir.filePath(QStringLiteral("sweep.json")).toStdString());
    int compared = 0;
    for (const SweepPoint& p : sweep.points())
        for (int seed = 1; seed <= sweep.seeds; ++seed) {
            std::ifstream in(sweep.runFolder(dir.path().toStdString(), p, seed) + "/config.json");
            const nlohmann::json written = nlohmann::json::parse(in, nullptr, false);
            const nlohmann::json expected =
                plab::configFromJson(sweep.runConfigJson(p, seed)).toJson();
            QVERIFY2(written == expected, qPrintable(QString::fromStdString(
                                              p.name(sweep) + " seed " + std::to_string(seed) +
                                              ": " + written.dump() + " vs " + expected.dump())));
            ++compared;
        }
    QCOMPARE(compared, 2 * 2 * 2);
}

// `compare --seeds N` and `sweep` over the same presets and seeds plan the same runs: every run
// folder's config.json is the same, and is the config the one planner made (planSweepRuns).
void TestCli::compareAndSweepTrainTheSameRunConfigs() {
    QTemporaryDir compareDir, sweepDir;
    const QStringList common =
        QStringList{QStringLiteral("--presets"), QStringLiteral("fp32,fp16-amp"),
                    QStringLiteral("--seeds"),   QStringLiteral("2"),
                    QStringLiteral("--steps"),   QStringLiteral("2"),
                    QStringLiteral("--set"),     QStringLiteral("train.lr=0.03")} +
        kTinyRun;
    const Result compare = runCli(QStringList{QStringLiteral("compare")} + common +
                                  QStringList{QStringLiteral("--out"), compareDir.path()});
    QVERIFY2(compare.exitCode == 0, compare.err.constData());
    const Result sweep = runCli(QStringList{QStringLiteral("sweep")} + common +
                                QStringList{QStringLiteral("--out"), sweepDir.path()});
    QVERIFY2(sweep.exitCode == 0, sweep.err.constData());
    const plab::Sweep planned =
        plab::readSweepFile(sweepDir.filePath(QStringLiteral("sweep.json")).toStdString());
    int compared = 0;
    for (const plab::SweepRun& run : plab::planSweepRuns(planned, sweepDir.path().toStdString())) {
        const auto read = [](const std::string& path) {
            std::ifstream in(path);
            return nlohmann::json::parse(in, nullptr, false);
        };
        const nlohmann::json bySweep = read(run.dir + "/config.json");
        const nlohmann::json byCompare =
            read(compareDir.path().toStdString() + "/" + run.relative + "/config.json");
        QVERIFY2(bySweep.is_object(), run.relative.c_str());
        QVERIFY2(bySweep == byCompare, run.relative.c_str());
        QVERIFY2(bySweep == plab::configFromJson(run.config).toJson(), run.relative.c_str());
        ++compared;
    }
    QCOMPARE(compared, 4);
}

// A preset or grid value listed twice would train two runs into one folder: refused with exit 2
// before anything runs (16 and 2^4 are one value).
void TestCli::duplicatePointsAreRefused() {
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("d"));
    const QList<QStringList> cases = {
        {QStringLiteral("compare"), QStringLiteral("--presets"), QStringLiteral("fp32,fp32")},
        {QStringLiteral("compare"), QStringLiteral("--presets"), QStringLiteral("fp32,fp32"),
         QStringLiteral("--seeds"), QStringLiteral("2")},
        {QStringLiteral("sweep"), QStringLiteral("--presets"), QStringLiteral("fp32,fp32")},
        {QStringLiteral("sweep"), QStringLiteral("--presets"), QStringLiteral("fp32"),
         QStringLiteral("--grid"), QStringLiteral("train.lr=0.1,0.1")},
        {QStringLiteral("sweep"), QStringLiteral("--presets"), QStringLiteral("fp16-static"),
         QStringLiteral("--grid"), QStringLiteral("scaling.scale=16,2^4")},
        {QStringLiteral("sweep"), QStringLiteral("--presets"), QStringLiteral("fp32"),
         QStringLiteral("--set"), QStringLiteral("train.lr=-1")},
    };
    for (const QStringList& c : cases) {
        const Result r = runCli(c + QStringList{QStringLiteral("--steps"), QStringLiteral("5"),
                                                QStringLiteral("--out"), out});
        QVERIFY2(r.exitCode == 2,
                 qPrintable(c.join(u' ') + QStringLiteral(": ") + QString::fromUtf8(r.err)));
        QVERIFY2(r.err.contains("twice") || r.err.contains("train.lr"), r.err.constData());
        QVERIFY2(!QFileInfo::exists(out + QStringLiteral("/fp32")), qPrintable(c.join(u' ')));
    }
}

// A sweep folder holds one sweep: another sweep into it is refused, naming what differs; the
// same sweep again resumes it.
void TestCli::sweepFolderHoldsOneSweep() {
    QTemporaryDir dir;
    const QStringList first =
        QStringList{
            QStringLiteral("sweep"), QStringLiteral("--presets"),    QStringLiteral("fp32"),
            QStringLiteral("--set"), QStringLiteral("train.lr=0.1"), QStringLiteral("--steps"),
            QStringLiteral("5"),     QStringLiteral("--out"),        dir.path()} +
        kTinyRun;
    QCOMPARE(runCli(first).exitCode, 0);
    const QByteArray sweepJson = fileLines(dir.filePath(QStringLiteral("sweep.json"))).join('\n');
    const Result other =
        runCli(QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                           QStringLiteral("bf16,fp32"), QStringLiteral("--steps"),
                           QStringLiteral("50"), QStringLiteral("--out"), dir.path()} +
               kTinyRun);
    QCOMPARE(other.exitCode, 2);
    QVERIFY2(other.err.contains("holds another sweep") && other.err.contains("steps 5 -> 50") &&
                 other.err.contains("presets"),
             other.err.constData());
    QCOMPARE(fileLines(dir.filePath(QStringLiteral("sweep.json"))).join('\n'), sweepJson);
    QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("bf16"))));
    const Result again = runCli(first);
    QCOMPARE(again.exitCode, 0);
    QVERIFY2(again.err.contains("0 run(s) started, 1 found done"), again.err.constData());

    // An edited sweep.json (steps 5 -> 7) is not answered with the 5-step runs: a run whose
    // config differs from its point is not done; --collect says how, the resume reruns it
    // (issue 52 item 32).
    const QString file = dir.filePath(QStringLiteral("sweep.json"));
    QFile edit(file);
    QVERIFY(edit.open(QIODevice::ReadOnly));
    QByteArray text = edit.readAll();
    edit.close();
    QVERIFY(text.contains("\"steps\": 5"));
    text.replace("\"steps\": 5", "\"steps\": 7");
    QVERIFY(edit.open(QIODevice::WriteOnly | QIODevice::Truncate));
    edit.write(text);
    edit.close();
    const QStringList fromFile = {QStringLiteral("sweep"), QStringLiteral("--file"), file,
                                  QStringLiteral("--out"), dir.path()};
    const Result collected = runCli(fromFile + QStringList{QStringLiteral("--collect")});
    QCOMPARE(collected.exitCode, 3);
    QVERIFY2(collected.err.contains("to run again, its run trained other settings "
                                    "(train.steps: 5 -> 7)"),
             collected.err.constData());
    const Result resumed = runCli(fromFile);
    QCOMPARE(resumed.exitCode, 0);
    QVERIFY2(resumed.err.contains("1 run(s) started, 0 found done"), resumed.err.constData());
    QCOMPARE(recordedSteps(dir.filePath(QStringLiteral("fp32/seed-1"))), 7);
    // `--file DIR/sweep.json` alone resumes the sweep in DIR (issue 65 item 14: it ran every
    // run again into ./runs/sweep).
    const Result alone = runCli({QStringLiteral("sweep"), QStringLiteral("--file"), file});
    QCOMPARE(alone.exitCode, 0);
    QVERIFY2(alone.err.contains("0 run(s) started, 1 found done"), alone.err.constData());
    QVERIFY(!QFileInfo::exists(QStringLiteral("runs/sweep/sweep.json")));
}

// kill -9 of a sweep stops its children too (they get SIGTERM when their parent dies and write
// their summaries); the resume then runs them again and marks nothing failed.
void TestCli::killedSweepLeavesNoOrphans() {
    QTemporaryDir dir;
    const QStringList args =
        QStringList{
            QStringLiteral("sweep"),   QStringLiteral("--presets"), QStringLiteral("fp32,fp16-amp"),
            QStringLiteral("--steps"), QStringLiteral("1000000"),   QStringLiteral("--jobs"),
            QStringLiteral("2"),       QStringLiteral("--out"),     dir.path()} +
        kTinyRun;
    QProcess sweep;
    sweep.start(QStringLiteral(PLAB_CLI_PATH), args);
    QVERIFY(sweep.waitForStarted());
    const std::string runs[] = {dir.path().toStdString() + "/fp32/seed-1",
                                dir.path().toStdString() + "/fp16-amp/seed-1"};
    // Both training (their first summary written), so that each has its signal handler.
    const auto training = [](const std::string& run) {
        return plab::runDirectoryLocked(run) &&
               QFileInfo::exists(QString::fromStdString(run + "/summary.json"));
    };
    QTRY_VERIFY_WITH_TIMEOUT(training(runs[0]) && training(runs[1]), 30000);
    ::kill(static_cast<pid_t>(sweep.processId()), SIGKILL);
    QVERIFY(sweep.waitForFinished(10000));
    // The children stop at their next step and release their folders.
    QTRY_VERIFY_WITH_TIMEOUT(
        !plab::runDirectoryLocked(runs[0]) && !plab::runDirectoryLocked(runs[1]), 20000);
    for (const std::string& run : runs) {
        std::ifstream in(run + "/summary.json");
        const nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
        QVERIFY2(summary.value("stop_reason", std::string()).find("SIGTERM") != std::string::npos,
                 summary.dump().c_str());
        QVERIFY(plab::sweepRunState(run, nlohmann::json::object()) == plab::SweepRunState::ToRun);
    }
    QVERIFY(!QFileInfo::exists(QString::fromStdString(runs[0] + ".failed")));
}

// Every Slurm option's value is written into the job script's #SBATCH lines: a newline in one
// would start a command line of its own. Each is refused by name, before any script is written.
void TestCli::slurmValuesCannotReachTheScript_data() {
    QTest::addColumn<QString>("option");
    QTest::addColumn<QString>("value");
    const QString hostile = QStringLiteral("gpu\ntouch PWNED");
    QTest::newRow("partition") << QStringLiteral("--partition") << hostile;
    QTest::newRow("time") << QStringLiteral("--time") << QStringLiteral("1:00:00\ntouch PWNED");
    QTest::newRow("mem") << QStringLiteral("--mem") << QStringLiteral("2G\ntouch PWNED");
    QTest::newRow("sbatch-arg") << QStringLiteral("--sbatch-arg")
                                << QStringLiteral("--account=lab\ntouch PWNED");
    QTest::newRow("carriage return")
        << QStringLiteral("--partition") << QStringLiteral("gpu\rtouch PWNED");
    QTest::newRow("bad time") << QStringLiteral("--time") << QStringLiteral("an hour");
    QTest::newRow("out") << QStringLiteral("--out") << QStringLiteral("\ntouch PWNED");
}

void TestCli::slurmValuesCannotReachTheScript() {
    QFETCH(QString, option);
    QFETCH(QString, value);
    QTemporaryDir dir;
    const QString out = dir.path() + QStringLiteral("/sweep");
    QStringList args = {QStringLiteral("sweep"), QStringLiteral("--backend"),
                        QStringLiteral("slurm"), QStringLiteral("--presets"),
                        QStringLiteral("fp32"),  QStringLiteral("--steps"),
                        QStringLiteral("20"),    QStringLiteral("--no-wait")};
    if (option == QStringLiteral("--out"))
        args << QStringLiteral("--out") << out + value;
    else
        args << QStringLiteral("--out") << out << option << value;
    const Result r = runCli(args);
    QVERIFY2(r.exitCode != 0, r.err.constData());
    const QByteArray message = r.err.trimmed();
    QVERIFY2(message.contains(option.toUtf8()), message.constData());
    QVERIFY2(!message.contains('\n'), message.constData()); // one line, the value shown escaped
    QDirIterator it(dir.path(), QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        QFile f(it.next());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY2(!f.readAll().contains("\ntouch PWNED"), qPrintable(f.fileName()));
    }
}
