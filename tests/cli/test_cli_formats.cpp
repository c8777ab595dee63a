// precision-lab-cli end to end: the formats table, text, binary and block quantise, bench, presets,
// devices.
#include "test_cli.h"

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
    // A block format that `formats` lists is shown by name too.
    const Result b =
        runCli({QStringLiteral("formats"), QStringLiteral("--format"), QStringLiteral("nvfp4")});
    QCOMPARE(b.exitCode, 0);
    QVERIFY2(b.out.contains("nvfp4") && b.out.contains(" 16 "), b.out.constData());
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

// A block format treats stdin as one tensor: the text table shows each block's scale (NVFP4's
// tensor scale too), --binary the dequantised values; formats lists the block formats.
void TestCli::quantizeBlockFormats() {
    // amax_t = 12: s_enc = 2688 / 12 = 224; block 0's q_b = e4m3(12 * 224 / 6) = 448; block 1's
    // amax 0.75: q_b = e4m3(28) = 28, so 0.3 -> 0.3 * 8 = 2.4 -> 2 (E2M1) -> 2 * 28 / 224 = 0.25.
    QByteArray text = "12 1";
    for (int i = 2; i < 16; ++i)
        text += " 0";
    text += " 0.75 0.3";
    const Result r =
        runCli({QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("nvfp4")}, text);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("tensor scale s_enc 224\n"), r.out.constData());
    QVERIFY(r.out.contains("block 0: amax 12, scale 448,"));
    QVERIFY(r.out.contains("block 1: amax 0.75, scale 28,"));
    QVERIFY(r.out.simplified().contains("0.300000012 0.25 normal"));

    const std::vector<float> in = {12.0f, 1.0f, 0.75f, 0.3f};
    const QByteArray bytes(reinterpret_cast<const char*>(in.data()),
                           static_cast<qsizetype>(in.size() * sizeof(float)));
    // MXFP4 floor (OCP): 12 -> X = 3 - 2 = 1, 0.3 / 2 = 0.15 flushes (E2M1's smallest is 0.5);
    // ceil: 12 / 6 = 2 exactly -> X = 1 too, so both agree here, and 0.75 / 2 -> 0.5 -> 1.
    for (const char* rounding : {"floor", "ceil"}) {
        const Result b = runCli({QStringLiteral("quantize"), QStringLiteral("-f"),
                                 QStringLiteral("mxfp4"), QStringLiteral("--scale-rounding"),
                                 QString::fromLatin1(rounding), QStringLiteral("--binary")},
                                bytes);
        QCOMPARE(b.exitCode, 0);
        QCOMPARE(b.out.size(), bytes.size());
        std::vector<float> out(in.size());
        std::memcpy(out.data(), b.out.constData(), bytes.size());
        QCOMPARE(out[0], 12.0f);
        QCOMPARE(out[1], 1.0f);
        QCOMPARE(out[2], 1.0f);
        QCOMPARE(std::bit_cast<std::uint32_t>(out[3]), 0u);
    }
    const Result formats = runCli({QStringLiteral("formats")});
    for (const char* name : {"nvfp4", "fp8-block128", "mxfp8-e4m3", "mxfp6-e3m2", "mxfp4"})
        QVERIFY2(formats.out.contains(name), name);
    QVERIFY(formats.out.simplified().contains("fp8-block128 fp8-e4m3 128 fp32"));
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
    const Result blocks = runCli(
        {QStringLiteral("bench"), QStringLiteral("quantize"), QStringLiteral("--size"),
         QStringLiteral("4096"), QStringLiteral("--repeat"), QStringLiteral("1"),
         QStringLiteral("--formats"), QStringLiteral("nvfp4"), QStringLiteral("--specials")});
    QCOMPARE(blocks.exitCode, 0);
    QCOMPARE(blocks.out.count("nvfp4 "), 4);
    QVERIFY(blocks.out.contains("x element"));
    QVERIFY(blocks.out.contains("(1 in 97 special)")); // NaN, Inf and subnormals in the blocks
}

void TestCli::presetsList() {
    const Result r = runCli({QStringLiteral("presets")});
    QCOMPARE(r.exitCode, 0);
    for (const char* name :
         {"fp32 ", "fp16-noscale", "fp16-static", "bf16 ", "fp8-e5m2", "fp8-e4m3"})
        QVERIFY2(r.out.contains(name), name);
    // Each with the paper it follows, from the one table (core/train/presets.json).
    QVERIFY2(r.out.contains("after Zhao, Vogel, Ahmed and Luk, IJCAI 2020"), r.out.constData());
}

// The text table's quantized column and bits column describe one result: FP32's canonical NaN
// 0x7fffffff is "nan", also for a negative NaN read (issue 42 item 25).
void TestCli::nanShownWithItsCodesSign() {
    const Result r = runCli(
        {QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("fp32")}, "nan\n-nan\n");
    QCOMPARE(r.exitCode, 0);
    const QList<QByteArray> lines = r.out.split('\n');
    QVERIFY(lines.size() >= 3);
    for (int i : {1, 2}) {
        const QList<QByteArray> cells = lines[i].simplified().split(' ');
        QVERIFY2(cells.size() >= 3 && cells[1] == "nan" && cells[2] == "0x7fffffff",
                 lines[i].constData());
    }
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
