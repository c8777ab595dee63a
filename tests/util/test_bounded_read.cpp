// readBounded: a file under the ceiling whole, an endless one (/dev/zero) refused one byte past
// it, a directory and a missing file named as such.
#include <QTemporaryDir>
#include <QTest>

#include "util/bounded_read.h"

#include <fstream>

using namespace plab;

class TestBoundedRead : public QObject {
    Q_OBJECT
private slots:
    void readsWholeFilesUnderTheCeiling();
    void refusesWhatNeverEnds();
    void namesDirectoriesAndMissingFiles();
};

void TestBoundedRead::readsWholeFilesUnderTheCeiling() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("f")).toStdString();
    const std::string text(100000, 'x');
    std::ofstream(path, std::ios::binary) << text;
    std::string out;
    QCOMPARE(readBounded(path, text.size(), out), BoundedRead::Ok); // exactly at the ceiling
    QCOMPARE(out, text);
    QCOMPARE(readBounded(path, text.size() - 1, out), BoundedRead::TooLarge);
}

void TestBoundedRead::refusesWhatNeverEnds() {
    std::string out;
    QCOMPARE(readBounded("/dev/zero", std::size_t{1} << 20, out), BoundedRead::TooLarge);
    QVERIFY(out.size() > (std::size_t{1} << 20) && out.size() <= (std::size_t{1} << 20) + 65536);
    QCOMPARE(describeBytes(std::size_t{16} << 20), std::string("16 MiB"));
    QCOMPARE(describeBytes(std::size_t{1} << 30), std::string("1 GiB"));
    QCOMPARE(describeBytes(1000), std::string("1000 bytes"));
}

void TestBoundedRead::namesDirectoriesAndMissingFiles() {
    QTemporaryDir dir;
    std::string out;
    QCOMPARE(readBounded(dir.path().toStdString(), 100, out), BoundedRead::IsADirectory);
    QCOMPARE(readBounded(dir.filePath(QStringLiteral("missing")).toStdString(), 100, out),
             BoundedRead::CannotOpen);
}

QTEST_APPLESS_MAIN(TestBoundedRead)
#include "test_bounded_read.moc"
