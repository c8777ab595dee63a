// The bands every view draws a format with: flushed, subnormal, normal, overflow on a log2 axis,
// and no subnormal band for a format without subnormals (issue 42 item 23: e5m2:bias=16:nosub
// was drawn with one, though its values there round up to the smallest normal).
#include <QTest>

#include "format_bands.h"
#include "numerics/format_spec.h"

#include <cmath>

using namespace plab;

class TestFormatBands : public QObject {
    Q_OBJECT
private slots:
    void withSubnormals();
    void withoutSubnormals();
};

void TestFormatBands::withSubnormals() {
    const FormatBands e4m3 = formatBands(parseFormat("fp8-e4m3"));
    QCOMPARE(e4m3.flushBelow, -10.0); // half of 2^-9
    QCOMPARE(e4m3.normalFrom, -6.0);
    QCOMPARE(e4m3.overflowFrom, std::log2(448.0));
}

void TestFormatBands::withoutSubnormals() {
    const FormatSpec f = parseFormat("e5m2:bias=16:nosub");
    const FormatBands b = formatBands(f);
    QCOMPARE(b.flushBelow, -16.0); // half of the smallest normal, 2^-15
    QCOMPARE(b.normalFrom, b.flushBelow);
    QCOMPARE(b.overflowFrom, std::log2(f.maxFinite()));
}

QTEST_APPLESS_MAIN(TestFormatBands)
#include "test_format_bands.moc"
