// Text for the GPT (core/data/text_corpus): the 90/10 split, files as bytes, fortunes joined as
// the PyTorch peer joins them, the synthetic text, the bigram baseline and the training windows.
#include "data/text_corpus.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace plab;

class TestTextCorpus : public QObject {
    Q_OBJECT
private slots:
    void splitsNinetyTen();
    void tooShortTextNamesTheSource();
    void fileAsBytes();
    void fortunesJoinedAsThePeer();
    void missingFortunesSaysWhatToInstall();
    void syntheticTextIsDeterministicAndLearnable();
    void windowsPredictTheNextByte();
};

namespace {
void writeFile(const std::filesystem::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}
} // namespace

void TestTextCorpus::splitsNinetyTen() {
    std::vector<std::uint8_t> bytes(1000);
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<std::uint8_t>(i);
    const TextCorpus c = splitText("t", bytes, 8);
    QCOMPARE(c.train.size(), std::size_t{900});
    QCOMPARE(c.validation.size(), std::size_t{100});
    QCOMPARE(c.validation.front(), std::uint8_t(900 % 256));
}

void TestTextCorpus::tooShortTextNamesTheSource() {
    try {
        splitText("text:tiny.txt", std::vector<std::uint8_t>(50, 'a'), 64);
        QFAIL("no error");
    } catch (const DataError& e) {
        QVERIFY2(QString(e.what()).contains("text:tiny.txt") &&
                     QString(e.what()).contains("50 bytes"),
                 e.what());
    }
}

void TestTextCorpus::fileAsBytes() {
    QTemporaryDir dir;
    const std::filesystem::path p = dir.filePath("a.txt").toStdString();
    std::string text(200, 'x');
    text[180] = '\0'; // any byte, zeros included
    writeFile(p, text);
    const TextCorpus c = loadTextFile(p.string(), 8);
    QCOMPARE(c.train.size() + c.validation.size(), std::size_t{200});
    QCOMPARE(c.train.size(), std::size_t{180});
    QCOMPARE(c.validation[0], std::uint8_t(0));
    QVERIFY_THROWS_EXCEPTION(DataError, loadTextFile(dir.filePath("none.txt").toStdString(), 8));
}

void TestTextCorpus::fortunesJoinedAsThePeer() {
    // Regular files sorted by name, joined with "\n"; .dat files and links left out.
    QTemporaryDir dir;
    const std::filesystem::path root = dir.path().toStdString();
    writeFile(root / "b", std::string(100, 'b'));
    writeFile(root / "a", std::string(100, 'a'));
    writeFile(root / "a.dat", std::string(100, 'D'));
    std::filesystem::create_symlink(root / "a", root / "c");
    const TextCorpus c = loadFortunes(8, root.string());
    std::string all(c.train.begin(), c.train.end());
    all.append(c.validation.begin(), c.validation.end());
    std::string expected(100, 'a'); // appended: GCC 12 warns (-Warray-bounds, a false
    expected += '\n';               // positive) on std::string(100, 'a') + "\n"
    expected += std::string(100, 'b');
    QCOMPARE(all, expected);
}

void TestTextCorpus::missingFortunesSaysWhatToInstall() {
    try {
        loadFortunes(8, "/nonexistent/fortunes");
        QFAIL("no error");
    } catch (const DataError& e) {
        QVERIFY2(QString(e.what()).contains("apt-get install fortunes"), e.what());
    }
}

void TestTextCorpus::syntheticTextIsDeterministicAndLearnable() {
    const TextCorpus a = makeSyntheticText(7, 200000, 64), b = makeSyntheticText(7, 200000, 64),
                     c = makeSyntheticText(8, 200000, 64);
    QCOMPARE(a.train, b.train);
    QVERIFY(a.train != c.train);
    QCOMPARE(a.train.size() + a.validation.size(), std::size_t{200000});
    // Printable sentences: letters, spaces, commas, full stops, newlines.
    for (std::uint8_t ch : a.train)
        QVERIFY(std::isalpha(ch) || ch == ' ' || ch == ',' || ch == '.' || ch == '\n');
    // Structure a bigram model finds (uniform bytes would be 8 bits, uniform letters 4.7) and
    // more that it cannot (the words): measured 3.4 bits/byte.
    const double bigram = bigramBitsPerByte(a);
    QVERIFY2(bigram > 2.5 && bigram < 4.0, qPrintable(QString::number(bigram)));
}

void TestTextCorpus::windowsPredictTheNextByte() {
    std::vector<std::uint8_t> text(300);
    for (std::size_t i = 0; i < text.size(); ++i)
        text[i] = static_cast<std::uint8_t>(i % 251);
    std::mt19937_64 rng(3), same(3);
    std::vector<std::uint8_t> in(4 * 16), target(4 * 16), in2(in.size()), target2(in.size());
    sampleWindows(text, 4, 16, rng, in.data(), target.data());
    sampleWindows(text, 4, 16, same, in2.data(), target2.data());
    QCOMPARE(in, in2); // seeded
    for (std::size_t i = 0; i < in.size(); ++i)
        QCOMPARE(target[i], std::uint8_t((in[i] + 1) % 251));
}

QTEST_APPLESS_MAIN(TestTextCorpus)
#include "test_text_corpus.moc"
