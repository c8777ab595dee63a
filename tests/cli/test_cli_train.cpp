// precision-lab-cli end to end: train: its run folder and logs, bad settings, divergence, resume
// from a checkpoint.
#include "test_cli.h"

void TestCli::trainRunsAndLogs() {
    QTemporaryDir dir;
    const QString out = dir.path() + QStringLiteral("/run");
    const Result r = runCli(QStringList{QStringLiteral("train"), QStringLiteral("--preset"),
                                        QStringLiteral("fp16-static"), QStringLiteral("--steps"),
                                        QStringLiteral("15"), QStringLiteral("--out"), out} +
                            kTinyRun);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(r.out.contains("\"finished\": true"));
    QVERIFY(r.err.contains("step 15/15")); // the progress line
    QCOMPARE(fileLines(out + QStringLiteral("/metrics.csv")).size(), 16);
    QVERIFY(QFile::exists(out + QStringLiteral("/config.json")));
    QVERIFY(fileLines(out + QStringLiteral("/layers.csv")).size() > 15);
    QVERIFY(fileLines(out + QStringLiteral("/events.jsonl")).size() >= 2);
}

void TestCli::trainBadInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mustMention");
    QTest::newRow("unknown key") << QStringList{QStringLiteral("--set"),
                                                QStringLiteral("train.lrr=1")}
                                 << "config.train.lrr: unknown key";
    QTest::newRow("bad value") << QStringList{QStringLiteral("--set"),
                                              QStringLiteral("train.batch_size=-4")}
                               << "config.train.batch_size";
    QTest::newRow("bad preset") << QStringList{QStringLiteral("--preset"), QStringLiteral("fp7")}
                                << "preset \"fp7\"";
    QTest::newRow("missing data") << QStringList{QStringLiteral("--data"),
                                                 QStringLiteral("/nonexistent/fm")}
                                  << "/nonexistent/fm";
    QTest::newRow("missing config")
        << QStringList{QStringLiteral("--config"), QStringLiteral("/nonexistent.json")}
        << "/nonexistent.json: cannot open";
    // Config documents that are JSON but not a config (written by trainBadInput).
    QTest::newRow("config nested 60000 deep")
        << QStringList{QStringLiteral("@deep")} << "nested deeper than 16 levels";
    QTest::newRow("config is an array") << QStringList{QStringLiteral("@[1,2,3]")}
                                        << "the top level must be a JSON object ({...}), not array";
    QTest::newRow("config is a string")
        << QStringList{QStringLiteral("@\"x\"")}
        << "the top level must be a JSON object ({...}), not string";
    QTest::newRow("config is null") << QStringList{QStringLiteral("@null")}
                                    << "the top level must be a JSON object ({...}), not null";
    QTest::newRow("config with a duplicate key")
        << QStringList{QStringLiteral("@{\"seed\": 1, \"seed\": 2}")}
        << "key \"seed\" appears twice";
}

void TestCli::trainBadInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, mustMention);
    QTemporaryDir dir;
    if (args.size() == 1 && args[0].startsWith(QLatin1Char('@'))) { // a config document
        QByteArray text = args[0].mid(1).toUtf8();
        if (text == "deep")
            text = QByteArray("{\"a\":").repeated(60000) + "1" + QByteArray("}").repeated(60000);
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write(text) == text.size());
        f.close();
        args = QStringList{QStringLiteral("--config"), path};
        mustMention = path + QStringLiteral(": ") + mustMention;
    }
    const Result r =
        runCli(QStringList{QStringLiteral("train"), QStringLiteral("--steps"), QStringLiteral("5"),
                           QStringLiteral("--out"), dir.filePath(QStringLiteral("run"))} +
               args);
    QCOMPARE(r.exitCode, 2);
    const QByteArray err = r.err.trimmed();
    QVERIFY2(!err.contains('\n'), err.constData());
    QVERIFY2(QString::fromUtf8(err).contains(mustMention), err.constData());
}

void TestCli::trainDivergenceExitsCleanly() {
    QTemporaryDir dir;
    const Result r = runCli(
        QStringList{QStringLiteral("train"), QStringLiteral("--steps"), QStringLiteral("50"),
                    QStringLiteral("--set"),
                    QStringLiteral(
                        "recipe.weight_gradients={\"format\":\"fp8-e4m3\",\"overflow\":\"inf\"}"),
                    QStringLiteral("--set"), QStringLiteral("scaling.scale=1e12"),
                    QStringLiteral("--out"), dir.filePath(QStringLiteral("run"))} +
        kTinyRun);
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.contains("diverged at step 1"), r.err.constData());
}

// A GPT whose activations no machine holds (a terabyte here) is refused before anything is
// allocated, naming the key and the estimate; it was killed by the OOM killer at 23 GB and left
// a run folder behind (issue 42 item 12).
void TestCli::configTooLargeForTheMachineIsRefused() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    const Result r =
        runCli({QStringLiteral("train"), QStringLiteral("--device"), QStringLiteral("cpu"),
                QStringLiteral("--set"), QStringLiteral("model.type=gpt"), QStringLiteral("--set"),
                QStringLiteral("model.context=1024"), QStringLiteral("--set"),
                QStringLiteral("train.batch_size=65536"), QStringLiteral("--out"), run});
    QCOMPARE(r.exitCode, 2);
    const QByteArray last = r.err.trimmed().split('\n').last();
    QVERIFY2(last.startsWith("precision-lab-cli: config.train.batch_size: 65536 windows of 1024 "
                             "bytes need about ") &&
                 last.contains(" of memory is available: lower train.batch_size"),
             r.err.constData());
    QVERIFY(!QFileInfo::exists(run + QStringLiteral("/run.sqlite")));
}

// Test metrics never measured are null, not 0 (a test loss of 0 reads as a perfect model): a run
// killed before its first evaluation, recovered by `export` (issue 42 item 6).
void TestCli::neverMeasuredTestMetricsAreNull() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH),
            trainArgs(run, "1000000",
                      {QStringLiteral("--set"), QStringLiteral("train.eval_every=100000000")}));
    QVERIFY(p.waitForStarted());
    for (int i = 0; i < 1500 && recordedSteps(run) < 3; ++i)
        QTest::qWait(20);
    p.kill();
    QVERIFY(p.waitForFinished());
    QVERIFY(recordedSteps(run) >= 3);
    QCOMPARE(recordQuery(run, "SELECT count(*) FROM steps WHERE test_loss IS NOT NULL"), 0);
    // The summary export derives (written with the exports, never into the run it reads).
    const QString out = dir.filePath(QStringLiteral("exported"));
    const Result exported = runCli({QStringLiteral("export"), run, QStringLiteral("--out"), out});
    QVERIFY2(exported.exitCode == 0, exported.err.constData());
    const QJsonObject s = readSummary(out);
    QVERIFY2(s.value(QStringLiteral("test_loss")).isNull(),
             QJsonDocument(s).toJson(QJsonDocument::Compact).constData());
    QVERIFY(s.value(QStringLiteral("test_accuracy")).isNull());
    QVERIFY(s.value(QStringLiteral("final_train_loss")).isDouble());
}

// A run stopped by a signal leaves a checkpoint; `train --resume --out DIR` goes on from it (its
// config.json's config), and the record then holds each step once with the losses of a run that
// was never stopped; stopped again, it goes on again. A folder without a checkpoint is refused
// with the reason.
void TestCli::stoppedTrainResumesFromItsCheckpoint() {
    QTemporaryDir dir;
    const QString stopped = dir.filePath(QStringLiteral("stopped"));
    const QString whole = dir.filePath(QStringLiteral("whole"));
    const QStringList stochastic = {QStringLiteral("--preset"),
                                    QStringLiteral("fp8-e5m2-mellempudi")};
    const auto startRun = [&](QProcess& p, const QStringList& args) {
        p.start(QStringLiteral(PLAB_CLI_PATH), args);
        return p.waitForStarted();
    };
    const auto stopWhen = [](QProcess& p, const QString& run, qint64 steps) {
        return signalWhenRecorded(p, run, steps, SIGTERM) && p.exitCode() == 128 + SIGTERM;
    };
    QProcess first;
    QVERIFY(startRun(first, trainArgs(stopped, "1000000", stochastic)));
    QVERIFY(stopWhen(first, stopped, 6));
    QVERIFY(QFileInfo::exists(stopped + QStringLiteral("/checkpoint.bin")));
    const qint64 firstStop = readSummary(stopped).value(QStringLiteral("steps")).toInteger();

    QProcess second;
    QVERIFY(startRun(second, {QStringLiteral("train"), QStringLiteral("--resume"),
                              QStringLiteral("--out"), stopped}));
    QVERIFY(stopWhen(second, stopped, firstStop + 10));
    const QByteArray secondErr = second.readAllStandardError();
    QVERIFY2(secondErr.contains("from its checkpoint of step " + QByteArray::number(firstStop)),
             secondErr.constData());
    // The progress line starts from the resumed steps (it said "step 0/1000000" first).
    QVERIFY2(!secondErr.contains("step 0/") && secondErr.contains("/1000000  epoch"),
             secondErr.constData());
    const qint64 secondStop = readSummary(stopped).value(QStringLiteral("steps")).toInteger();
    QVERIFY(secondStop >= firstStop + 10);

    QProcess reference;
    QVERIFY(startRun(reference, trainArgs(whole, "1000000", stochastic)));
    QVERIFY(stopWhen(reference, whole, secondStop));
    const QList<QByteArray> resumedRows = fileLines(stopped + QStringLiteral("/metrics.csv"));
    const QList<QByteArray> wholeRows = fileLines(whole + QStringLiteral("/metrics.csv"));
    QCOMPARE(resumedRows.size(), 1 + secondStop); // each step once
    QVERIFY(wholeRows.size() >= resumedRows.size());
    for (qint64 i = 1; i <= secondStop; ++i) {
        const QList<QByteArray> a = resumedRows[i].split(','), b = wholeRows[i].split(',');
        QCOMPARE(a[0], QByteArray::number(i)); // step
        QCOMPARE(a[2], b[2]);                  // loss, as printed: every digit
        QCOMPARE(a[4], b[4]);                  // scale
    }

    const Result none = runCli({QStringLiteral("train"), QStringLiteral("--resume"),
                                QStringLiteral("--preset"), QStringLiteral("fp32"),
                                QStringLiteral("--out"), dir.filePath(QStringLiteral("none"))});
    QVERIFY(none.exitCode != 0);
    QVERIFY2(none.err.contains("cannot resume: it holds no checkpoint"), none.err.constData());
}

// kill -9 leaves no checkpoint at the end, but train.checkpoint_every's last one: --resume goes
// on from it, the rows the killed run wrote after it removed, each step then once with the
// losses of the run never killed.
void TestCli::killedTrainResumesFromItsLastCheckpoint() {
    QTemporaryDir dir;
    const QString killed = dir.filePath(QStringLiteral("killed"));
    const QString whole = dir.filePath(QStringLiteral("whole"));
    const QStringList every7 = {QStringLiteral("--set"),
                                QStringLiteral("train.checkpoint_every=7")};
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH), trainArgs(killed, "1000000", every7));
    QVERIFY(p.waitForStarted());
    QVERIFY(signalWhenRecorded(p, killed, 20, SIGKILL));
    const qint64 killedAt = recordedSteps(killed);
    QVERIFY(killedAt >= 20);

    QProcess resumed;
    resumed.start(
        QStringLiteral(PLAB_CLI_PATH),
        {QStringLiteral("train"), QStringLiteral("--resume"), QStringLiteral("--out"), killed});
    QVERIFY(resumed.waitForStarted());
    QVERIFY(signalWhenRecorded(resumed, killed, killedAt + 10, SIGTERM));
    const QByteArray err = resumed.readAllStandardError();
    const qsizetype at = err.indexOf("from its checkpoint of step ");
    QVERIFY2(at >= 0, err.constData());
    const qint64 from = err.mid(at + 28).split('\n').front().toLongLong();
    QVERIFY2(from % 7 == 0 && from > killedAt - 7 - 1 && from <= killedAt, err.constData());
    const qint64 stoppedAt = readSummary(killed).value(QStringLiteral("steps")).toInteger();

    QProcess reference;
    reference.start(QStringLiteral(PLAB_CLI_PATH), trainArgs(whole, "1000000", every7));
    QVERIFY(reference.waitForStarted());
    QVERIFY(signalWhenRecorded(reference, whole, stoppedAt, SIGTERM));
    const QList<QByteArray> a = fileLines(killed + QStringLiteral("/metrics.csv"));
    const QList<QByteArray> b = fileLines(whole + QStringLiteral("/metrics.csv"));
    QCOMPARE(a.size(), 1 + stoppedAt); // each step once: the killed run's rows past `from` gone
    QVERIFY(b.size() >= a.size());
    for (qint64 i = 1; i <= stoppedAt; ++i) {
        QCOMPARE(a[i].split(',')[0], QByteArray::number(i));
        QCOMPARE(a[i].split(',')[2], b[i].split(',')[2]);
    }
}
