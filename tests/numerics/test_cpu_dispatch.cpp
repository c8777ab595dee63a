// The one CPU dispatch (util/cpu_features.h): the paths follow the probed features, the cap
// PLAB_CPU_KERNEL limits the quantise kernels and the block passes alike, and a cap naming no path
// is one line naming the variable. CTest runs this binary uncapped and under each cap
// (tests/numerics/CMakeLists.txt), since the cap is read once per process.
#include <QTest>

#include "numerics/block_lanes.h"
#include "numerics/format_spec.h"
#include "numerics/quantizer.h"
#include "util/cpu_features.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

using namespace plab;

namespace {

// The path the cap asks for on this CPU (what autoCpuKernel must return), or Auto for a cap
// that names no path.
CpuKernel expectedAuto() {
    const std::vector<CpuKernel> supported = supportedCpuKernels();
    const QByteArray cap = qgetenv("PLAB_CPU_KERNEL");
    if (cap.isEmpty())
        return supported.back();
    for (CpuKernel k : {CpuKernel::Generic, CpuKernel::Avx2, CpuKernel::Avx512})
        if (cap == toString(k))
            return std::min(k, supported.back());
    return CpuKernel::Auto;
}

} // namespace

class TestCpuDispatch : public QObject {
    Q_OBJECT
private slots:
    void pathsFollowTheFeatures();
    void theCapLimitsTheQuantiseKernels();
    void theBlockPassesFollowTheSameChoice();
};

void TestCpuDispatch::pathsFollowTheFeatures() {
    const CpuFeatures& f = cpuFeatures();
    std::vector<CpuKernel> expected{CpuKernel::Generic};
    if (f.avx2)
        expected.push_back(CpuKernel::Avx2);
    if (f.avx512)
        expected.push_back(CpuKernel::Avx512);
    QVERIFY(supportedCpuKernels() == expected);
    QVERIFY(&cpuFeatures() == &f); // probed once
    // An explicit kernel this CPU lacks is refused; each one it has is the one that runs.
    const QuantConfig config = QuantConfig::forFormat(parseFormat("fp8-e4m3"));
    for (CpuKernel k : expected)
        QVERIFY(Quantizer(config, k).kernel() == k);
    if (!f.avx512)
        QVERIFY_THROWS_EXCEPTION(FormatError, Quantizer(config, CpuKernel::Avx512));
}

void TestCpuDispatch::theCapLimitsTheQuantiseKernels() {
    const CpuKernel expected = expectedAuto();
    const QuantConfig config = QuantConfig::forFormat(parseFormat("fp8-e4m3"));
    if (expected == CpuKernel::Auto) { // a cap naming no path
        try {
            autoCpuKernel();
            QFAIL("a PLAB_CPU_KERNEL naming no path was accepted");
        } catch (const std::invalid_argument& e) {
            const std::string message = e.what();
            QVERIFY2(message.find("PLAB_CPU_KERNEL=\"") == 0 &&
                         message.find("expected generic, avx2 or avx512") != std::string::npos,
                     e.what());
        }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Quantizer{config});
        return;
    }
    QCOMPARE(toString(autoCpuKernel()), toString(expected));
    QCOMPARE(toString(Quantizer(config).kernel()), toString(expected));
}

void TestCpuDispatch::theBlockPassesFollowTheSameChoice() {
    const CpuKernel block = blocks::blockPassKernel();
    const CpuKernel widest = expectedAuto();
#if defined(PLAB_BLOCK_LANES)
    CpuKernel expected = CpuKernel::Generic; // also for a cap naming no path
    if (widest == CpuKernel::Avx512 && cpuFeatures().avx512cd)
        expected = CpuKernel::Avx512;
    else if (widest >= CpuKernel::Avx2)
        expected = CpuKernel::Avx2;
    QCOMPARE(toString(block), toString(expected));
#else
    (void)widest;
    QCOMPARE(toString(block), toString(CpuKernel::Generic)); // the plain loops only
#endif
}

QTEST_GUILESS_MAIN(TestCpuDispatch)
#include "test_cpu_dispatch.moc"
