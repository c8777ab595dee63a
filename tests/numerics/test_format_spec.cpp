// Format properties, custom eXmY formats equal to named ones, and parse errors.
#include <QTest>

#include "numerics/format_spec.h"
#include "numerics/quantizer.h"
#include "numerics/rounding.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

using namespace plab;

class TestFormatSpec : public QObject {
    Q_OBJECT
private slots:
    void namedProperties_data();
    void namedProperties();
    void customEqualsNamed_data();
    void customEqualsNamed();
    void parseErrors_data();
    void parseErrors();
    void roundingAndOverflowNames();
    void mlDtypesNamesAreTheirTypes();
};

void TestFormatSpec::namedProperties_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("maxFinite");
    QTest::addColumn<double>("minNormal");
    QTest::addColumn<double>("minPositive");
    QTest::addColumn<qulonglong>("finiteValues");
    QTest::addColumn<bool>("hasInf");
    const auto p = [](int e) { return std::ldexp(1.0, e); };
    QTest::newRow("fp16") << "fp16" << 65504.0 << p(-14) << p(-24) << 63488ull << true;
    QTest::newRow("bf16") << "bf16" << 3.3895313892515355e38 << p(-126) << p(-133) << 65280ull
                          << true;
    QTest::newRow("tf32") << "tf32" << (2.0 - p(-10)) * p(127) << p(-126) << p(-136) << 522240ull
                          << true;
    QTest::newRow("e4m3") << "fp8-e4m3" << 448.0 << p(-6) << p(-9) << 254ull << false;
    QTest::newRow("e5m2") << "fp8-e5m2" << 57344.0 << p(-14) << p(-16) << 248ull << true;
    QTest::newRow("e4m3fnuz") << "fp8-e4m3fnuz" << 240.0 << p(-7) << p(-10) << 255ull << false;
    QTest::newRow("e5m2fnuz") << "fp8-e5m2fnuz" << 57344.0 << p(-15) << p(-17) << 255ull << false;
    QTest::newRow("e3m2") << "fp6-e3m2" << 28.0 << 0.25 << 0.0625 << 64ull << false;
    QTest::newRow("e2m3") << "fp6-e2m3" << 7.5 << 1.0 << 0.125 << 64ull << false;
    QTest::newRow("e2m1") << "fp4-e2m1" << 6.0 << 1.0 << 0.5 << 16ull << false;
    QTest::newRow("e8m0") << "e8m0" << p(127) << p(-127) << p(-127) << 255ull << false;
    QTest::newRow("upper case") << "FP8-E4M3" << 448.0 << p(-6) << p(-9) << 254ull << false;
}

void TestFormatSpec::namedProperties() {
    QFETCH(QString, name);
    QFETCH(double, maxFinite);
    QFETCH(double, minNormal);
    QFETCH(double, minPositive);
    QFETCH(qulonglong, finiteValues);
    QFETCH(bool, hasInf);
    const FormatSpec f = parseFormat(name.toStdString());
    QCOMPARE(f.maxFinite(), maxFinite);
    QCOMPARE(f.minNormal(), minNormal);
    QCOMPARE(f.minPositive(), minPositive);
    QCOMPARE(static_cast<qulonglong>(f.finiteValueCount()), finiteValues);
    QCOMPARE(f.hasInf(), hasInf);
    QCOMPARE(f.epsilon(), std::ldexp(1.0, -f.mantissaBits));
    QCOMPARE(f.binades(), std::log2(maxFinite / minPositive));
    QVERIFY(defaultOverflow(f) == (hasInf ? Overflow::Inf : Overflow::Saturate));
}

void TestFormatSpec::customEqualsNamed_data() {
    QTest::addColumn<QString>("named");
    QTest::addColumn<QString>("custom");
    QTest::newRow("fp32") << "fp32"
                          << "e8m23";
    QTest::newRow("tf32") << "tf32"
                          << "e8m10";
    QTest::newRow("fp16") << "fp16"
                          << "e5m10";
    QTest::newRow("bf16") << "bf16"
                          << "e8m7:bias=127:ieee";
    QTest::newRow("e4m3") << "fp8-e4m3"
                          << "e4m3:fn";
    QTest::newRow("e5m2") << "fp8-e5m2"
                          << "e5m2";
    QTest::newRow("e4m3fnuz") << "fp8-e4m3fnuz"
                              << "e4m3:bias=8:fnuz";
    QTest::newRow("e5m2fnuz") << "fp8-e5m2fnuz"
                              << "E5M2:fnuz:bias=16";
    QTest::newRow("e3m2") << "fp6-e3m2"
                          << "e3m2:finite";
    QTest::newRow("e2m3") << "fp6-e2m3"
                          << "e2m3:none";
    QTest::newRow("e2m1") << "fp4-e2m1"
                          << "e2m1:finite:sub";
    QTest::newRow("e8m0") << "e8m0"
                          << "e8m0:fn:unsigned:nozero";
}

// Same parameters, and the same value for every input of a sweep (through the fused kernel).
void TestFormatSpec::customEqualsNamed() {
    QFETCH(QString, named);
    QFETCH(QString, custom);
    const FormatSpec a = parseFormat(named.toStdString());
    const FormatSpec b = parseFormat(custom.toStdString());
    QVERIFY(a.sameParameters(b));
    std::vector<float> in;
    for (std::uint32_t bits = 0; bits < 0xFFFF0000u; bits += 0x10001u)
        in.push_back(std::bit_cast<float>(bits));
    std::vector<float> outA(in.size()), outB(in.size());
    for (Rounding r : kAllRoundings) {
        Quantizer(QuantConfig::forFormat(a, r)).quantize(in, outA, nullptr, {.seed = 5});
        Quantizer(QuantConfig::forFormat(b, r)).quantize(in, outB, nullptr, {.seed = 5});
        QVERIFY(std::memcmp(outA.data(), outB.data(), in.size() * sizeof(float)) == 0);
    }
}

void TestFormatSpec::parseErrors_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("mustMention");
    QTest::newRow("unknown name") << "fp9"
                                  << "unknown format";
    QTest::newRow("empty") << ""
                           << "empty";
    QTest::newRow("fnuz suffix") << "e4m3fnuz"
                                 << "unknown format";
    QTest::newRow("9 exponent bits") << "e9m2"
                                     << "exponent bits must be 1..8";
    QTest::newRow("0 exponent bits") << "e0m3"
                                     << "exponent bits must be 1..8";
    QTest::newRow("24 mantissa bits") << "e8m24"
                                      << "mantissa bits must be 0..23";
    QTest::newRow("bad bias") << "e4m3:bias=x"
                              << "bias must be an integer";
    QTest::newRow("unknown option") << "e4m3:foo"
                                    << "unknown option \"foo\"";
    // Contradictory options are refused, naming the pair (issue 42 item 29).
    QTest::newRow("sub and nosub") << "e5m2:nosub:sub:fnuz:finite"
                                   << "options \"nosub\" and \"sub\" contradict each other";
    QTest::newRow("fn and fnuz") << "e4m3:fn:fnuz"
                                 << "options \"fn\" and \"fnuz\" contradict each other";
    QTest::newRow("two biases") << "e5m2:bias=3:bias=4"
                                << "options \"bias=3\" and \"bias=4\" contradict";
    QTest::newRow("signed and unsigned") << "e4m3:unsigned:signed"
                                         << "(both set the sign); give one";
    QTest::newRow("ieee without mantissa") << "e5m0"
                                           << "ieee Inf/NaN needs";
    QTest::newRow("no finite values") << "e1m0:fn"
                                      << "no finite nonzero values";
    // Found by fuzz_format: every finite value subnormal, so the class counts went negative.
    QTest::newRow("no normal values") << "e1m2:bias=0"
                                      << "no normal values";
    QTest::newRow("bias too small") << "e8m7:bias=100"
                                    << "too small";
    QTest::newRow("bias too large") << "e8m3:bias=200"
                                    << "too large";
    // Found by fuzz_format: the smallest value (2^-143) is a float32, the steps above it (2^-150)
    // are not, and the fused kernel's power of two for them wrapped around.
    QTest::newRow("steps finer than float32") << "e5m7:bias=144:nosub"
                                              << "finest step, 2^-150";
    QTest::newRow("unsigned fnuz") << "e4m3:fnuz:unsigned"
                                   << "needs a signed format";
    QTest::newRow("nozero with sub") << "e4m3:nozero:sub"
                                     << "no subnormals";
}

void TestFormatSpec::parseErrors() {
    QFETCH(QString, text);
    QFETCH(QString, mustMention);
    try {
        parseFormat(text.toStdString());
        QFAIL("no error");
    } catch (const FormatError& e) {
        const QString message = QString::fromUtf8(e.what());
        QVERIFY2(message.contains(QLatin1Char('"') + text + QLatin1Char('"')), e.what());
        QVERIFY2(message.contains(mustMention), e.what());
        QVERIFY2(!message.contains(QLatin1Char('\n')), "error must be one line");
    }
}

void TestFormatSpec::roundingAndOverflowNames() {
    for (Rounding r : kAllRoundings)
        QVERIFY(parseRounding(toString(r)) == r);
    QVERIFY(parseOverflow("saturate") == Overflow::Saturate);
    QVERIFY(parseOverflow("inf") == Overflow::Inf);
    QVERIFY_THROWS_EXCEPTION(FormatError, parseRounding("nearest"));
    QVERIFY_THROWS_EXCEPTION(FormatError, parseOverflow("clamp"));
}

// ml_dtypes' and PyTorch's names, each against the finfo ml_dtypes documents for the type: the
// largest finite value, the smallest normal and subnormal, Inf, NaN and -0.
void TestFormatSpec::mlDtypesNamesAreTheirTypes() {
    const auto p = [](int e) { return std::ldexp(1.0, e); };
    struct Documented {
        const char* name;
        const char* ours; // the spec's name: our named format, or the custom spec that it is
        double max, minNormal, minSubnormal;
        bool inf, nan, negativeZero;
    };
    const Documented types[] = {
        {"float8_e4m3fn", "fp8-e4m3", 448.0, p(-6), p(-9), false, true, true},
        {"float8_e5m2", "fp8-e5m2", 57344.0, p(-14), p(-16), true, true, true},
        {"float8_e4m3fnuz", "fp8-e4m3fnuz", 240.0, p(-7), p(-10), false, true, false},
        {"float8_e5m2fnuz", "fp8-e5m2fnuz", 57344.0, p(-15), p(-17), false, true, false},
        {"float8_e4m3", "e4m3:bias=7:ieee", 240.0, p(-6), p(-9), true, true, true},
        {"float8_e3m4", "e3m4:bias=3:ieee", 15.5, p(-2), p(-6), true, true, true},
        {"float8_e4m3b11fnuz", "e4m3:bias=11:fnuz", 30.0, p(-10), p(-13), false, true, false},
        {"float6_e2m3fn", "fp6-e2m3", 7.5, 1.0, 0.125, false, false, true},
        {"float6_e3m2fn", "fp6-e3m2", 28.0, 0.25, 0.0625, false, false, true},
        {"float4_e2m1fn", "fp4-e2m1", 6.0, 1.0, 0.5, false, false, true},
        {"bfloat16", "bf16", 3.3895313892515355e38, p(-126), p(-133), true, true, true},
        {"float16", "fp16", 65504.0, p(-14), p(-24), true, true, true},
        {"torch.float16", "fp16", 65504.0, p(-14), p(-24), true, true, true},
        {"float32", "fp32", 3.4028234663852886e38, p(-126), p(-149), true, true, true},
    };
    for (const Documented& t : types) {
        const FormatSpec f = parseFormat(t.name);
        QVERIFY2(f.sameParameters(parseFormat(t.ours)), t.name);
        QCOMPARE(f.maxFinite(), t.max);
        QCOMPARE(f.minNormal(), t.minNormal);
        QCOMPARE(f.minPositive(), t.minSubnormal);
        QCOMPARE(f.hasInf(), t.inf);
        QCOMPARE(f.hasNan(), t.nan);
        QCOMPARE(f.hasNegativeZero(), t.negativeZero);
    }
    // float8_e8m0fnu: unsigned, no zero, 2^-127 .. 2^127, NaN at 0xFF.
    const FormatSpec e8m0 = parseFormat("float8_e8m0fnu");
    QVERIFY(!e8m0.isSigned && !e8m0.hasZero && e8m0.hasNan());
    QCOMPARE(e8m0.maxFinite(), p(127));
    QCOMPARE(e8m0.minPositive(), p(-127));
    // Our names for the named ones: what a record and the app say.
    QCOMPARE(parseFormat("float8_e4m3fn").name, std::string("fp8-e4m3"));
    QCOMPARE(parseFormat("BFloat16").name, std::string("bf16"));
}

QTEST_APPLESS_MAIN(TestFormatSpec)
#include "test_format_spec.moc"
