// precision-lab-cli end to end: the formats table, text and binary quantise, training with its
// run log (also when killed), and bad input giving a one-line error that names the offending text
// with a non-zero exit.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <vector>

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void formatsTable();
    void formatsCustom();
    void quantizeText();
    void quantizeBinary();
    void badInput_data();
    void badInput();
    void benchRuns();
    void presetsList();
    void trainRunsAndLogs();
    void trainBadInput_data();
    void trainBadInput();
    void trainKilledMidwayKeepsLogs();
    void trainDivergenceExitsCleanly();
    void compareWritesTableAndPlots();
    void devicesListsCpuAndSaysWhyNoGpu();
};

namespace {

struct Result {
    int exitCode;
    QByteArray out;
    QByteArray err;
};

Result runCli(const QStringList& args, const QByteArray& input = {}) {
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH), args);
    if (!p.waitForStarted())
        return {-1, {}, "could not start"};
    p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(60000))
        return {-2, {}, "timed out"};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -3, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

} // namespace

void TestCli::formatsTable() {
    const Result r = runCli({QStringLiteral("formats")});
    QCOMPARE(r.exitCode, 0);
    for (const char* name :
         {"fp32", "tf32", "fp16", "bf16", "fp8-e4m3 ", "fp8-e5m2 ", "fp8-e4m3fnuz", "fp8-e5m2fnuz",
          "fp6-e3m2", "fp6-e2m3", "fp4-e2m1", "e8m0"})
        QVERIFY2(r.out.contains(name), name);
    const QList<QByteArray> lines = r.out.split('\n');
    auto row = [&](const char* name) {
        for (const QByteArray& line : lines)
            if (line.startsWith(name))
                return line.simplified();
        return QByteArray();
    };
    QVERIFY(row("fp8-e4m3 ").contains(" 448 "));
    QVERIFY(row("fp8-e4m3fnuz").contains(" 240 "));
    QVERIFY(row("fp16 ").contains(" 65504 "));
}

void TestCli::formatsCustom() {
    const Result r = runCli({QStringLiteral("formats"), QStringLiteral("--format"),
                             QStringLiteral("e5m2:bias=16:nosub")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("e5m2:bias=16:nosub"));
    QVERIFY(r.out.contains(" 28672 ")); // max finite 1.75 * 2^(30 - 16)
}

void TestCli::quantizeText() {
    const Result r =
        runCli({QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("fp8-e4m3"),
                QStringLiteral("--overflow"), QStringLiteral("inf")},
               "1 464 465\n0 9.31322575e-10\n");
    QCOMPARE(r.exitCode, 0);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 6); // header + 5 values
    QVERIFY(lines[1].simplified().startsWith("1 1 0x38 normal"));
    QVERIFY(lines[2].simplified().startsWith("464 448 0x7e normal"));
    QVERIFY(lines[3].simplified().startsWith("465 nan 0x7f overflow"));
    QVERIFY(lines[4].simplified().startsWith("0 0 0x00 zero"));
    QVERIFY(lines[5].simplified().startsWith("9.31322575e-10 0 0x00 underflow"));
}

void TestCli::quantizeBinary() {
    const std::vector<float> in = {1.0f / 3.0f, 70000.0f, -1e-9f, 2.5f};
    QByteArray bytes(reinterpret_cast<const char*>(in.data()),
                     static_cast<qsizetype>(in.size() * sizeof(float)));
    const Result r = runCli({QStringLiteral("quantize"), QStringLiteral("-f"),
                             QStringLiteral("fp16"), QStringLiteral("--binary")},
                            bytes);
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out.size(), bytes.size());
    std::vector<float> out(in.size());
    std::memcpy(out.data(), r.out.constData(), static_cast<std::size_t>(r.out.size()));
    QCOMPARE(out[0], 0.333251953125f);
    QVERIFY(std::isinf(out[1]));
    QCOMPARE(out[2], -0.0f);
    QVERIFY(std::signbit(out[2]));
    QCOMPARE(out[3], 2.5f);
}

void TestCli::badInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("mustMention");
    const auto q = [](std::initializer_list<const char*> extra) {
        QStringList args{QStringLiteral("quantize")};
        for (const char* a : extra)
            args << QString::fromLatin1(a);
        return args;
    };
    QTest::newRow("unknown format") << q({"-f", "fp9"}) << QByteArray("1") << "\"fp9\"";
    QTest::newRow("malformed custom") << q({"-f", "e4m3:bias=q"}) << QByteArray("1") << "\"q\"";
    QTest::newRow("too many exponent bits")
        << q({"-f", "e11m2"}) << QByteArray("1") << "exponent bits must be 1..8";
    QTest::newRow("bad rounding") << q({"-f", "fp16", "-r", "up"}) << QByteArray("1") << "\"up\"";
    QTest::newRow("bad overflow") << q({"-f", "fp16", "--overflow", "wrap"}) << QByteArray("1")
                                  << "\"wrap\"";
    QTest::newRow("non-numeric word")
        << q({"-f", "fp16"}) << QByteArray("1 2 x3 4") << "word 3 \"x3\"";
    QTest::newRow("trailing partial float")
        << q({"-f", "fp16", "--binary"}) << QByteArray(10, '\0') << "2 trailing byte(s)";
    QTest::newRow("format table of bad custom")
        << QStringList{QStringLiteral("formats"), QStringLiteral("--format"),
                       QStringLiteral("e4m3:wat")}
        << QByteArray() << "unknown option \"wat\"";
    QTest::newRow("bad device for bench")
        << QStringList{QStringLiteral("bench"), QStringLiteral("quantize"),
                       QStringLiteral("--device"), QStringLiteral("gpu0")}
        << QByteArray() << "device \"gpu0\": expected auto, cpu, cuda or cuda:N";
    QTest::newRow("bad device for train")
        << QStringList{QStringLiteral("train"), QStringLiteral("--device"),
                       QStringLiteral("cuda:x"), QStringLiteral("--steps"), QStringLiteral("1")}
        << QByteArray() << "config.device: device \"cuda:x\"";
}

void TestCli::badInput() {
    QFETCH(QStringList, args);
    QFETCH(QByteArray, input);
    QFETCH(QString, mustMention);
    const Result r = runCli(args, input);
    QVERIFY2(r.exitCode > 0, r.err.constData());
    const QByteArray err = r.err.trimmed();
    QVERIFY2(!err.contains('\n'), err.constData());
    QVERIFY2(QString::fromUtf8(err).contains(mustMention), err.constData());
}

void TestCli::benchRuns() {
    const Result r =
        runCli({QStringLiteral("bench"), QStringLiteral("quantize"), QStringLiteral("--size"),
                QStringLiteral("4096"), QStringLiteral("--repeat"), QStringLiteral("1"),
                QStringLiteral("--formats"), QStringLiteral("fp16,fp4-e2m1")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("(copy)"));
    // One row per format and rounding mode.
    QCOMPARE(r.out.count("fp16 "), 4);
    QCOMPARE(r.out.count("fp4-e2m1 "), 4);
}

namespace {

const QStringList kTinyRun = {QStringLiteral("--set"), QStringLiteral("data.train_size=600"),
                              QStringLiteral("--set"), QStringLiteral("data.test_size=100"),
                              QStringLiteral("--set"), QStringLiteral("model.hidden=[16]"),
                              QStringLiteral("--set"), QStringLiteral("train.batch_size=32")};

QList<QByteArray> fileLines(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll().trimmed().split('\n');
}

} // namespace

void TestCli::presetsList() {
    const Result r = runCli({QStringLiteral("presets")});
    QCOMPARE(r.exitCode, 0);
    for (const char* name :
         {"fp32 ", "fp16-noscale", "fp16-static", "bf16 ", "fp8-e5m2", "fp8-e4m3"})
        QVERIFY2(r.out.contains(name), name);
}

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
}

void TestCli::trainBadInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, mustMention);
    const Result r = runCli(
        QStringList{QStringLiteral("train"), QStringLiteral("--steps"), QStringLiteral("5")} +
        args);
    QVERIFY(r.exitCode > 0);
    const QByteArray err = r.err.trimmed();
    QVERIFY2(!err.contains('\n'), err.constData());
    QVERIFY2(QString::fromUtf8(err).contains(mustMention), err.constData());
}

// A run killed with SIGKILL keeps every completed step, whole, and says it did not finish.
void TestCli::trainKilledMidwayKeepsLogs() {
    QTemporaryDir dir;
    const QString out = dir.path() + QStringLiteral("/run");
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH),
            QStringList{QStringLiteral("train"), QStringLiteral("--steps"),
                        QStringLiteral("1000000"), QStringLiteral("--out"), out} +
                kTinyRun);
    QVERIFY(p.waitForStarted());
    const QString metrics = out + QStringLiteral("/metrics.csv");
    for (int i = 0; i < 600 && fileLines(metrics).size() < 30; ++i)
        QTest::qWait(20);
    p.kill();
    QVERIFY(p.waitForFinished());
    const QList<QByteArray> lines = fileLines(metrics);
    QVERIFY(lines.size() >= 30);
    for (qsizetype i = 1; i < lines.size(); ++i) {
        QCOMPARE(lines[i].count(','), 9); // complete rows only
        QCOMPARE(lines[i].split(',')[0].toLongLong(), static_cast<long long>(i));
    }
    QFile summary(out + QStringLiteral("/summary.json"));
    QVERIFY(summary.open(QIODevice::ReadOnly));
    QVERIFY(summary.readAll().contains("\"finished\": false"));
}

void TestCli::trainDivergenceExitsCleanly() {
    const Result r = runCli(
        QStringList{QStringLiteral("train"), QStringLiteral("--steps"), QStringLiteral("50"),
                    QStringLiteral("--set"),
                    QStringLiteral(
                        "recipe.weight_gradients={\"format\":\"fp8-e4m3\",\"overflow\":\"inf\"}"),
                    QStringLiteral("--set"), QStringLiteral("scaling.scale=1e12"),
                    QStringLiteral("--out"), QDir::tempPath() + QStringLiteral("/plab-diverge")} +
        kTinyRun);
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.contains("diverged at step 1"), r.err.constData());
}

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
    QVERIFY(rows[1].startsWith("fp32,yes,"));
    QVERIFY(rows[3].startsWith("fp16-amp,yes,"));
    QVERIFY(r.out.contains("| fp16-noscale | yes |"));
    for (const char* svg : {"/loss.svg", "/flushed.svg"}) {
        QFile f(dir.path() + QLatin1String(svg));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.startsWith("<svg"));
        QCOMPARE(text.count("<polyline"), 3);
    }
    const Result bad = runCli(
        {QStringLiteral("compare"), QStringLiteral("--presets"), QStringLiteral("fp32,fp7")});
    QVERIFY(bad.exitCode > 0);
    QVERIFY(bad.err.contains("preset \"fp7\""));
}

// `devices` always lists the CPU and a line for CUDA: usable devices, or the reason there are
// none (no driver, no device, or a build without nvcc), and what --device auto would pick.
void TestCli::devicesListsCpuAndSaysWhyNoGpu() {
    const Result r = runCli({QStringLiteral("devices")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("cpu   usable:"), r.out.constData());
    QVERIFY2(r.out.contains("cuda "), r.out.constData());
    QVERIFY2(r.out.contains("--device auto would use: "), r.out.constData());
    if (!r.out.contains("cuda  usable")) {
        // No usable GPU: the reason is given, and auto falls back to the CPU saying so.
        QVERIFY2(r.out.contains("--device auto would use: cpu"), r.out.constData());
        QVERIFY2(r.out.contains("using the CPU"), r.out.constData());
        // An explicit cuda request still trains, on the CPU, after a one-line notice.
        QTemporaryDir dir;
        const Result t = runCli({QStringLiteral("train"), QStringLiteral("--device"),
                                 QStringLiteral("cuda:0"), QStringLiteral("--steps"),
                                 QStringLiteral("2"), QStringLiteral("--out"), dir.path()});
        QCOMPARE(t.exitCode, 0);
        QVERIFY2(t.err.startsWith("cuda:0: "), t.err.constData());
        QVERIFY2(t.err.split('\n').first().contains("; using the CPU"), t.err.constData());
    }
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
