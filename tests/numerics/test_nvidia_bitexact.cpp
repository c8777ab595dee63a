// Bit-exactness against NVIDIA's host conversions: our codes (encode) and our fused kernels'
// values must equal NVIDIA's for fp16, bf16, both FP8 formats in both overflow modes, both FP6
// formats, FP4 and E8M0 (round-toward-zero and round-nearest). Every machine checks the dense
// inputs (every tie and boundary) against the golden tables NVIDIA's headers produced
// (tests/numerics/golden, golden_table.h); a missing or damaged table fails. Where the headers
// are installed, the tables are checked against them too, and the exhaustive sweep over all 2^32
// inputs runs with PLAB_EXHAUSTIVE=1 (CTest label `exhaustive`).
#include "dense_inputs.h"
#include "golden_conversions.h"
#include "golden_table.h"
#include "numerics/codec.h"
#include "numerics/quantizer.h"

#include <QCoreApplication>
#include <QDir>
#include <QTest>

#include <bit>
#include <cmath>
#include <map>

#if defined(PLAB_HAVE_CUDA_HEADERS)
#include "nvidia_reference.h"
#include "util/thread_pool.h"

#include <atomic>
#include <thread>
#endif

using namespace plab;

class TestNvidiaBitexact : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void goldenCodes();
    void goldenKernelValues();
    void damagedTablesAreRefused();
    void tablesAreNvidiasOwn();
    void exhaustiveSweep();

private:
    std::vector<float> inputs_;
    QString folder_;
    // Read once, by conversion name: a missing or damaged one keeps its error for every check.
    std::map<std::string, test::GoldenTable> tables_;
    const test::GoldenTable& table(const test::GoldenConversion& c) const {
        return tables_.at(c.name);
    }
};

namespace {

bool skipInput(const test::GoldenConversion& c, float x) {
    return c.positiveOnly && std::signbit(x) && !std::isnan(x);
}

// Our float for NVIDIA's code: NaN for every NaN input, whatever code NVIDIA gives it.
std::uint32_t expectedValueBits(const test::GoldenConversion& c, float x, std::uint32_t code) {
    if (std::isnan(x))
        return 0x7FC00000u;
    const float v = decode(c.config.format, code);
    return std::isnan(v) ? (std::bit_cast<std::uint32_t>(v) & 0x80000000u) | 0x7FC00000u
                         : std::bit_cast<std::uint32_t>(v);
}

QString describe(const test::GoldenConversion& c, float x, std::uint32_t ours,
                 std::uint32_t theirs) {
    return QStringLiteral("%1: input 0x%2 (%3): ours 0x%4, NVIDIA 0x%5")
        .arg(QString::fromStdString(c.name))
        .arg(std::bit_cast<std::uint32_t>(x), 8, 16, QLatin1Char('0'))
        .arg(static_cast<double>(x), 0, 'g', 9)
        .arg(ours, 0, 16)
        .arg(theirs, 0, 16);
}

// The first input whose code differs from the table's, described; empty when all agree.
QString firstCodeMismatch(const test::GoldenConversion& c, const std::vector<float>& inputs,
                          const std::vector<std::uint32_t>& golden) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (skipInput(c, inputs[i]))
            continue;
        const std::uint32_t ours = encode(c.config, inputs[i]);
        if (ours != golden[i])
            return describe(c, inputs[i], ours, golden[i]);
    }
    return {};
}

} // namespace

void TestNvidiaBitexact::initTestCase() {
    folder_ = qEnvironmentVariable("PLAB_GOLDEN_DIR");
    QVERIFY2(!folder_.isEmpty(), "PLAB_GOLDEN_DIR (set by CTest) names tests/numerics/golden");
    inputs_ = test::denseInputs();
    for (const test::GoldenConversion& c : test::goldenConversions())
        tables_[c.name] =
            test::readGoldenTable(test::goldenTablePath(folder_, c.name), c.name, inputs_,
                                  test::bytesPerCode(c.config.format.totalBits()));
}

void TestNvidiaBitexact::goldenCodes() {
    for (const test::GoldenConversion& c : test::goldenConversions()) {
        const test::GoldenTable& golden = table(c);
        QVERIFY2(golden.error.isEmpty(), qPrintable(golden.error));
        const QString mismatch = firstCodeMismatch(c, inputs_, golden.codes);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }
}

void TestNvidiaBitexact::goldenKernelValues() {
    std::vector<float> out(inputs_.size());
    for (CpuKernel kernel : supportedCpuKernels()) {
        for (const test::GoldenConversion& c : test::goldenConversions()) {
            const test::GoldenTable& golden = table(c);
            QVERIFY2(golden.error.isEmpty(), qPrintable(golden.error));
            Quantizer(c.config, kernel).quantize(inputs_, out, nullptr);
            for (std::size_t i = 0; i < inputs_.size(); ++i) {
                const float x = inputs_[i];
                if (skipInput(c, x))
                    continue;
                const std::uint32_t expected = expectedValueBits(c, x, golden.codes[i]);
                const std::uint32_t ours = std::bit_cast<std::uint32_t>(out[i]);
                if (ours != expected)
                    QFAIL(qPrintable(
                        QStringLiteral("kernel %1, ").arg(QLatin1String(toString(kernel))) +
                        describe(c, x, ours, expected)));
            }
        }
    }
}

// A bit flipped in a table's codes names the input it belongs to; one flipped in the compressed
// file fails zlib's checksum; a table missing or made for other inputs is refused by name.
void TestNvidiaBitexact::damagedTablesAreRefused() {
    const test::GoldenConversion c = test::goldenConversions().front();
    const QString path = test::goldenTablePath(folder_, c.name);
    QFile file(path);
    QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(path));
    const QByteArray compressed = file.readAll();
    const QByteArray payload = qUncompress(compressed);
    const int bytes = test::bytesPerCode(c.config.format.totalBits());

    // Every flipped code bit is a mismatch at its input (ones spread over the table and planes).
    const qsizetype headerSize = payload.indexOf('\n') + 1;
    for (std::size_t input : {std::size_t{0}, inputs_.size() / 3, inputs_.size() - 1}) {
        for (int bit : {0, 9}) {
            QByteArray flipped = payload;
            const qsizetype at = headerSize + static_cast<qsizetype>(input) +
                                 (bit / 8) * static_cast<qsizetype>(inputs_.size());
            flipped[at] = static_cast<char>(flipped[at] ^ (1 << (bit % 8)));
            const test::GoldenTable damaged =
                test::codesFromPayload(flipped, c.name, inputs_, bytes);
            QVERIFY(damaged.error.isEmpty());
            const QString mismatch = firstCodeMismatch(c, inputs_, damaged.codes);
            const QString hex =
                QStringLiteral("input 0x%1")
                    .arg(std::bit_cast<std::uint32_t>(inputs_[input]), 8, 16, QLatin1Char('0'));
            QVERIFY2(mismatch.contains(hex), qPrintable(mismatch + QStringLiteral(" / ") + hex));
        }
    }

    QByteArray flippedFile = compressed;
    flippedFile[flippedFile.size() / 2] =
        static_cast<char>(flippedFile[flippedFile.size() / 2] ^ 4);
    QVERIFY(qUncompress(flippedFile) != payload);

    const QString scratch =
        QDir::tempPath() +
        QStringLiteral("/plab-golden-%1").arg(QCoreApplication::applicationPid());
    QVERIFY(QDir().mkpath(scratch));
    const test::GoldenTable missing =
        test::readGoldenTable(test::goldenTablePath(scratch, c.name), c.name, inputs_, bytes);
    QVERIFY2(missing.error.contains(QStringLiteral("missing")), qPrintable(missing.error));
    QVERIFY(test::writeGoldenTable(test::goldenTablePath(scratch, c.name), flippedFile.mid(4)));
    const test::GoldenTable corrupt =
        test::readGoldenTable(test::goldenTablePath(scratch, c.name), c.name, inputs_, bytes);
    QVERIFY2(!corrupt.error.isEmpty(), "a table whose payload is not NVIDIA's codes was read");
    std::vector<float> other = inputs_;
    other[5] = 1.0f;
    const test::GoldenTable stale = test::codesFromPayload(payload, c.name, other, bytes);
    QVERIFY2(stale.error.contains(QStringLiteral("regenerate")), qPrintable(stale.error));
    QDir(scratch).removeRecursively();
}

#if !defined(PLAB_HAVE_CUDA_HEADERS)
void TestNvidiaBitexact::tablesAreNvidiasOwn() {
    QSKIP("NVIDIA's cuda_fp*.h headers were not found at configure time: the golden tables are "
          "checked, the headers themselves are not (install the CUDA toolkit or set CUDA_HOME)");
}
void TestNvidiaBitexact::exhaustiveSweep() {
    tablesAreNvidiasOwn();
}
#else

// The second check: the committed tables are what this machine's headers say, input by input.
void TestNvidiaBitexact::tablesAreNvidiasOwn() {
    for (const test::NvidiaConversion& c : test::nvidiaConversions()) {
        const test::GoldenTable& golden = table(c);
        QVERIFY2(golden.error.isEmpty(), qPrintable(golden.error));
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            const std::uint32_t theirs = c.convert(inputs_[i]);
            if (theirs != golden.codes[i])
                QFAIL(qPrintable(QStringLiteral("table differs from the headers: ") +
                                 describe(c, inputs_[i], golden.codes[i], theirs)));
        }
    }
}

void TestNvidiaBitexact::exhaustiveSweep() {
    if (qEnvironmentVariable("PLAB_EXHAUSTIVE") != QLatin1String("1"))
        QSKIP("set PLAB_EXHAUSTIVE=1 (ctest -L exhaustive) for the sweep over all 2^32 inputs");
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    constexpr std::uint64_t kSlice = 1 << 20;
    for (const test::NvidiaConversion& c : test::nvidiaConversions()) {
        const Quantizer quantizer(c.config);
        std::atomic<std::uint64_t> next{0};
        std::atomic<std::uint64_t> failures{0};
        std::atomic<std::uint64_t> firstFailure{~std::uint64_t{0}};
        std::vector<std::jthread> workers;
        for (unsigned t = 0; t < threads; ++t)
            workers.emplace_back([&] {
                std::vector<float> in(kSlice), out(kSlice);
                for (;;) {
                    const std::uint64_t start = next.fetch_add(kSlice);
                    if (start >= (std::uint64_t{1} << 32))
                        return;
                    for (std::uint64_t i = 0; i < kSlice; ++i)
                        in[i] = std::bit_cast<float>(static_cast<std::uint32_t>(start + i));
                    quantizer.quantize(in, out, nullptr);
                    for (std::uint64_t i = 0; i < kSlice; ++i) {
                        if (skipInput(c, in[i]))
                            continue;
                        const std::uint32_t expected =
                            expectedValueBits(c, in[i], c.convert(in[i]));
                        if (std::bit_cast<std::uint32_t>(out[i]) != expected) {
                            ++failures;
                            std::uint64_t prev = firstFailure.load();
                            while (start + i < prev &&
                                   !firstFailure.compare_exchange_weak(prev, start + i)) {
                            }
                        }
                    }
                }
            });
        workers.clear();
        if (failures != 0) {
            const float x = std::bit_cast<float>(static_cast<std::uint32_t>(firstFailure.load()));
            QFAIL(qPrintable(QStringLiteral("%1 mismatches; first ").arg(failures.load()) +
                             describe(c, x, encode(c.config, x), c.convert(x))));
        }
        qInfo("%s: all 2^32 inputs match", c.name.c_str());
    }
}
#endif

QTEST_GUILESS_MAIN(TestNvidiaBitexact)
#include "test_nvidia_bitexact.moc"
