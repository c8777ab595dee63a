// Every code of every format of 16 bits or fewer: decode -> encode gives the code back (its
// canonical spelling), the fused kernel leaves decoded values unchanged, positive codes decode in
// increasing order, and the number of finite codes matches finiteValueCount().
#include <QTest>

#include "numerics/codec.h"
#include "numerics/quantizer.h"

#include <bit>
#include <cmath>
#include <vector>

using namespace plab;

class TestCodecRoundtrip : public QObject {
    Q_OBJECT
private slots:
    void everyCode_data();
    void everyCode();
    void knownCodes();
};

void TestCodecRoundtrip::everyCode_data() {
    QTest::addColumn<QString>("format");
    for (const FormatSpec& f : namedFormats())
        if (f.totalBits() <= 16)
            QTest::newRow(f.name.c_str()) << QString::fromStdString(f.name);
    for (const char* custom : {"e5m2:bias=16:nosub", "e4m3:nosub", "e4m3:unsigned", "e3m4:fnuz",
                               "e6m9", "e2m5:finite", "e5m3:fn:unsigned", "e4m0:fn", "e3m1:nozero"})
        QTest::newRow(custom) << QString::fromLatin1(custom);
}

void TestCodecRoundtrip::everyCode() {
    QFETCH(QString, format);
    const FormatSpec f = parseFormat(format.toStdString());
    const QuantConfig config = QuantConfig::forFormat(f);
    const std::uint32_t codes = 1u << f.totalBits();
    const std::uint32_t signBit = f.isSigned ? codes >> 1 : 0u;
    const std::uint32_t mantMask = (1u << f.mantissaBits) - 1u;

    std::vector<float> values;
    std::uint64_t finite = 0;
    double previous = -1.0;
    for (std::uint32_t code = 0; code < codes; ++code) {
        const float v = decode(f, code);
        if (std::isnan(v)) {
            QVERIFY(std::isnan(decode(f, encode(config, v))));
            continue;
        }
        std::uint32_t canonical = code;
        const bool fieldZero = ((code & ~signBit) >> f.mantissaBits) == 0;
        if (f.hasZero && !f.subnormals && fieldZero) // without subnormals field 0 is only zero
            canonical = code & ~mantMask;
        if (canonical == code && std::isfinite(v))
            ++finite;
        QVERIFY2(encode(config, v) == canonical,
                 qPrintable(QStringLiteral("code 0x%1 decodes to %2, encodes to 0x%3")
                                .arg(code, 0, 16)
                                .arg(static_cast<double>(v), 0, 'g', 9)
                                .arg(encode(config, v), 0, 16)));
        if ((code & signBit) == 0 && std::isfinite(v) && canonical == code) {
            QVERIFY2(
                v > previous || (v == 0.0f && previous < 0.0),
                qPrintable(QStringLiteral("code 0x%1 not above its predecessor").arg(code, 0, 16)));
            previous = v;
        }
        values.push_back(v);
    }
    QCOMPARE(finite, f.finiteValueCount());

    std::vector<float> out(values.size());
    for (CpuKernel kernel : supportedCpuKernels()) {
        for (Rounding r : kAllRoundings) {
            Quantizer(QuantConfig::forFormat(f, r), kernel).quantize(values, out, nullptr);
            for (std::size_t i = 0; i < values.size(); ++i)
                QVERIFY2(std::bit_cast<std::uint32_t>(out[i]) ==
                             std::bit_cast<std::uint32_t>(values[i]),
                         qPrintable(QStringLiteral("%1 moved to %2 (%3, %4)")
                                        .arg(static_cast<double>(values[i]), 0, 'g', 9)
                                        .arg(static_cast<double>(out[i]), 0, 'g', 9)
                                        .arg(QLatin1String(toString(kernel)))
                                        .arg(QLatin1String(toString(r).data()))));
        }
    }
}

// Spot checks of layouts people quote.
void TestCodecRoundtrip::knownCodes() {
    const FormatSpec e4m3 = parseFormat("fp8-e4m3");
    QCOMPARE(decode(e4m3, 0x7E), 448.0f);
    QVERIFY(std::isnan(decode(e4m3, 0x7F)));
    QCOMPARE(decode(e4m3, 0x01), std::ldexp(1.0f, -9));
    const FormatSpec fnuz = parseFormat("fp8-e4m3fnuz");
    QVERIFY(std::isnan(decode(fnuz, 0x80)));
    QCOMPARE(decode(fnuz, 0x7F), 240.0f);
    const FormatSpec e5m2 = parseFormat("fp8-e5m2");
    QVERIFY(std::isinf(decode(e5m2, 0x7C)));
    QCOMPARE(decode(e5m2, 0x7B), 57344.0f);
    const FormatSpec fp4 = parseFormat("fp4-e2m1");
    const float fp4Values[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (std::uint32_t code = 0; code < 8; ++code) {
        QCOMPARE(decode(fp4, code), fp4Values[code]);
        QCOMPARE(decode(fp4, code | 8u), -fp4Values[code]);
    }
    const FormatSpec e8m0 = parseFormat("e8m0");
    QCOMPARE(decode(e8m0, 0x00), std::ldexp(1.0f, -127));
    QCOMPARE(decode(e8m0, 0x7F), 1.0f);
    QVERIFY(std::isnan(decode(e8m0, 0xFF)));
    QCOMPARE(codeToHex(e4m3, 0x7E), std::string("0x7e"));
    QCOMPARE(codeToHex(parseFormat("fp16"), 0x3C00), std::string("0x3c00"));
}

QTEST_APPLESS_MAIN(TestCodecRoundtrip)
#include "test_codec_roundtrip.moc"
