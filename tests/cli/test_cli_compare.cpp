// precision-lab-cli end to end: compare and export: the table and plots, failed and diverged runs,
// resume.
#include "test_cli.h"

void TestCli::compareWritesTableAndPlots() {
    QTemporaryDir dir;
    const Result r =
        runCli(QStringList{QStringLiteral("compare"), QStringLiteral("--presets"),
                           QStringLiteral("fp32,fp16-noscale,fp16-amp"), QStringLiteral("--steps"),
                           QStringLiteral("20"), QStringLiteral("--out"), dir.path()} +
               kTinyRun);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> rows = fileLines(dir.path() + QStringLiteral("/compare.csv"));
    QCOMPARE(rows.size(), 4); // header + three presets
    QVERIFY(rows[1].startsWith("fp32,completed,"));
    QVERIFY(rows[3].startsWith("fp16-amp,completed,"));
    QVERIFY(r.out.contains("| fp16-noscale | completed |"));
    // Each chart as PNG, SVG and PDF (Cairo): the files' signatures, and three curves drawn.
    for (const char* chart : {"/loss", "/flushed"}) {
        const auto head = [&](const char* ext) {
            QFile f(dir.path() + QLatin1String(chart) + QLatin1String(ext));
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        QVERIFY(head(".png").startsWith("\x89PNG"));
        QVERIFY(head(".pdf").startsWith("%PDF"));
        const QByteArray svg = head(".svg");
        QVERIFY(svg.contains("<svg"));
        QVERIFY2(svg.count("<path") >= 3, svg.left(200).constData());
    }
    // With --seeds, a compare is a sweep over seeds: intervals and verdicts against fp32.
    QTemporaryDir seeds;
    const Result swept =
        runCli(QStringList{QStringLiteral("compare"), QStringLiteral("--presets"),
                           QStringLiteral("fp32,fp16-amp"), QStringLiteral("--seeds"),
                           QStringLiteral("2"), QStringLiteral("--steps"), QStringLiteral("5"),
                           QStringLiteral("--out"), seeds.path()} +
               kTinyRun);
    QVERIFY2(swept.exitCode == 0, swept.err.constData());
    const QList<QByteArray> points = fileLines(seeds.filePath(QStringLiteral("sweep.csv")));
    QCOMPARE(points.size(), 3);
    QVERIFY2(points[2].startsWith("fp16-amp,fp16-amp,2,"), points[2].constData());
    const Result bad = runCli(
        {QStringLiteral("compare"), QStringLiteral("--presets"), QStringLiteral("fp32,fp7")});
    QVERIFY(bad.exitCode > 0);
    QVERIFY(bad.err.contains("preset \"fp7\""));
}

// One child that cannot run (its folder is a file) is a row marked failed with its reason, its
// stderr is kept, the others' results stand, and the exit status says some failed.
void TestCli::compareKeepsFailedRunsInTheTable() {
    QTemporaryDir dir;
    QFile blocker(dir.filePath(QStringLiteral("fp16-amp")));
    QVERIFY(blocker.open(QIODevice::WriteOnly) && blocker.write("x") == 1);
    blocker.close();
    const QStringList compare = QStringList{QStringLiteral("compare"),
                                            QStringLiteral("--presets"),
                                            QStringLiteral("fp32,fp16-amp"),
                                            QStringLiteral("--steps"),
                                            QStringLiteral("5"),
                                            QStringLiteral("--out"),
                                            dir.path()} +
                                kTinyRun;
    const Result r = runCli(compare);
    QCOMPARE(r.exitCode, 3);
    const QList<QByteArray> rows = fileLines(dir.filePath(QStringLiteral("compare.csv")));
    QCOMPARE(rows.size(), 3);
    QVERIFY2(rows[1].startsWith("fp32,completed,"), rows[1].constData());
    QVERIFY2(rows[2].startsWith("fp16-amp,failed,nan,"), rows[2].constData());
    QVERIFY2(rows[2].contains("exit 2: ") && rows[2].contains("fp16-amp"), rows[2].constData());
    QVERIFY(fileLines(dir.filePath(QStringLiteral("fp16-amp.stderr.log"))).size() >= 1);
    // A share the failed run has none of reads "nan", not "nan%" (issue 65, minor).
    const QByteArray md = fileLines(dir.filePath(QStringLiteral("compare.md"))).join('\n');
    QVERIFY2(md.contains("| fp16-amp | failed | nan |") && !md.contains("nan%"), md.constData());
    // The same compare again resumes it: the done run is kept, the failed one runs again
    // (issue 65 item 11: it was refused, and --overwrite restarted every run from step 0).
    const Result again = runCli(compare);
    QCOMPARE(again.exitCode, 3);
    QVERIFY2(again.err.contains("fp32 found done earlier"), again.err.constData());
    // A compare of other presets into it is another compare: it needs --overwrite.
    QStringList other = compare;
    other[2] = QStringLiteral("fp32,bf16");
    const Result otherCompare = runCli(other);
    QCOMPARE(otherCompare.exitCode, 2);
    QVERIFY2(otherCompare.err.contains("holds an earlier compare of fp32,fp16-amp") &&
                 otherCompare.err.contains("--overwrite"),
             otherCompare.err.constData());
}

// lr 1e6 makes FP32 and FP16 diverge to a NaN model: their rows say "diverged" (not "ended
// early"), and a NaN model has no test accuracy (it was 9.90%: an argmax over NaN logits).
void TestCli::compareSaysWhichRunsDiverged() {
    QTemporaryDir dir;
    const Result r =
        runCli(QStringList{QStringLiteral("compare"), QStringLiteral("--presets"),
                           QStringLiteral("fp32,fp16-static"), QStringLiteral("--steps"),
                           QStringLiteral("40"), QStringLiteral("--set"),
                           QStringLiteral("train.lr=1e6"), QStringLiteral("--out"), dir.path()} +
               kTinyRun);
    QVERIFY2(r.exitCode == 0 || r.exitCode == 3, r.err.constData());
    const QList<QByteArray> rows = fileLines(dir.path() + QStringLiteral("/compare.csv"));
    QCOMPARE(rows.size(), 3);
    for (int i = 1; i < 3; ++i) {
        const QList<QByteArray> cells = rows[i].split(',');
        QCOMPARE(cells[1], QByteArray("diverged"));
        QCOMPARE(cells[3], QByteArray("nan")); // test loss
        QCOMPARE(cells[5], QByteArray("nan")); // test accuracy
    }
    QVERIFY2(r.out.contains("| fp32 | diverged |"), r.out.constData());
}

// A run's, a compare's and a sweep's folder each refuse the other two commands (with
// --overwrite too), naming what they hold; before, one folder ended holding all three.
void TestCli::aFolderOfAnotherKindIsRefused() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    const QString compared = dir.filePath(QStringLiteral("compare"));
    const QString swept = dir.filePath(QStringLiteral("sweep"));
    const QStringList tiny = QStringList{QStringLiteral("--steps"), QStringLiteral("2")} + kTinyRun;
    QCOMPARE(
        runCli(QStringList{QStringLiteral("train"), QStringLiteral("--out"), run} + tiny).exitCode,
        0);
    QCOMPARE(runCli(QStringList{QStringLiteral("compare"), QStringLiteral("--presets"),
                                QStringLiteral("fp32"), QStringLiteral("--out"), compared} +
                    tiny)
                 .exitCode,
             0);
    QCOMPARE(runCli(QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                                QStringLiteral("fp32"), QStringLiteral("--out"), swept} +
                    tiny)
                 .exitCode,
             0);
    const struct {
        QStringList args;
        const char* says;
    } cases[] = {
        {{"compare", "--presets", "fp32", "--out", run}, "holds a run's record (run.sqlite)"},
        {{"sweep", "--presets", "fp32", "--out", run}, "holds a run's record (run.sqlite)"},
        {{"train", "--out", compared, "--overwrite"}, "holds a compare's record (compare.csv)"},
        {{"sweep", "--presets", "fp32", "--out", compared}, "holds a compare's record"},
        {{"train", "--out", swept, "--overwrite"}, "holds a sweep's record (sweep.json)"},
        {{"compare", "--presets", "fp32", "--out", swept, "--overwrite"}, "holds a sweep's record"},
    };
    for (const auto& c : cases) {
        const Result r = runCli(c.args + tiny);
        QVERIFY2(r.exitCode == 2, qPrintable(c.args.join(u' ') + QStringLiteral(" -> ") +
                                             QString::number(r.exitCode) + QLatin1Char(' ') +
                                             QString::fromUtf8(r.err)));
        QVERIFY2(r.err.contains(c.says), r.err.constData());
    }
    QVERIFY(!QFile::exists(swept + QStringLiteral("/.lock"))); // nothing written into them
    QVERIFY(!QFile::exists(compared + QStringLiteral("/metrics.csv")));
}

// `export` of something that is not a run record: a one-line error naming the file, exit 2.
void TestCli::exportRefusesWhatIsNotARecord() {
    QTemporaryDir dir;
    const Result missing = runCli({QStringLiteral("export"), dir.path()});
    QCOMPARE(missing.exitCode, 2);
    QVERIFY2(missing.err.contains("run.sqlite: no run record here"), missing.err.constData());
    QFile fake(dir.filePath(QStringLiteral("run.sqlite")));
    QVERIFY(fake.open(QIODevice::WriteOnly) && fake.write(QByteArray(4096, 'x')) == 4096);
    fake.close();
    const Result garbage = runCli({QStringLiteral("export"), dir.path()});
    QCOMPARE(garbage.exitCode, 2);
    QVERIFY2(garbage.err.trimmed().count('\n') == 0 &&
                 garbage.err.contains("is not a readable run record"),
             garbage.err.constData());
}

// compare names itself and what it takes: a run folder given as a preset is said to be one
// (compare trains presets), and presets without fp32 need no --baseline the user never typed.
void TestCli::compareSpeaksForItself() {
    QTemporaryDir dir;
    const QString runs = dir.filePath(QStringLiteral("a-run"));
    QVERIFY(QDir().mkpath(runs));
    const Result folder = runCli({QStringLiteral("compare"), QStringLiteral("--presets"),
                                  runs + QStringLiteral(",bf16"), QStringLiteral("--out"),
                                  dir.filePath(QStringLiteral("out"))});
    QCOMPARE(folder.exitCode, 2);
    QVERIFY2(folder.err.contains("compare: --presets " + runs.toUtf8() + " is a folder"),
             folder.err.constData());
    QVERIFY2(!folder.err.contains("sweep") && !folder.err.contains("--baseline"),
             folder.err.constData());
    const Result noFp32 = runCli(
        QStringList{QStringLiteral("compare"), QStringLiteral("--presets"),
                    QStringLiteral("bf16,fp16-amp"), QStringLiteral("--steps"), QStringLiteral("2"),
                    QStringLiteral("--out"), dir.filePath(QStringLiteral("two"))} +
        kTinyRun);
    QVERIFY2(noFp32.exitCode == 0, noFp32.err.constData());
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("two/compare.csv"))));
}

// Rerunning a killed compare resumes it, as sweep does: the run that ended keeps its record,
// the interrupted one runs again; nothing is marked failed (it was: "holds an earlier run",
// .failed markers, exit 3). A finished run with other settings is not replaced without
// --overwrite (issue 52 item 35).
void TestCli::killedCompareResumes() {
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("c"));
    const QStringList args = QStringList{QStringLiteral("compare"),
                                         QStringLiteral("--presets"),
                                         QStringLiteral("fp32,bf16"),
                                         QStringLiteral("--steps"),
                                         QStringLiteral("5"),
                                         QStringLiteral("--out"),
                                         out} +
                             kTinyRun;
    QCOMPARE(runCli(args).exitCode, 0);
    // What a kill mid-run leaves: no table, fp32's run interrupted at step 3.
    QVERIFY(QFile::remove(out + QStringLiteral("/compare.csv")));
    QVERIFY(recordExec(out + QStringLiteral("/fp32"), "DELETE FROM steps WHERE step > 3"));
    QFile summary(out + QStringLiteral("/fp32/summary.json"));
    QVERIFY(summary.open(QIODevice::WriteOnly | QIODevice::Truncate));
    summary.write(
        R"({"finished": false, "steps": 3, "stop_reason": "interrupted by SIGTERM at step 3"})");
    summary.close();
    const QByteArray bf16Before = readSummary(out + QStringLiteral("/bf16"))
                                      .value(QStringLiteral("wall_seconds"))
                                      .toVariant()
                                      .toByteArray();

    const Result resumed = runCli(args);
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    QVERIFY2(resumed.err.contains("compare: fp32 started") &&
                 resumed.err.contains("compare: bf16 found done earlier") &&
                 !resumed.err.contains("FAILED"),
             resumed.err.constData());
    QVERIFY(!QFileInfo::exists(out + QStringLiteral("/fp32.failed")));
    QCOMPARE(recordedSteps(out + QStringLiteral("/fp32")), 5);
    QCOMPARE(readSummary(out + QStringLiteral("/bf16"))
                 .value(QStringLiteral("wall_seconds"))
                 .toVariant()
                 .toByteArray(),
             bf16Before); // kept, not trained again
    QVERIFY2(resumed.out.contains("| fp32 | completed") &&
                 resumed.out.contains("| bf16 | completed"),
             resumed.out.constData());

    QVERIFY(QFile::remove(out + QStringLiteral("/compare.csv")));
    QStringList other = args;
    other[other.indexOf(QStringLiteral("5"))] = QStringLiteral("6");
    const Result refused = runCli(other);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("holds a run with other settings (train.steps: 5 -> 6)"),
             refused.err.constData());
    QCOMPARE(recordedSteps(out + QStringLiteral("/fp32")), 5);
}
