// precision-lab-cli end to end: how a run ends: signals, kills, full disks, a folder removed or
// locked.
#include "test_cli.h"

// A run killed with SIGKILL keeps every completed step, whole, in its record; `export` writes
// the CSV/JSONL files from it and says the run did not finish. A reader never writes into the
// run it reads: the run's summary.json stays as the run left it, and readers derive the summary
// from the record (the steps it holds, not the last 2-second refresh's).
void TestCli::trainKilledMidwayKeepsLogs() {
    QTemporaryDir dir;
    const QString out = dir.path() + QStringLiteral("/run");
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH),
            QStringList{QStringLiteral("train"), QStringLiteral("--steps"),
                        QStringLiteral("1000000"), QStringLiteral("--out"), out} +
                kTinyRun);
    QVERIFY(p.waitForStarted());
    for (int i = 0; i < 1500 && recordedSteps(out) < 30; ++i)
        QTest::qWait(20);
    p.kill();
    QVERIFY(p.waitForFinished());
    const qint64 steps = recordedSteps(out);
    QVERIFY(steps >= 30);
    // Every recorded step has all its statistics rows (one transaction per step).
    const qint64 perStep = recordQuery(out, "SELECT count(*) FROM stats WHERE step = 1");
    QVERIFY(perStep >= 12); // stages x 6 roles
    QCOMPARE(recordQuery(out, "SELECT count(*) FROM stats"), steps * perStep);
    // An export killed midway left a partial file: the next export clears it.
    QFile stray(out + QStringLiteral("/layers.csv.export-tmp"));
    QVERIFY(stray.open(QIODevice::WriteOnly));
    stray.close();
    const Result exported = runCli({QStringLiteral("export"), out});
    QVERIFY(!stray.exists());
    QVERIFY2(exported.exitCode == 0, exported.err.constData());
    QVERIFY2(exported.out.contains("ended without its summary"), exported.out.constData());
    const QList<QByteArray> lines = fileLines(out + QStringLiteral("/metrics.csv"));
    QCOMPARE(lines.size(), steps + 1);
    for (qsizetype i = 1; i < lines.size(); ++i) {
        QCOMPARE(lines[i].count(','), 9); // complete rows only
        QCOMPARE(lines[i].split(',')[0].toLongLong(), static_cast<long long>(i));
    }
    QCOMPARE(fileLines(out + QStringLiteral("/layers.csv")).size(), steps * perStep + 1);
    QCOMPARE(readSummary(out).value(QStringLiteral("stop_reason")).toString(),
             QStringLiteral("running")); // as the run left it
    const plab::RunSummary read = plab::RunRecord(out.toStdString()).summary();
    QVERIFY(!read.finished);
    QCOMPARE(read.steps, steps);
    QVERIFY(read.stopReason.find("killed") != std::string::npos);
    // Exported elsewhere, the exports' summary.json says how it ended.
    const QString copy = dir.path() + QStringLiteral("/exported");
    const Result elsewhere = runCli({QStringLiteral("export"), out, QStringLiteral("--out"), copy});
    QCOMPARE(elsewhere.exitCode, 0);
    const QJsonObject s = readSummary(copy);
    QCOMPARE(s.value(QStringLiteral("finished")).toBool(true), false);
    QCOMPARE(s.value(QStringLiteral("steps")).toInteger(), steps);
    QVERIFY(s.value(QStringLiteral("stop_reason")).toString().contains(QStringLiteral("killed")));
    QCOMPARE(readSummary(out).value(QStringLiteral("stop_reason")).toString(),
             QStringLiteral("running"));
}

// A run folder another process writes (its lock held) is left to it: not started again, not
// marked failed, reported as not run yet.
void TestCli::lockedRunFolderIsLeftToItsWriter() {
    QTemporaryDir dir;
    const std::string held = dir.path().toStdString() + "/fp32/seed-1";
    plab::RunDirectoryLock lock(held);
    const Result r = runCli(QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                                        QStringLiteral("fp32,fp16-amp"), QStringLiteral("--steps"),
                                        QStringLiteral("3"), QStringLiteral("--out"), dir.path()} +
                            kTinyRun);
    QCOMPARE(r.exitCode, 3); // one run missing
    QVERIFY2(r.err.contains("being written by another process") &&
                 r.err.contains("1 run(s) started"),
             r.err.constData());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(held + ".failed")));
    QVERIFY(!QFileInfo::exists(QString::fromStdString(held + ".stderr.log")));
    QVERIFY(QFileInfo::exists(dir.filePath(QStringLiteral("fp16-amp/seed-1/summary.json"))));
}

// A sweep's run killed by a signal is failed "killed by signal 9 (SIGKILL)", not with its last
// progress line.
void TestCli::killedRunSaysItWasKilled() {
    QTemporaryDir dir;
    QProcess sweep;
    sweep.start(QStringLiteral(PLAB_CLI_PATH),
                QStringList{QStringLiteral("sweep"), QStringLiteral("--presets"),
                            QStringLiteral("fp32"), QStringLiteral("--steps"),
                            QStringLiteral("1000000"), QStringLiteral("--out"), dir.path()} +
                    kTinyRun);
    QVERIFY(sweep.waitForStarted());
    const std::string run = dir.path().toStdString() + "/fp32/seed-1";
    QTRY_VERIFY_WITH_TIMEOUT(plab::runDirectoryLocked(run) &&
                                 QFileInfo::exists(QString::fromStdString(run + "/summary.json")),
                             30000);
    const QList<QByteArray> lock = fileLines(QString::fromStdString(run + "/.lock"));
    QVERIFY(!lock.isEmpty());
    const pid_t child = lock.front().trimmed().toInt();
    QVERIFY(child > 0);
    QCOMPARE(::kill(child, SIGKILL), 0);
    QVERIFY(sweep.waitForFinished(30000));
    QCOMPARE(sweep.exitCode(), 3);
    const QList<QByteArray> marker = fileLines(QString::fromStdString(plab::failedMarker(run)));
    QVERIFY(!marker.isEmpty());
    QVERIFY2(marker.front().contains("killed by signal 9 (SIGKILL)"), marker.front().constData());
}

// A folder with an earlier run is not overwritten without --overwrite; a folder a run is
// writing is refused, naming that run's process.
void TestCli::runFolderIsLockedAndNotReusedSilently() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    QCOMPARE(runCli(trainArgs(run, "3")).exitCode, 0);
    const Result again = runCli(trainArgs(run, "4"));
    QCOMPARE(again.exitCode, 2);
    QVERIFY2(again.err.contains("holds an earlier run") && again.err.contains("--overwrite"),
             again.err.constData());
    QCOMPARE(fileLines(run + QStringLiteral("/metrics.csv")).size(), 1 + 3); // untouched
    QCOMPARE(runCli(trainArgs(run, "4", {QStringLiteral("--overwrite")})).exitCode, 0);
    QCOMPARE(fileLines(run + QStringLiteral("/metrics.csv")).size(), 1 + 4);

    const QString live = dir.filePath(QStringLiteral("live"));
    QProcess first;
    QVERIFY(startLongRun(first, live, 3));
    const Result second = runCli(trainArgs(live, "5", {QStringLiteral("--overwrite")}));
    const qint64 holder = first.processId();
    first.kill();
    first.waitForFinished();
    QVERIFY2(second.exitCode == 2, second.err.constData());
    QVERIFY2(second.err.contains("another run is writing to this run directory (process " +
                                 QByteArray::number(holder)),
             second.err.constData());
}

void TestCli::stopSignalsWriteTheSummary_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<QString>("name");
    QTest::newRow("SIGINT") << int{SIGINT} << QStringLiteral("SIGINT");
    QTest::newRow("SIGTERM") << int{SIGTERM} << QStringLiteral("SIGTERM");
    QTest::newRow("SIGHUP") << int{SIGHUP} << QStringLiteral("SIGHUP");
}

// The first signal stops the run at a step boundary: summary and `end` event written, exit
// status 128 + the signal's number.
void TestCli::stopSignalsWriteTheSummary() {
    QFETCH(int, signal);
    QFETCH(QString, name);
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess p;
    QVERIFY(startLongRun(p, run, 6));
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), signal), 0);
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 128 + signal);
    const QJsonObject s = readSummary(run);
    QCOMPARE(s.value(QStringLiteral("finished")).toBool(true), false);
    const QString reason = s.value(QStringLiteral("stop_reason")).toString();
    QVERIFY2(reason.startsWith(QStringLiteral("interrupted by ") + name), qPrintable(reason));
    const int steps = s.value(QStringLiteral("steps")).toInt();
    QVERIFY(steps >= 5);
    QCOMPARE(fileLines(run + QStringLiteral("/metrics.csv")).size(), 1 + steps);
    QVERIFY(fileLines(run + QStringLiteral("/events.jsonl")).last().contains("\"type\":\"end\""));
    QVERIFY(endsOnWholeRows(run));
}

// A sweep starts its children with the stop signals blocked (child_process_launcher.cpp), so
// that one sent while a child starts up waits for its handler: `train` lets it in before making
// the run's folder, then says it stopped before the run started and records nothing (no folder
// saying "running" with no summary). Played here by blocking SIGTERM as the launcher does and
// sending it before the process can have run main().
void TestCli::stopBeforeTheRunStartsRecordsNothing() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess p;
    p.setChildProcessModifier([] {
        sigset_t stops;
        sigemptyset(&stops);
        sigaddset(&stops, SIGTERM);
        ::sigprocmask(SIG_BLOCK, &stops, nullptr);
    });
    p.start(QStringLiteral(PLAB_CLI_PATH), trainArgs(run, "1000000"));
    QVERIFY(p.waitForStarted());
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGTERM), 0);
    QVERIFY(p.waitForFinished(20000)); // a blocked signal never let in: it would train on
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 128 + SIGTERM);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(err.contains("interrupted by SIGTERM before the run started; nothing recorded"),
             err.constData());
    QVERIFY(!QFileInfo::exists(run));
}

// A SIGTERM while the data is read from a FIFO that gives nothing stops the run at once: the
// first one was lost (the read restarted) and `train` waited until a second killed it
// (issue 52 item 38). The test holds the FIFO's writing end open, so the read waits; once the
// signal is sent it closes it after 3 s, which a lost signal would have turned into exit 2.
void TestCli::stopWhileDataLoadsFromAFifo() {
    QTemporaryDir dir;
    const QString data = dir.filePath(QStringLiteral("data"));
    QVERIFY(QDir().mkpath(data));
    const QByteArray fifo = (data + QStringLiteral("/train-images-idx3-ubyte")).toLocal8Bit();
    QCOMPARE(::mkfifo(fifo.constData(), 0600), 0);
    for (const char* name :
         {"/train-labels-idx1-ubyte", "/t10k-images-idx3-ubyte", "/t10k-labels-idx1-ubyte"}) {
        QFile f(data + QLatin1String(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH),
            {QStringLiteral("train"), QStringLiteral("--data"), data, QStringLiteral("--steps"),
             QStringLiteral("3"), QStringLiteral("--out"), run});
    QVERIFY(p.waitForStarted());
    // A writer's non-blocking open succeeds once the reader is in its open: then it reads.
    int writer = -1;
    QTRY_VERIFY_WITH_TIMEOUT((writer = ::open(fifo.constData(), O_WRONLY | O_NONBLOCK)) >= 0,
                             20000);
    QTest::qWait(200);
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGTERM), 0);
    const bool endedBySignal = p.waitForFinished(3000);
    ::close(writer);
    QVERIFY(endedBySignal || p.waitForFinished(10000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitCode() == 128 + SIGTERM, err.constData());
    QVERIFY2(err.contains("interrupted by SIGTERM before the run started; nothing recorded"),
             err.constData());
    QVERIFY(endedBySignal);
    QVERIFY(!QFileInfo::exists(run));
}

// A full disk (a file-size limit plays it: writes past it fail with EFBIG) ends the run with
// exit status 4 and a one-line reason; the record keeps whole steps and the summary says why.
void TestCli::fullDiskIsAnErrorAndKeepsWholeRows() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess p;
    p.setChildProcessModifier([] {
        const rlimit limit{200000, 200000};
        ::setrlimit(RLIMIT_FSIZE, &limit);
        std::signal(SIGXFSZ, SIG_IGN); // a failed write, not a killed process
    });
    p.start(QStringLiteral(PLAB_CLI_PATH), trainArgs(run, "1000000"));
    QVERIFY(p.waitForStarted());
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 4);
    const QByteArray err = p.readAllStandardError().trimmed();
    const QByteArray last = err.split('\n').last();
    QVERIFY2(last.contains("the run record could not be written: ") &&
                 last.contains("cannot write (File too large)"),
             err.constData());
    // The record keeps whole steps (each with its statistics rows) and exports them.
    const qint64 steps = recordedSteps(run);
    QVERIFY(steps >= 1);
    QCOMPARE(recordQuery(run, "SELECT count(*) FROM stats"),
             steps * recordQuery(run, "SELECT count(*) FROM stats WHERE step = 1"));
    const Result exported = runCli({QStringLiteral("export"), run});
    QVERIFY2(exported.exitCode == 0, exported.err.constData());
    QCOMPARE(fileLines(run + QStringLiteral("/metrics.csv")).size(), steps + 1);
    QVERIFY(endsOnWholeRows(run));
    const QJsonObject s = readSummary(run);
    QCOMPARE(s.value(QStringLiteral("finished")).toBool(true), false);
    QVERIFY2(s.value(QStringLiteral("stop_reason"))
                 .toString()
                 .contains(QStringLiteral("could not be written")),
             qPrintable(s.value(QStringLiteral("stop_reason")).toString()));
    // The summary printed on stdout comes from the run, not from a file the disk may have
    // refused: the steps the record holds and why it stopped (issue 42 item 5), as the file.
    const QJsonObject printed = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(printed.value(QStringLiteral("steps")).toInteger(-1), steps);
    QCOMPARE(s.value(QStringLiteral("steps")).toInteger(-1), steps);
    QCOMPARE(printed.value(QStringLiteral("finished")).toBool(true), false);
    QVERIFY2(printed.value(QStringLiteral("stop_reason"))
                 .toString()
                 .contains(QStringLiteral("the run record could not be written")),
             qPrintable(printed.value(QStringLiteral("stop_reason")).toString()));
}

// What a kill in a run's first milliseconds leaves (config.json, a record with no step, no event
// and no summary row, an empty summary.json.tmp): `export` says so in a summary and removes the
// half-written file, and `train` takes such a folder as an empty one (issue 42 item 8).
void TestCli::killedBeforeItsFirstStep() {
    QTemporaryDir dir;
    const auto plant = [](const QString& run) {
        if (runCli(trainArgs(run, "1")).exitCode != 0 ||
            !recordExec(run, "DELETE FROM stats; DELETE FROM histograms; DELETE FROM steps; "
                             "DELETE FROM events; DELETE FROM summary;"))
            return false;
        for (const char* name :
             {"/summary.json", "/metrics.csv", "/layers.csv", "/histograms.csv", "/events.jsonl"})
            QFile::remove(run + QLatin1String(name));
        QFile tmp(run + QStringLiteral("/summary.json.tmp"));
        return tmp.open(QIODevice::WriteOnly); // empty, as the kill left it
    };
    const QString exported = dir.filePath(QStringLiteral("exported"));
    QVERIFY(plant(exported));
    const Result e = runCli({QStringLiteral("export"), exported});
    QVERIFY2(e.exitCode == 0, e.err.constData());
    QVERIFY2(e.out.contains("the run ended without its summary"), e.out.constData());
    QVERIFY2(e.out.contains("its disk filled up) before its first step"), e.out.constData());
    const plab::RunSummary s = plab::RunRecord(exported.toStdString()).summary();
    QCOMPARE(s.steps, std::int64_t{0});
    QVERIFY2(s.stopReason.find("its disk filled up) before its first step") != std::string::npos,
             s.stopReason.c_str());
    QVERIFY(!QFile::exists(exported + QStringLiteral("/summary.json"))); // not written into it

    const QString reused = dir.filePath(QStringLiteral("reused"));
    QVERIFY(plant(reused));
    const Result again = runCli(trainArgs(reused, "2"));
    QVERIFY2(again.exitCode == 0, again.err.constData());
    QCOMPARE(recordedSteps(reused), 2);
    QVERIFY(!QFile::exists(reused + QStringLiteral("/summary.json.tmp")));
}

// Under a file-size limit (ulimit -f) the CLI is not killed by SIGXFSZ (exit 153, no summary):
// the write fails and takes the full disk's path, exit 4 with the reason (issue 42 item 11).
void TestCli::fileSizeLimitIsAFullDisk() {
    QTemporaryDir dir;
    const auto limited = [](QProcess& p) {
        p.setChildProcessModifier([] {
            const rlimit limit{200000, 200000};
            ::setrlimit(RLIMIT_FSIZE, &limit);
            std::signal(SIGXFSZ, SIG_DFL); // as a shell leaves it
        });
    };
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess train;
    limited(train);
    train.start(QStringLiteral(PLAB_CLI_PATH), trainArgs(run, "100000"));
    QVERIFY(train.waitForStarted());
    QVERIFY(train.waitForFinished(60000));
    QCOMPARE(train.exitStatus(), QProcess::NormalExit);
    QCOMPARE(train.exitCode(), 4);
    QVERIFY(readSummary(run)
                .value(QStringLiteral("stop_reason"))
                .toString()
                .contains(QStringLiteral("could not be written")));

    QProcess quantize;
    limited(quantize);
    quantize.setStandardOutputFile(dir.filePath(QStringLiteral("values.txt")));
    quantize.start(QStringLiteral(PLAB_CLI_PATH),
                   {QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("fp16")});
    QVERIFY(quantize.waitForStarted());
    QByteArray input;
    for (int i = 1; i <= 100000; ++i)
        input += QByteArray::number(i) + '\n';
    quantize.write(input);
    quantize.closeWriteChannel();
    QVERIFY(quantize.waitForFinished(60000));
    QCOMPARE(quantize.exitStatus(), QProcess::NormalExit);
    QCOMPARE(quantize.exitCode(), 4);
    QVERIFY2(quantize.readAllStandardError().contains("File too large"), "no reason given");
}

// compare and sweep on a full disk (a file-size limit plays it, inherited by their `train`
// children) exit 4 with the system's reason, as `train` does: not 3 (a training failure) when
// the runs could not write their records, not 2 (bad input) when the command's own table could
// not be written (issue 52 item 36).
void TestCli::compareAndSweepOnAFullDiskExit4() {
    QTemporaryDir dir;
    const auto limitedRun = [](const QStringList& args, rlim_t bytes) {
        QProcess p;
        p.setChildProcessModifier([bytes] {
            const rlimit limit{bytes, bytes};
            ::setrlimit(RLIMIT_FSIZE, &limit);
            std::signal(SIGXFSZ, SIG_IGN);
        });
        p.start(QStringLiteral(PLAB_CLI_PATH), args);
        p.waitForFinished(120000);
        return Result{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -3,
                      p.readAllStandardOutput(), p.readAllStandardError()};
    };
    const QStringList compare = {QStringLiteral("compare"), QStringLiteral("--presets"),
                                 QStringLiteral("fp32,bf16"), QStringLiteral("--steps"),
                                 QStringLiteral("200")};
    // The runs' records cannot grow past 200 kB; the table (small) is written.
    const Result runs = limitedRun(
        compare + QStringList{QStringLiteral("--out"), dir.filePath(QStringLiteral("c1"))}, 200000);
    QCOMPARE(runs.exitCode, 4);
    QVERIFY2(runs.out.contains("cannot write (File too large)"), runs.out.constData());
    // Nothing past 600 bytes: the runs fail at once and the table itself cannot be written.
    const Result table = limitedRun(
        compare + QStringList{QStringLiteral("--out"), dir.filePath(QStringLiteral("c2"))}, 600);
    QCOMPARE(table.exitCode, 4);
    QVERIFY2(table.err.contains("cannot write (File too large)"), table.err.constData());
    const Result sweep =
        limitedRun({QStringLiteral("sweep"), QStringLiteral("--presets"), QStringLiteral("fp32"),
                    QStringLiteral("--steps"), QStringLiteral("200"), QStringLiteral("--out"),
                    dir.filePath(QStringLiteral("s"))},
                   200000);
    QCOMPARE(sweep.exitCode, 4);
    QVERIFY2(sweep.err.contains("could not write their record"), sweep.err.constData());
}

// The run folder removed while the run writes it: a clean error and exit status 4.
void TestCli::runFolderRemovedMidRunIsAnError() {
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("run"));
    QProcess p;
    QVERIFY(startLongRun(p, run, 5));
    QVERIFY(QDir(run).removeRecursively());
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 4);
    const QByteArray last = p.readAllStandardError().trimmed().split('\n').last();
    QVERIFY2(last.contains("the run record could not be written"), last.constData());
}

// Output that cannot be written (here /dev/full) is an error, not a silent success.
void TestCli::outputWriteErrorsAreErrors() {
    QProcess p;
    p.setStandardOutputFile(QStringLiteral("/dev/full"));
    p.start(QStringLiteral(PLAB_CLI_PATH),
            {QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("fp8-e4m3")});
    QVERIFY(p.waitForStarted());
    p.write("1 2 3\n");
    p.closeWriteChannel();
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 4);
    QVERIFY(p.readAllStandardError().contains("cannot write the output (No space left on device)"));

    // --binary, element and block formats: exit 4 and one message with the reason.
    for (const char* format : {"fp16", "nvfp4"}) {
        QProcess b;
        b.setStandardOutputFile(QStringLiteral("/dev/full"));
        b.start(QStringLiteral(PLAB_CLI_PATH),
                {QStringLiteral("quantize"), QStringLiteral("-f"), QString::fromLatin1(format),
                 QStringLiteral("--binary")});
        QVERIFY(b.waitForStarted());
        b.write(QByteArray(4096, '\0'));
        b.closeWriteChannel();
        QVERIFY(b.waitForFinished(20000));
        QCOMPARE(b.exitCode(), 4);
        const QByteArray err = b.readAllStandardError();
        QCOMPARE(err.count('\n'), 1);
        QVERIFY2(err.contains("cannot write stdout (No space left on device)"), err.constData());
    }
    // --help and --version too: they exited 0 with nothing written (issue 65, minor).
    for (const QStringList& args :
         {QStringList{QStringLiteral("--help")}, QStringList{QStringLiteral("--version")},
          QStringList{QStringLiteral("train"), QStringLiteral("--help")}}) {
        QProcess h;
        h.setStandardOutputFile(QStringLiteral("/dev/full"));
        h.start(QStringLiteral(PLAB_CLI_PATH), args);
        QVERIFY(h.waitForFinished(20000));
        QVERIFY2(h.exitCode() == 4, qPrintable(args.join(u' ')));
        QVERIFY(h.readAllStandardError().contains("cannot write the output"));
    }
}
