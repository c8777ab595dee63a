// Bit-exactness against NVIDIA's host conversions: our codes (encode) and our fused kernel's
// values must equal NVIDIA's for fp16, bf16, both FP8 formats in both overflow modes, both FP6
// formats, FP4 and E8M0. CI checks a dense set holding every tie and boundary; the exhaustive
// sweep over all 2^32 inputs runs with PLAB_EXHAUSTIVE=1 (CTest label `exhaustive`).
#include <QTest>

#if defined(PLAB_HAVE_CUDA_HEADERS)
#include "dense_inputs.h"
#include "numerics/codec.h"
#include "numerics/quantizer.h"
#include "nvidia_reference.h"
#include "util/thread_pool.h"

#include <atomic>
#include <bit>
#include <cmath>
#include <thread>
#endif

using namespace plab;

class TestNvidiaBitexact : public QObject {
    Q_OBJECT
private slots:
    void denseCodes();
    void denseKernelValues();
    void exhaustiveSweep();
};

#if !defined(PLAB_HAVE_CUDA_HEADERS)
void TestNvidiaBitexact::denseCodes() {
    QSKIP("NVIDIA's cuda_fp*.h headers were not found at configure time (install the CUDA "
          "toolkit or set CUDA_HOME); bit-exactness against them is not checked");
}
void TestNvidiaBitexact::denseKernelValues() {
    denseCodes();
}
void TestNvidiaBitexact::exhaustiveSweep() {
    denseCodes();
}
#else

namespace {

bool skipInput(const test::NvidiaConversion& c, float x) {
    return c.positiveOnly && std::signbit(x) && !std::isnan(x);
}

// Our float for NVIDIA's code: NaN for every NaN input, whatever code NVIDIA gives it.
std::uint32_t expectedValueBits(const test::NvidiaConversion& c, float x, std::uint32_t code) {
    if (std::isnan(x))
        return 0x7FC00000u;
    const float v = decode(c.config.format, code);
    return std::isnan(v) ? (std::bit_cast<std::uint32_t>(v) & 0x80000000u) | 0x7FC00000u
                         : std::bit_cast<std::uint32_t>(v);
}

QString describe(const test::NvidiaConversion& c, float x, std::uint32_t ours,
                 std::uint32_t theirs) {
    return QStringLiteral("%1: input 0x%2 (%3): ours 0x%4, NVIDIA 0x%5")
        .arg(QString::fromStdString(c.name))
        .arg(std::bit_cast<std::uint32_t>(x), 8, 16, QLatin1Char('0'))
        .arg(static_cast<double>(x), 0, 'g', 9)
        .arg(ours, 0, 16)
        .arg(theirs, 0, 16);
}

} // namespace

void TestNvidiaBitexact::denseCodes() {
    const std::vector<float> inputs = test::denseInputs();
    for (const test::NvidiaConversion& c : test::nvidiaConversions()) {
        std::size_t checked = 0;
        for (float x : inputs) {
            if (skipInput(c, x))
                continue;
            const std::uint32_t theirs = c.convert(x);
            const std::uint32_t ours = encode(c.config, x);
            if (ours != theirs)
                QFAIL(qPrintable(describe(c, x, ours, theirs)));
            ++checked;
        }
        QVERIFY2(checked > inputs.size() / 3, c.name.c_str());
    }
}

void TestNvidiaBitexact::denseKernelValues() {
    const std::vector<float> inputs = test::denseInputs();
    std::vector<float> out(inputs.size());
    for (CpuKernel kernel : supportedCpuKernels()) {
        for (const test::NvidiaConversion& c : test::nvidiaConversions()) {
            Quantizer(c.config, kernel).quantize(inputs, out, nullptr);
            for (std::size_t i = 0; i < inputs.size(); ++i) {
                const float x = inputs[i];
                if (skipInput(c, x))
                    continue;
                const std::uint32_t expected = expectedValueBits(c, x, c.convert(x));
                const std::uint32_t ours = std::bit_cast<std::uint32_t>(out[i]);
                if (ours != expected)
                    QFAIL(qPrintable(
                        QStringLiteral("kernel %1, ").arg(QLatin1String(toString(kernel))) +
                        describe(c, x, ours, expected)));
            }
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

QTEST_APPLESS_MAIN(TestNvidiaBitexact)
#include "test_nvidia_bitexact.moc"
