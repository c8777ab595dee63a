// IDX reading (plain and gzip) and its errors on bad files; the synthetic data set.
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>

#include "data/dataset.h"
#include "data/idx_reader.h"

#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

using namespace plab;

class TestDatasets : public QObject {
    Q_OBJECT
private slots:
    void readsPlainAndGzip();
    void gzipChecksumErrorsAreErrors();
    void badFiles_data();
    void badFiles();
    void loadsDirectory();
    void standardisesEveryPixelValue();
    void directoryErrors();
    void syntheticIsDeterministic();
};

namespace {

std::vector<unsigned char> idx(std::vector<std::uint32_t> dims, std::size_t payload,
                               unsigned char type = 0x08) {
    std::vector<unsigned char> bytes = {0, 0, type, static_cast<unsigned char>(dims.size())};
    for (std::uint32_t d : dims)
        for (int shift : {24, 16, 8, 0})
            bytes.push_back(static_cast<unsigned char>(d >> shift));
    for (std::size_t i = 0; i < payload; ++i)
        bytes.push_back(static_cast<unsigned char>(i % 7));
    return bytes;
}

std::string write(const QTemporaryDir& dir, const std::string& name,
                  const std::vector<unsigned char>& bytes, bool gzip = false) {
    const std::string path = dir.path().toStdString() + "/" + name;
    if (gzip) {
        gzFile f = gzopen(path.c_str(), "wb");
        gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
        gzclose(f);
    } else {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
    }
    return path;
}

} // namespace

void TestDatasets::readsPlainAndGzip() {
    QTemporaryDir dir;
    for (bool gz : {false, true}) {
        const IdxArray a = readIdx(write(dir, gz ? "a.gz" : "a", idx({3, 2, 2}, 12), gz));
        QCOMPARE(a.dims, (std::vector<std::uint32_t>{3, 2, 2}));
        QCOMPARE(a.data.size(), std::size_t{12});
        QCOMPARE(int{a.data[8]}, 1); // 8 % 7
    }
}

// A gzip file whose stored CRC (or length) does not match its data is corrupt, whether the
// damage is in the trailer (found only when reading past the data) or anywhere in the stream.
void TestDatasets::gzipChecksumErrorsAreErrors() {
    QTemporaryDir dir;
    // Varied bytes, as images are: flips in the deflate data then mostly decode to other bytes
    // that only the CRC catches.
    std::vector<unsigned char> image = idx({2000, 28, 28}, 0);
    std::uint32_t state = 12345;
    for (int i = 0; i < 2000 * 28 * 28; ++i) {
        state = state * 1664525u + 1013904223u;
        image.push_back(static_cast<unsigned char>((state >> 24) & 0x3F));
    }
    const std::string good = write(dir, "good.gz", image, true);
    std::ifstream in(good, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    QVERIFY(bytes.size() > 80);
    struct Damage {
        const char* name;
        std::size_t offset;
    };
    // The last 8 bytes are the CRC-32 and the length; the middle is deflate data.
    for (const Damage& d :
         {Damage{"crc", bytes.size() - 8}, Damage{"length", bytes.size() - 3},
          Damage{"data", bytes.size() / 2}, Damage{"late data", bytes.size() - 60}}) {
        std::vector<unsigned char> bad(bytes.begin(), bytes.end());
        for (std::size_t i = d.offset; i < std::min(bad.size(), d.offset + 50); ++i)
            bad[i] ^= 0x01;
        const std::string path = write(dir, std::string("bad-") + d.name + ".gz", bad);
        try {
            readIdx(path);
            QFAIL(qPrintable(QStringLiteral("no error for damaged %1").arg(QLatin1String(d.name))));
        } catch (const DataError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QString::fromStdString(path)), e.what());
        }
    }
}

void TestDatasets::badFiles_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("mustMention");
    auto bytes = [](const std::vector<unsigned char>& v) {
        return QByteArray(reinterpret_cast<const char*>(v.data()),
                          static_cast<qsizetype>(v.size()));
    };
    std::vector<unsigned char> badMagic = idx({4}, 4);
    badMagic[0] = 0x1f;
    QTest::newRow("wrong magic") << bytes(badMagic) << "not an IDX file";
    QTest::newRow("float type") << bytes(idx({4}, 16, 0x0D)) << "unsupported IDX element type 0x0d";
    QTest::newRow("truncated data") << bytes(idx({10, 28, 28}, 500)) << "truncated";
    QTest::newRow("truncated header") << bytes({0, 0, 8, 3, 0, 0}) << "truncated";
    QTest::newRow("too long") << bytes(idx({4}, 5)) << "longer than its header";
    QTest::newRow("absurd size") << bytes(idx({60000, 60000, 60000}, 0)) << "refusing";
    QTest::newRow("zero dimension") << bytes(idx({0, 28}, 0)) << "is 0";
    QTest::newRow("rank 9") << bytes({0, 0, 8, 9}) << "rank 9";
}

void TestDatasets::badFiles() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, mustMention);
    QTemporaryDir dir;
    const std::string path =
        write(dir, "bad", std::vector<unsigned char>(bytes.begin(), bytes.end()));
    try {
        readIdx(path);
        QFAIL("no error");
    } catch (const DataError& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.contains(QString::fromStdString(path)), e.what());
        QVERIFY2(msg.contains(mustMention), e.what());
    }
}

void TestDatasets::loadsDirectory() {
    QTemporaryDir dir;
    write(dir, "train-images-idx3-ubyte.gz", idx({5, 4, 4}, 80), true);
    write(dir, "train-labels-idx1-ubyte.gz", idx({5}, 5), true);
    write(dir, "t10k-images-idx3-ubyte", idx({2, 4, 4}, 32));
    write(dir, "t10k-labels-idx1-ubyte", idx({2}, 2));
    const DataSplit d = loadIdxDirectory(dir.path().toStdString());
    QCOMPARE(d.train.count(), std::size_t{5});
    QCOMPARE(d.test.count(), std::size_t{2});
    QCOMPARE(d.train.shape.size(), 16);
    QCOMPARE(d.train.classes, 5); // labels 0..4
    double mean = 0.0;
    for (float v : d.train.features)
        mean += v;
    QVERIFY(std::fabs(mean / static_cast<double>(d.train.features.size())) < 1e-5); // normalised
}

// Every byte value, in a scrambled order, against the definition feature by feature: pixel / 255
// in float, the training features' mean and standard deviation summed in double in order,
// (v - mean) / sd rounded to float. Bit for bit (the loader looks the 256 results up).
void TestDatasets::standardisesEveryPixelValue() {
    auto images = [](std::uint32_t count, std::uint32_t salt) {
        std::vector<unsigned char> bytes = idx({count, 16, 16}, 0);
        for (std::uint32_t i = 0; i < count * 256; ++i)
            bytes.push_back(static_cast<unsigned char>((i * 37 + salt * i / 256) % 256));
        return bytes;
    };
    QTemporaryDir dir;
    const std::vector<unsigned char> train = images(3, 11), test = images(2, 5);
    write(dir, "train-images-idx3-ubyte", train);
    write(dir, "train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 2});
    write(dir, "t10k-images-idx3-ubyte", test, true);
    write(dir, "t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 2, 2, 0});
    const DataSplit d = loadIdxDirectory(dir.path().toStdString());
    constexpr std::size_t kHeader = 16; // magic and three dimensions
    auto scaled = [](unsigned char b) { return static_cast<float>(b) / 255.0f; };
    double sum = 0.0, sumSq = 0.0;
    for (std::size_t i = kHeader; i < train.size(); ++i) {
        const float v = scaled(train[i]);
        sum += v;
        sumSq += static_cast<double>(v) * v;
    }
    const double n = static_cast<double>(train.size() - kHeader);
    const double mean = sum / n;
    const double sd = std::sqrt(std::max(sumSq / n - mean * mean, 1e-12));
    for (const auto& [bytes, features] :
         {std::pair{&train, &d.train.features}, std::pair{&test, &d.test.features}}) {
        QCOMPARE(features->size(), bytes->size() - kHeader);
        for (std::size_t i = 0; i < features->size(); ++i) {
            const float want = static_cast<float>((scaled((*bytes)[kHeader + i]) - mean) / sd);
            if (std::bit_cast<std::uint32_t>((*features)[i]) != std::bit_cast<std::uint32_t>(want))
                QFAIL(qPrintable(QStringLiteral("feature %1 (pixel %2): %3, expected %4")
                                     .arg(i)
                                     .arg((*bytes)[kHeader + i])
                                     .arg(double((*features)[i]), 0, 'g', 9)
                                     .arg(double(want), 0, 'g', 9)));
        }
    }
}

void TestDatasets::directoryErrors() {
    QTemporaryDir dir;
    write(dir, "train-images-idx3-ubyte", idx({5, 4, 4}, 80));
    write(dir, "train-labels-idx1-ubyte", idx({6}, 6));
    write(dir, "t10k-images-idx3-ubyte", idx({2, 4, 4}, 32));
    try {
        loadIdxDirectory(dir.path().toStdString());
        QFAIL("no error");
    } catch (const DataError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("5 images but")), e.what());
    }
    write(dir, "train-labels-idx1-ubyte", idx({5}, 5));
    try {
        loadIdxDirectory(dir.path().toStdString());
        QFAIL("no error");
    } catch (const DataError& e) {
        QVERIFY2(
            QString::fromUtf8(e.what()).contains(QLatin1String("missing t10k-labels-idx1-ubyte")),
            e.what());
    }
    QVERIFY_THROWS_EXCEPTION(DataError, loadIdxDirectory("/nonexistent/dir"));
    // A stray label (200 among classes 0..4) is refused, not a model with 201 outputs.
    write(dir, "t10k-labels-idx1-ubyte", idx({2}, 2));
    QCOMPARE(loadIdxDirectory(dir.path().toStdString()).train.classes, 5);
    std::vector<unsigned char> stray = idx({2}, 2);
    stray.back() = 200;
    write(dir, "t10k-labels-idx1-ubyte", stray);
    try {
        loadIdxDirectory(dir.path().toStdString());
        QFAIL("no error for label 200");
    } catch (const DataError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(
                     QLatin1String("labels go up to 200 (in the test labels) but class 5 never "
                                   "occurs in the training labels")),
                 e.what());
    }
}

void TestDatasets::syntheticIsDeterministic() {
    const DataSplit a = makeSyntheticData(5, 500, 100), b = makeSyntheticData(5, 500, 100);
    const DataSplit c = makeSyntheticData(6, 500, 100);
    QVERIFY(a.train.features == b.train.features);
    QVERIFY(a.train.labels == b.train.labels);
    QVERIFY(a.train.features != c.train.features);
    QCOMPARE(a.train.classes, 10);
    QCOMPARE(a.train.shape.size(), 784);
    std::vector<int> perClass(10, 0);
    for (std::uint8_t l : a.train.labels)
        ++perClass[l];
    for (int n : perClass)
        QVERIFY(n > 20); // every class present
}

QTEST_APPLESS_MAIN(TestDatasets)
#include "test_datasets.moc"
