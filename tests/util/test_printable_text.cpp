// printableText (issue 65 item 8): control bytes (ESC above all) and invalid UTF-8 are escaped,
// valid text (accents, CJK, emoji) is kept byte for byte, C1 controls are escaped too.
#include <QTest>

#include "util/printable_text.h"

using namespace plab;

class TestPrintableText : public QObject {
    Q_OBJECT
private slots:
    void escapesControlBytes();
    void keepsValidUtf8AndEscapesTheRest();
};

void TestPrintableText::escapesControlBytes() {
    QCOMPARE(printableText("e4m3:\x1b[31m"), std::string("e4m3:\\x1b[31m"));
    QCOMPARE(printableText(std::string_view("a\0b", 3)), std::string("a\\x00b"));
    QCOMPARE(printableText("a\nb\tc\x7f"), std::string("a\\x0ab\\x09c\\x7f"));
    QCOMPARE(printableText("C:\\path"), std::string("C:\\path")); // a backslash stays
}

void TestPrintableText::keepsValidUtf8AndEscapesTheRest() {
    const std::string valid = "r\xc3\xa9sum\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x98\x80";
    QCOMPARE(printableText(valid), valid);
    QCOMPARE(printableText("\xc2\x9b"
                           "31m"),
             std::string("\\u009b31m")); // C1 CSI
    QCOMPARE(printableText("a\xff"
                           "b"),
             std::string("a\\xffb"));
    QCOMPARE(printableText("\xc0\xaf"), std::string("\\xc0\\xaf"));          // overlong '/'
    QCOMPARE(printableText("\xed\xa0\x80"), std::string("\\xed\\xa0\\x80")); // a surrogate
    QCOMPARE(printableText("\xe6\xbc"), std::string("\\xe6\\xbc"));          // cut short
}

QTEST_GUILESS_MAIN(TestPrintableText)
#include "test_printable_text.moc"
