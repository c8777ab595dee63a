// Block-scaled casts (NVFP4, FP32 blocks, MX floor and ceil) against a scalar reference written
// here from the formulas of numerics/block_scale.h (one block, one element at a time, with the
// element reference quantiser), on random tensors and on edge cases: all-zero blocks, a block of
// one huge value, NaN/Inf inside a block, subnormal scales, partial trailing blocks, 2-D tiles at
// odd shapes; the per-block counters on a constructed tensor; thread-count independence of
// stochastic rounding.
#include <QTest>

#include "block_reference.h"
#include "numerics/block_quantizer.h"
#include "numerics/philox.h"
#include "numerics/reference_quantize.h"
#include "util/thread_pool.h"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace plab;
using namespace plab::block_reference;

class TestBlockFormats : public QObject {
    Q_OBJECT
private slots:
    void matchesReference_data();
    void matchesReference();
    void nvfp4ScaleFormulaByHand();
    void nvfp4FollowsTheFormulaOrder();
    void e4m3ScaleRoundingMatchesTheReference();
    void subnormalScales();
    void scalesOfBlockGroupsMatchTheScalarRule();
    void zeroScaleBlockIsFlushed();
    void mxCeilNeverSaturates();
    void fp32ScalesKeepAFiniteInverse();
    void fourOverSixNeverWorse();
    void blockCountersOnConstructedTensor();
    void stochasticBlocksIndependentOfThreads_data();
    void stochasticBlocksIndependentOfThreads();
    void saturatedMeansRoundedPastTheMax();
    void blockStatsOfARangeMatchOneByOne();
    void badLayoutIsRefused();
    void namedBlockFormats();
};

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
}

// E4M3 (OCP: bias 7, subnormals, no Inf, 0x7F is NaN) decoded from its code.
float decodeE4m3(std::uint32_t code) {
    const std::uint32_t e = (code >> 3) & 0xF, m = code & 7;
    return e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + float(m) / 8.0f, int(e) - 7);
}

// A tensor with a spread of magnitudes, signs, exact zeros and the specials.
std::vector<float> mixedTensor(std::size_t n, std::uint64_t seed, bool specials) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> log2mag(-30.0f, 12.0f);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = normal(rng) * std::exp2(log2mag(rng) * ((i / 40) % 3 == 0 ? 1.0f : 0.2f));
        if (i % 17 == 3)
            v[i] = 0.0f;
    }
    if (specials && n > 100) {
        v[5] = kNaN;
        v[60] = kInf;
        v[61] = -kInf;
        v[99] = 1e-40f; // a float32 subnormal
        for (std::size_t i = 32; i < 48; ++i)
            v[i] = 0.0f; // an all-zero block of 16
    }
    return v;
}

BlockScheme scheme(BlockScaleKind kind, int size, ScaleRounding rounding = ScaleRounding::Floor,
                   bool pow2 = false, bool fourOverSix = false) {
    BlockScheme s;
    s.kind = kind;
    s.blockSize = size;
    s.scaleRounding = rounding;
    s.powerOfTwoScales = pow2;
    s.fourOverSix = fourOverSix;
    return s;
}

QuantConfig saturating(const char* format, Rounding rounding = Rounding::NearestEven) {
    return {parseFormat(format), rounding, Overflow::Saturate};
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b, std::size_t* where) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (bits(a[i]) != bits(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) {
            *where = i;
            return false;
        }
    return true;
}

// Every counter and both histograms of two BlockStats (QCOMPARE returns from here on a
// mismatch: callers check QTest::currentTestFailed()).
void compareBlockStats(const BlockStats& got, const BlockStats& want) {
    QCOMPARE(got.blocks, want.blocks);
    QCOMPARE(got.zeroBlocks, want.zeroBlocks);
    QCOMPARE(got.flushedBlocks, want.flushedBlocks);
    QCOMPARE(got.saturatedBlocks, want.saturatedBlocks);
    QCOMPARE(got.flushedInLiveBlocks, want.flushedInLiveBlocks);
    QCOMPARE(got.liveElements, want.liveElements);
    QCOMPARE(got.scaleHistogram, want.scaleHistogram);
    QCOMPARE(got.rangeHistogram, want.rangeHistogram);
}

} // namespace

void TestBlockFormats::matchesReference_data() {
    QTest::addColumn<QString>("element");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("size");
    QTest::addColumn<bool>("ceil");
    QTest::addColumn<bool>("pow2");
    QTest::addColumn<bool>("fourOverSix");
    QTest::addColumn<bool>("stochastic");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<bool>("tiles");
    const int nv = static_cast<int>(BlockScaleKind::Nvfp4),
              fp = static_cast<int>(BlockScaleKind::Fp32),
              mx = static_cast<int>(BlockScaleKind::Mx);
    QTest::newRow("nvfp4 1-D") << "fp4-e2m1" << nv << 16 << false << false << false << false << 1
                               << 1003 << false;
    QTest::newRow("nvfp4 rows, partial")
        << "fp4-e2m1" << nv << 16 << false << false << false << false << 7 << 37 << false;
    QTest::newRow("nvfp4 stochastic")
        << "fp4-e2m1" << nv << 16 << false << false << false << true << 5 << 100 << false;
    QTest::newRow("nvfp4 tiles 37x53")
        << "fp4-e2m1" << nv << 16 << false << false << false << false << 37 << 53 << true;
    QTest::newRow("nvfp4 4/6") << "fp4-e2m1" << nv << 16 << false << false << true << false << 3
                               << 200 << false;
    QTest::newRow("nvfp4 4/6 stochastic tiles")
        << "fp4-e2m1" << nv << 16 << false << false << true << true << 20 << 33 << true;
    QTest::newRow("fp8 block128") << "fp8-e4m3" << fp << 128 << false << false << false << false
                                  << 3 << 300 << false;
    QTest::newRow("fp8 block128 pow2")
        << "fp8-e4m3" << fp << 128 << false << true << false << false << 1 << 1000 << false;
    QTest::newRow("fp8 128x128 tiles")
        << "fp8-e4m3" << fp << 128 << false << false << false << false << 130 << 257 << true;
    QTest::newRow("mxfp8 floor") << "fp8-e4m3" << mx << 32 << false << false << false << false << 1
                                 << 1000 << false;
    QTest::newRow("mxfp8 ceil") << "fp8-e4m3" << mx << 32 << true << false << false << false << 4
                                << 250 << false;
    QTest::newRow("mxfp6 e3m2 ceil")
        << "fp6-e3m2" << mx << 32 << true << false << false << false << 1 << 999 << false;
    QTest::newRow("mxfp6 e2m3 floor sr")
        << "fp6-e2m3" << mx << 32 << false << false << false << true << 1 << 999 << false;
    // Rows of whole 16-block groups: the CPU's vector-lane passes (the rows above end in
    // partial groups or blocks and take the one-block path for most of it).
    QTest::newRow("nvfp4 16-block groups")
        << "fp4-e2m1" << nv << 16 << false << false << false << false << 3 << 512 << false;
    QTest::newRow("nvfp4 16-block groups stochastic")
        << "fp4-e2m1" << nv << 16 << false << false << false << true << 2 << 768 << false;
    QTest::newRow("mxfp8 16-block groups")
        << "fp8-e4m3" << mx << 32 << false << false << false << false << 2 << 1024 << false;
    QTest::newRow("fp8 block128 16-block groups")
        << "fp8-e4m3" << fp << 128 << false << false << false << false << 1 << 4096 << false;
    // Rows ending in a partial block: each row's whole blocks 16 at a time, the rest one by one.
    QTest::newRow("mxfp8 groups in rows with a partial block")
        << "fp8-e4m3" << mx << 32 << false << false << false << false << 5 << 1000 << false;
    QTest::newRow("nvfp4 groups in rows with a partial block stochastic")
        << "fp4-e2m1" << nv << 16 << false << false << false << true << 3 << 600 << false;
    // More than one task (2^16 elements each): the engine's per-task scratch records.
    QTest::newRow("nvfp4 16-block groups, two tasks")
        << "fp4-e2m1" << nv << 16 << false << false << false << false << 3 << 40000 << false;
    // Found by fuzz_block_cast: an unsigned element format's negative inputs are Overflow but
    // out of range below, not clipped to the max; the blocks counted the large ones as saturated.
    QTest::newRow("mx unsigned elements")
        << "e3m2:unsigned" << mx << 32 << false << false << false << false << 3 << 100 << false;
    QTest::newRow("nvfp4 unsigned elements stochastic, 16-block groups")
        << "e2m1:unsigned" << nv << 16 << false << false << false << true << 2 << 512 << false;
    QTest::newRow("mxfp4 ceil tiles")
        << "fp4-e2m1" << mx << 32 << true << false << false << false << 45 << 70 << true;
    // 16 x 16 tiles 16 side by side (the CPU's tile groups): rows of whole groups ending at the
    // row's end, and rows with single tiles, a partial tile and a partial row group after them.
    QTest::newRow("nvfp4 16-tile groups")
        << "fp4-e2m1" << nv << 16 << false << false << false << false << 48 << 512 << true;
    QTest::newRow("nvfp4 16-tile groups, partial tiles, stochastic")
        << "fp4-e2m1" << nv << 16 << false << false << false << true << 40 << 600 << true;
}

void TestBlockFormats::matchesReference() {
    QFETCH(QString, element);
    QFETCH(int, kind);
    QFETCH(int, size);
    QFETCH(bool, ceil);
    QFETCH(bool, pow2);
    QFETCH(bool, fourOverSix);
    QFETCH(bool, stochastic);
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(bool, tiles);
    const BlockScheme s =
        scheme(static_cast<BlockScaleKind>(kind), size,
               ceil ? ScaleRounding::Ceil : ScaleRounding::Floor, pow2, fourOverSix);
    const QuantConfig config = saturating(
        element.toUtf8().constData(), stochastic ? Rounding::Stochastic : Rounding::NearestEven);
    for (const bool specials : {false, true}) {
        const auto r = static_cast<std::size_t>(rows), c = static_cast<std::size_t>(cols);
        const std::vector<float> in = mixedTensor(r * c, 11 + r, specials);
        const RefResult want = reference(config, s, in, r, c, tiles, 42, 7);
        std::vector<float> out(in.size());
        QuantStats stats;
        std::vector<BlockInfo> info;
        QuantizeOptions options;
        options.seed = 42;
        options.stream = 7;
        quantizeBlocks(Quantizer(config), s, in, out, {r, c, tiles}, &stats, nullptr, options,
                       info);
        std::size_t where = 0;
        QVERIFY2(sameBits(out, want.out, &where),
                 qPrintable(QString("element %1 (%2): got %3, reference %4")
                                .arg(where)
                                .arg(double(in[where]), 0, 'g', 9)
                                .arg(double(out[where]), 0, 'g', 9)
                                .arg(double(want.out[where]), 0, 'g', 9)));
        QCOMPARE(stats.counts, want.stats.counts);
        QCOMPARE(stats.histogram, want.stats.histogram);
        QCOMPARE(info.size(), want.blocks.size());
        for (std::size_t b = 0; b < info.size(); ++b) {
            const BlockInfo& got = info[b];
            const RefBlock& ref = want.blocks[b];
            const bool same =
                bits(got.amax) == bits(ref.amax) && bits(got.finiteAmax) == bits(ref.finiteAmax) &&
                bits(got.minNonzero) == bits(ref.minNonzero) &&
                bits(got.scale.decoded) == bits(ref.decoded) && got.nonzero == ref.nonzero &&
                got.nonzeroOut == ref.nonzeroOut && got.saturated == ref.saturated;
            if (!same)
                QFAIL(qPrintable(QString("block %1: amax %2/%3 min %4/%5 scale %6/%7 nonzero "
                                         "%8/%9 out %10/%11 saturated %12/%13 (got/reference)")
                                     .arg(b)
                                     .arg(double(got.amax))
                                     .arg(double(ref.amax))
                                     .arg(double(got.minNonzero))
                                     .arg(double(ref.minNonzero))
                                     .arg(double(got.scale.decoded))
                                     .arg(double(ref.decoded))
                                     .arg(got.nonzero)
                                     .arg(ref.nonzero)
                                     .arg(got.nonzeroOut)
                                     .arg(ref.nonzeroOut)
                                     .arg(got.saturated)
                                     .arg(ref.saturated)));
        }
        // Without statistics (scalesOnly): the same values and scales, counting nothing.
        std::vector<float> valuesOnly(in.size());
        std::vector<BlockInfo> scales;
        quantizeBlocks(Quantizer(config), s, in, valuesOnly, {r, c, tiles}, nullptr, nullptr,
                       options, scales, BlockRecords::ScalesOnly);
        QVERIFY2(sameBits(valuesOnly, want.out, &where),
                 qPrintable(QString("scalesOnly: element %1").arg(where)));
        QCOMPARE(scales.size(), want.blocks.size());
        for (std::size_t b = 0; b < scales.size(); ++b)
            QVERIFY2(bits(scales[b].amax) == bits(want.blocks[b].amax) &&
                         bits(scales[b].finiteAmax) == bits(want.blocks[b].finiteAmax) &&
                         bits(scales[b].scale.decoded) == bits(want.blocks[b].decoded) &&
                         bits(scales[b].scale.toElement) == bits(info[b].scale.toElement),
                     qPrintable(QString("scalesOnly: block %1").arg(b)));
        // As the engine casts (records as scratch, in the thread's per-task buffer where the
        // passes are fused): the same values and counts, with statistics and without.
        BlockStats wantBlocks;
        wantBlocks.addRange(info.data(), info.size());
        std::vector<float> scratchOut(in.size());
        std::vector<BlockInfo> scratch;
        QuantStats scratchStats;
        BlockStats scratchBlocks;
        quantizeBlocks(Quantizer(config), s, in, scratchOut, {r, c, tiles}, &scratchStats,
                       &scratchBlocks, options, scratch, BlockRecords::Scratch);
        QVERIFY2(sameBits(scratchOut, want.out, &where),
                 qPrintable(QString("scratch: element %1").arg(where)));
        QCOMPARE(scratchStats.counts, want.stats.counts);
        QCOMPARE(scratchStats.histogram, want.stats.histogram);
        compareBlockStats(scratchBlocks, wantBlocks);
        if (QTest::currentTestFailed())
            return;
        quantizeBlocks(Quantizer(config), s, in, scratchOut, {r, c, tiles}, nullptr, nullptr,
                       options, scratch, BlockRecords::Scratch);
        QVERIFY2(sameBits(scratchOut, want.out, &where),
                 qPrintable(QString("scratch without statistics: element %1").arg(where)));
    }
}

void TestBlockFormats::nvfp4ScaleFormulaByHand() {
    // amax_t = 12: s_enc = 2688 / 12 = 224. Block 0's amax 12: q = e4m3(12 * 224/6 = 448) = 448,
    // r = 1 / (448 / 224) = 0.5: 12 -> 6 (exact), 1 -> 0.5. Block 1's amax 0.75: q = e4m3(28)
    // = 28, r = 8: 0.75 -> 6, 0.3 -> 2.4 -> 2 (E2M1), dequantised 2 * 28 / 224 = 0.25.
    std::vector<float> in(32, 0.0f);
    in[0] = 12.0f;
    in[1] = 1.0f;
    in[16] = 0.75f;
    in[17] = 0.3f;
    std::vector<float> out(in.size());
    std::vector<BlockInfo> info;
    const BlockQuantizeResult r =
        quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Nvfp4, 16), in,
                       out, {}, nullptr, nullptr, {}, info);
    QCOMPARE(bits(r.tensorScale), bits(224.0f));
    QCOMPARE(info.size(), std::size_t{2});
    QCOMPARE(bits(info[0].scale.decoded), bits(448.0f));
    QCOMPARE(bits(info[1].scale.decoded), bits(28.0f));
    QCOMPARE(bits(out[0]), bits(12.0f));
    QCOMPARE(bits(out[1]), bits(1.0f));
    QCOMPARE(bits(out[16]), bits(0.75f));
    QCOMPARE(bits(out[17]), bits(0.25f));
}

void TestBlockFormats::nvfp4FollowsTheFormulaOrder() {
    // q_b = e4m3(amax_b * (s_enc * (1/6))), not e4m3(amax_b * s_enc / 6): for these two values
    // the products land on either side of an E4M3 midpoint (found by a search).
    std::vector<float> in(32, 0.0f);
    in[0] = 1616.91138f;
    in[16] = 6.54163361f;
    std::vector<float> out(in.size());
    std::vector<BlockInfo> info;
    quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Nvfp4, 16), in, out,
                   {}, nullptr, nullptr, {}, info);
    QCOMPARE(bits(info[1].scale.decoded), bits(1.875f));

    // s_enc = min(448 * max_elem / amax_t, FLT_MAX) with fminf's NaN rule (Transformer Engine's):
    // an element max near float32's and an Inf input give Inf / Inf = NaN, which becomes FLT_MAX
    // (found by fuzz_block_cast with E8M2 elements, where std::min kept the NaN).
    QCOMPARE(bits(blocks::nvfp4TensorScale(kInf, 3.0e38f)), bits(FLT_MAX));
    QCOMPARE(bits(blocks::nvfp4TensorScale(1.0f, 3.0e38f)), bits(FLT_MAX));
    QCOMPARE(bits(blocks::nvfp4TensorScale(0.0f, 6.0f)), bits(1.0f));
    QCOMPARE(bits(blocks::nvfp4TensorScale(12.0f, 6.0f)), bits(224.0f));
}

void TestBlockFormats::fp32ScalesKeepAFiniteInverse() {
    // Found by fuzz_block_cast (e1m2:nozero elements, max 3.5, against values near float32's
    // max): max_elem / amax_b below 2^-126 was rounded to a power of two by clearing the
    // significand of a subnormal, giving 0 and a scale_inv of Inf (every output Inf). The scale
    // is now at least 2^-127, whose inverse 2^127 is finite.
    for (const bool pow2 : {false, true}) {
        blocks::ScaleRule rule;
        rule.kind = static_cast<int>(blocks::ScaleKind::Fp32);
        rule.powerOfTwo = pow2;
        for (const float maxElement : {3.5f, 1.0f, std::ldexp(1.0f, -100)}) {
            rule.maxElement = maxElement;
            for (const float amax : {FLT_MAX, 3.0e38f, 1.0e38f}) {
                const blocks::BlockScale s = blocks::fp32BlockScale(rule, amax);
                QVERIFY2(s.toElement >= std::ldexp(1.0f, -127) && std::isfinite(s.decoded),
                         qPrintable(QString("pow2 %1, max %2, amax %3: scale %4, inverse %5")
                                        .arg(pow2)
                                        .arg(double(maxElement))
                                        .arg(double(amax))
                                        .arg(double(s.toElement))
                                        .arg(double(s.decoded))));
                int exponent = 0;
                if (pow2) // a power of two (frexp's fraction of one is 0.5)
                    QCOMPARE(std::frexp(s.toElement, &exponent), 0.5f);
            }
        }
    }
    // In range nothing changes: 448 / 3 = 149.33 (pow2: 128).
    blocks::ScaleRule rule;
    rule.kind = static_cast<int>(blocks::ScaleKind::Fp32);
    rule.maxElement = 448.0f;
    QCOMPARE(bits(blocks::fp32BlockScale(rule, 3.0f).toElement), bits(448.0f / 3.0f));
    rule.powerOfTwo = true;
    QCOMPARE(bits(blocks::fp32BlockScale(rule, 3.0f).toElement), bits(128.0f));
    // The whole cast, both the one-block and the 16-block passes: outputs finite.
    const QuantConfig tiny = saturating("e1m2:nozero");
    for (const std::size_t n : {std::size_t{128}, std::size_t{128 * 16}}) {
        std::vector<float> in(n, 3.0e38f), out(n);
        std::vector<BlockInfo> info;
        quantizeBlocks(Quantizer(tiny),
                       scheme(BlockScaleKind::Fp32, 128, ScaleRounding::Floor, true), in, out, {},
                       nullptr, nullptr, {}, info);
        for (float v : out)
            QVERIFY2(std::isfinite(v), qPrintable(QString("n %1: %2").arg(n).arg(double(v))));
    }
}

void TestBlockFormats::e4m3ScaleRoundingMatchesTheReference() {
    // NVFP4's block scales round on the bits: against the reference quantiser for every 4099th
    // positive float32 pattern (all binades), around every E4M3 value, and at every exact
    // midpoint between two (the ties) and its neighbours.
    const QuantConfig e4m3{parseFormat("fp8-e4m3"), Rounding::NearestEven, Overflow::Saturate};
    std::size_t wrong = 0;
    QString first;
    auto check = [&](float v) {
        const float want = quantizeReference(e4m3, v);
        const float got = blocks::e4m3SaturatingNearestEven(v);
        if (bits(got) != bits(want) && wrong++ == 0)
            first = QStringLiteral("%1: got %2, reference %3")
                        .arg(double(v), 0, 'g', 9)
                        .arg(double(got))
                        .arg(double(want));
    };
    for (std::uint64_t u = 0; u <= 0x7F800000u; u += 4099)
        check(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
    check(std::numeric_limits<float>::infinity());
    std::vector<float> grid;
    for (std::uint32_t code = 0; code < 0x7F; ++code) // the positive finite E4M3 values
        grid.push_back(decodeE4m3(code));
    for (std::size_t i = 0; i + 1 < grid.size(); ++i) {
        const float mid = (grid[i] + grid[i + 1]) / 2;
        check(mid);
        check(std::nextafter(mid, 0.0f));
        check(std::nextafter(mid, 1000.0f));
        check(grid[i]);
        check(std::nextafter(grid[i], 0.0f));
    }
    QVERIFY2(wrong == 0,
             qPrintable(QStringLiteral("%1 values wrong, first %2").arg(wrong).arg(first)));
}

void TestBlockFormats::subnormalScales() {
    // MX ceil: y = amax / 448 subnormal. Above 2^-127 it rounds up to 2^-126 (code 1); at or
    // below 2^-127, code 0 (2^-127). Floor: the exponent clamps at -127.
    auto mxScale = [](float amax, ScaleRounding rounding) {
        std::vector<float> in = {amax, 0, 0, 0}, out(4);
        std::vector<BlockInfo> info;
        quantizeBlocks(Quantizer(saturating("fp8-e4m3")), scheme(BlockScaleKind::Mx, 4, rounding),
                       in, out, {}, nullptr, nullptr, {}, info);
        return info[0].scale.decoded;
    };
    // (QCOMPARE on floats treats everything below 1e-5 as equal: compare the bits.)
    QCOMPARE(bits(mxScale(448.0f * 1.5f * std::ldexp(1.0f, -127), ScaleRounding::Ceil)),
             bits(std::ldexp(1.0f, -126)));
    QCOMPARE(bits(mxScale(448.0f * std::ldexp(1.0f, -128), ScaleRounding::Ceil)),
             bits(std::ldexp(1.0f, -127)));
    QCOMPARE(bits(mxScale(1e-44f, ScaleRounding::Ceil)), bits(std::ldexp(1.0f, -127)));
    QCOMPARE(bits(mxScale(1e-44f, ScaleRounding::Floor)), bits(std::ldexp(1.0f, -127)));
    QCOMPARE(bits(mxScale(3e38f, ScaleRounding::Ceil)),
             bits(std::ldexp(1.0f, 120))); // 2^119 < 3e38/448
    // NVFP4: a block 2^-14 below the tensor's amax gets an E4M3 subnormal scale (< 2^-6).
    std::vector<float> in(32, 0.0f), out(32);
    in[0] = 6.0f;         // s_enc = 448
    in[16] = 6.0f / 4096; // q_b = e4m3(2^-12 * 6 * 448 / 6) = 448 / 4096 = 0.109375 = 7 * 2^-6
    in[17] = -in[16] / 3;
    std::vector<BlockInfo> info;
    quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Nvfp4, 16), in, out,
                   {}, nullptr, nullptr, {}, info);
    QCOMPARE(bits(info[1].scale.decoded), bits(0.109375f));
    QCOMPARE(bits(out[16]), bits(in[16]));
    QCOMPARE(bits(out[17]),
             bits((-2.0f * 0.109375f) / 448.0f)); // -2 / 6 of the block max, rounded to -2
}

// The CPU chooses 16 blocks' scales at once (vector lanes); each must equal block_scale.h's
// scalar rule bit for bit. 96 blocks, each holding one value from a list of edge amaxes (zero,
// float32 subnormals, the 2^-127 boundary, powers of two and their neighbours, E4M3's 448 and
// the midpoint above it, FLT_MAX, Inf; NaN beside a value for NVFP4), and one huge block so that
// NVFP4's tensor scale sends most block scales into E4M3's subnormal range.
void TestBlockFormats::scalesOfBlockGroupsMatchTheScalarRule() {
    const float edges[] = {0.0f,
                           1e-45f,
                           1e-40f,
                           0x1p-127f,
                           0x1.000002p-127f,
                           0x1p-126f,
                           0x1.fffffep-126f,
                           3e-30f,
                           0x1p-20f,
                           0x1.8p-7f,
                           0.015625f,
                           0.0156249f,
                           1.0f,
                           0x1.000002p0f,
                           0x1.fffffep0f,
                           3.0f,
                           6.0f,
                           6.0000005f,
                           448.0f,
                           464.0f,
                           464.00003f,
                           1e20f,
                           FLT_MAX,
                           kInf};
    const struct {
        const char* name;
        const char* element;
        BlockScheme scheme;
    } cases[] = {
        {"nvfp4", "fp4-e2m1", scheme(BlockScaleKind::Nvfp4, 16)},
        {"mxfp8 floor", "fp8-e4m3", scheme(BlockScaleKind::Mx, 32)},
        {"mxfp4 floor", "fp4-e2m1", scheme(BlockScaleKind::Mx, 32)},
        {"mxfp8 ceil", "fp8-e4m3", scheme(BlockScaleKind::Mx, 32, ScaleRounding::Ceil)},
        {"mxfp6 ceil", "fp6-e3m2", scheme(BlockScaleKind::Mx, 32, ScaleRounding::Ceil)},
        {"fp32 blocks", "fp8-e4m3", scheme(BlockScaleKind::Fp32, 16)},
        {"fp32 blocks pow2", "fp8-e4m3",
         scheme(BlockScaleKind::Fp32, 16, ScaleRounding::Floor, true)},
    };
    for (const auto& c : cases) {
        for (const float huge : {0.0f, 0x1p40f}) {
            const auto side = static_cast<std::size_t>(c.scheme.blockSize);
            const std::size_t count = 96;
            std::vector<float> in(count * side, 0.0f), out(in.size());
            for (std::size_t b = 0; b < count; ++b) {
                const float v = edges[b % std::size(edges)];
                in[b * side + b % side] = (b / std::size(edges)) % 2 == 0 ? v : -v;
                if (b % 5 == 0 && c.scheme.kind == BlockScaleKind::Nvfp4)
                    in[b * side + (b + 1) % side] = kNaN; // not part of the amax
            }
            in[7 * side] = huge;
            const QuantConfig config = saturating(c.element);
            std::vector<BlockInfo> info;
            const BlockQuantizeResult result = quantizeBlocks(Quantizer(config), c.scheme, in, out,
                                                              {}, nullptr, nullptr, {}, info);
            const blocks::ScaleRule rule = makeScaleRule(c.scheme, config.format);
            QCOMPARE(info.size(), count);
            for (std::size_t b = 0; b < count; ++b) {
                const blocks::BlockScale want = blocks::blockScale(
                    rule, info[b].amax, info[b].finiteAmax, result.tensorScale, rule.maxElement);
                QVERIFY2(bits(info[b].scale.decoded) == bits(want.decoded) &&
                             bits(info[b].scale.toElement) == bits(want.toElement),
                         qPrintable(QString("%1, block %2 (amax %3): scale %4 / %5, to element "
                                            "%6 / %7 (got / scalar rule)")
                                        .arg(QLatin1String(c.name))
                                        .arg(b)
                                        .arg(double(info[b].amax), 0, 'g', 9)
                                        .arg(double(info[b].scale.decoded), 0, 'g', 9)
                                        .arg(double(want.decoded), 0, 'g', 9)
                                        .arg(double(info[b].scale.toElement), 0, 'g', 9)
                                        .arg(double(want.toElement), 0, 'g', 9)));
            }
        }
    }
}

void TestBlockFormats::zeroScaleBlockIsFlushed() {
    // A block 2^-30 below the tensor's amax gets q_b = 0 (under E4M3's smallest subnormal): it
    // comes out as zeros, counted as flushed, and the block as wholly flushed.
    std::vector<float> in(32, 0.0f);
    in[0] = 1.0f;
    for (std::size_t i = 16; i < 32; ++i)
        in[i] = std::ldexp(1.0f, -30) * (i % 2 ? 1.0f : -1.0f);
    std::vector<float> out(in.size());
    QuantStats stats;
    BlockStats blocks;
    std::vector<BlockInfo> info;
    quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Nvfp4, 16), in, out,
                   {}, &stats, &blocks, {}, info);
    QCOMPARE(bits(info[1].scale.decoded), bits(0.0f));
    for (std::size_t i = 16; i < 32; ++i) // E2M1 has a -0: the zeros keep x's sign
        QCOMPARE(bits(out[i]), bits(std::copysign(0.0f, in[i])));
    QCOMPARE(stats.count(QuantClass::Underflow), 16ull);
    QCOMPARE(stats.count(QuantClass::Zero), 15ull); // block 0's true zeros
    QCOMPARE(blocks.flushedBlocks, 1ull);
    QCOMPARE(blocks.blocks, 2ull);

    // An fnuz element format has no -0: the block's zeros are all +0, as x * 0's cast gives,
    // not x * FLT_MAX's saturated -max times 0 (found by fuzz_block_cast, e7m0:fnuz).
    const std::vector<float> wide = in; // both passes: the one-block and the 16-block groups
    for (const std::size_t copies : {std::size_t{1}, std::size_t{16}}) {
        std::vector<float> many;
        for (std::size_t c = 0; c < copies; ++c)
            many.insert(many.end(), wide.begin(), wide.end());
        std::vector<float> fnuzOut(many.size());
        QuantStats fnuzStats;
        quantizeBlocks(Quantizer(saturating("e7m0:fnuz")), scheme(BlockScaleKind::Nvfp4, 16), many,
                       fnuzOut, {}, &fnuzStats, nullptr, {}, info);
        for (std::size_t i = 0; i < many.size(); ++i)
            if (i % 32 >= 16)
                QVERIFY2(bits(fnuzOut[i]) == bits(0.0f),
                         qPrintable(QString("copies %1, element %2: %3 from %4")
                                        .arg(copies)
                                        .arg(i)
                                        .arg(double(fnuzOut[i]))
                                        .arg(double(many[i]))));
        QCOMPARE(fnuzStats.count(QuantClass::Underflow), 16ull * copies);
    }
}

void TestBlockFormats::mxCeilNeverSaturates() {
    // Rounded up, the scale leaves every block's amax at or below the element max; rounded down
    // (OCP), blocks whose amax's significand exceeds the element max's clip.
    const std::vector<float> in = mixedTensor(4096, 5, false);
    std::vector<float> out(in.size());
    std::vector<BlockInfo> info;
    for (const char* format : {"fp8-e4m3", "fp6-e3m2", "fp4-e2m1"}) {
        BlockStats ceilStats, floorStats;
        quantizeBlocks(Quantizer(saturating(format)),
                       scheme(BlockScaleKind::Mx, 32, ScaleRounding::Ceil), in, out, {}, nullptr,
                       &ceilStats, {}, info);
        for (const BlockInfo& b : info)
            QVERIFY(b.finiteAmax <=
                    b.scale.decoded * static_cast<float>(parseFormat(format).maxFinite()));
        quantizeBlocks(Quantizer(saturating(format)), scheme(BlockScaleKind::Mx, 32), in, out, {},
                       nullptr, &floorStats, {}, info);
        QCOMPARE(ceilStats.saturatedBlocks, 0ull);
        QVERIFY2(floorStats.saturatedBlocks > 0, format);
    }
}

void TestBlockFormats::fourOverSixNeverWorse() {
    const std::vector<float> in = mixedTensor(16 * 64, 3, false);
    std::vector<float> six(in.size()), best(in.size());
    std::vector<BlockInfo> info;
    const Quantizer q(saturating("fp4-e2m1"));
    quantizeBlocks(q, scheme(BlockScaleKind::Nvfp4, 16), in, six, {}, nullptr, nullptr, {}, info);
    quantizeBlocks(q, scheme(BlockScaleKind::Nvfp4, 16, ScaleRounding::Floor, false, true), in,
                   best, {}, nullptr, nullptr, {}, info);
    int improved = 0;
    for (std::size_t b = 0; b < 64; ++b) {
        double errSix = 0.0, errBest = 0.0;
        for (std::size_t i = b * 16; i < b * 16 + 16; ++i) {
            errSix += std::pow(double(six[i]) - in[i], 2);
            errBest += std::pow(double(best[i]) - in[i], 2);
        }
        QVERIFY(errBest <= errSix);
        improved += errBest < errSix ? 1 : 0;
    }
    QVERIFY2(improved > 0, "4/6 chose 4 for no block of a normal-distributed tensor");
}

void TestBlockFormats::blockCountersOnConstructedTensor() {
    // Blocks of 4 in MXFP4 (E2M1: max 6, min subnormal 0.5, 2.6 binades of normals):
    //   0: all zero;  1: {8, 0.001, 0, 0}: 0.001 flushed in a live block, range log2(8000) ~ 12.97;
    //   2: {1, 1, 1, 1}: range 0;  3: {3, 0, NaN, 0}: only its NaN besides 3.
    // With floor rounding, block 1's scale is 2^(3 - 2) = 2: 8 / 2 = 4 fits, nothing saturates;
    // block 4: {7, 0, 0, 0} -> scale 2^(2-2) = 1, 7 > 6 saturates.
    const std::vector<float> in = {0, 0, 0, 0, 8,    0.001f, 0, 0, 1, 1,
                                   1, 1, 3, 0, kNaN, 0,      7, 0, 0, 0};
    std::vector<float> out(in.size());
    BlockStats s;
    std::vector<BlockInfo> info;
    quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Mx, 4), in, out, {},
                   nullptr, &s, {}, info);
    QCOMPARE(s.blocks, 5ull);
    QCOMPARE(s.zeroBlocks, 1ull);
    QCOMPARE(s.flushedBlocks, 0ull);
    QCOMPARE(s.saturatedBlocks, 1ull);
    QCOMPARE(s.flushedInLiveBlocks, 1ull);
    QCOMPARE(s.liveElements, 8ull);      // 2 + 4 + 1 + 1
    QCOMPARE(s.rangeHistogram[0], 3ull); // blocks 2, 3, 4: one nonzero magnitude each
    // Block 1's range: the distance of 8's and 0.001's log2 bins (log2 8000 = 12.97 binades).
    const int range = histogramBin(8.0f) - histogramBin(0.001f);
    QCOMPARE(range, 52);
    QCOMPARE(s.rangeHistogram[static_cast<std::size_t>(range)], 1ull);
    QCOMPARE(s.scaleHistogram[static_cast<std::size_t>(histogramBin(2.0f))], 1ull);
    QCOMPARE(s.scaleHistogram[static_cast<std::size_t>(histogramBin(1.0f))], 1ull);  // 7: 2^(2-2)
    QCOMPARE(s.scaleHistogram[static_cast<std::size_t>(histogramBin(0.5f))], 1ull);  // 3: 2^(1-2)
    QCOMPARE(s.scaleHistogram[static_cast<std::size_t>(histogramBin(0.25f))], 1ull); // 1 / 2^2
    QCOMPARE(bits(out[16]), bits(6.0f));
    QVERIFY(std::isnan(out[14]));
    // A wholly flushed block: MX's scale follows the block's amax, so one needs a block below
    // the scale's floor (2^-127) relative to the element's subnormal.
    const std::vector<float> tiny = {1e-45f, 0, 0, 0};
    BlockStats t;
    quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Mx, 4), tiny,
                   out = tiny, {}, nullptr, &t, {}, info);
    QCOMPARE(t.flushedBlocks, 1ull);
    QCOMPARE(t.flushedBlockShare(), 1.0);
}

void TestBlockFormats::stochasticBlocksIndependentOfThreads() {
    // 2-D tiles with 4/6 (the passes one block at a time), and 1-D blocks cast as the engine
    // casts (16-block groups, each task's records in its thread's scratch).
    QFETCH(bool, tiles);
    const std::vector<float> in = mixedTensor(300000, 21, true);
    const QuantConfig config = saturating("fp4-e2m1", Rounding::Stochastic);
    const BlockLayout layout = tiles ? BlockLayout{600, 500, true} : BlockLayout{};
    std::vector<float> reference;
    QuantStats referenceStats;
    BlockStats referenceBlocks;
    for (unsigned threads : {1u, 2u, 3u}) {
        ThreadPool pool(threads);
        QuantizeOptions options;
        options.seed = 3;
        options.stream = 99;
        options.pool = &pool;
        std::vector<float> out(in.size());
        QuantStats stats;
        BlockStats blocks;
        std::vector<BlockInfo> info;
        quantizeBlocks(Quantizer(config),
                       scheme(BlockScaleKind::Nvfp4, 16, ScaleRounding::Floor, false,
                              /*fourOverSix=*/tiles),
                       in, out, layout, &stats, &blocks, options, info,
                       tiles ? BlockRecords::All : BlockRecords::Scratch);
        if (threads == 1) {
            reference = out;
            referenceStats = stats;
            referenceBlocks = blocks;
            continue;
        }
        std::size_t where = 0;
        QVERIFY2(sameBits(out, reference, &where), qPrintable(QString::number(where)));
        QCOMPARE(stats.counts, referenceStats.counts);
        QCOMPARE(stats.histogram, referenceStats.histogram);
        QCOMPARE(blocks.saturatedBlocks, referenceBlocks.saturatedBlocks);
        QCOMPARE(blocks.flushedInLiveBlocks, referenceBlocks.flushedInLiveBlocks);
        QCOMPARE(blocks.scaleHistogram, referenceBlocks.scaleHistogram);
        QCOMPARE(blocks.rangeHistogram, referenceBlocks.rangeHistogram);
    }
    QVERIFY(referenceBlocks.saturatedBlocks > 0);
}

void TestBlockFormats::stochasticBlocksIndependentOfThreads_data() {
    QTest::addColumn<bool>("tiles");
    QTest::newRow("tiles, 4/6") << true;
    QTest::newRow("1-D, records as scratch") << false;
}

void TestBlockFormats::saturatedMeansRoundedPastTheMax() {
    // MXFP4 (floor): 6.4 and 7.5 both get X = 2 - 2 = 0. E2M1 rounds 6.4 to 6 (a rounding, not
    // a clip) but 7.5 past 6 (to 8): only the second block saturated, as the class counts say.
    const std::vector<float> in = {6.4f, 0, 0, 0, 7.5f, 0, 0, 0};
    std::vector<float> out(in.size());
    BlockStats blocks;
    QuantStats stats;
    std::vector<BlockInfo> info;
    quantizeBlocks(Quantizer(saturating("fp4-e2m1")), scheme(BlockScaleKind::Mx, 4), in, out, {},
                   &stats, &blocks, {}, info);
    QCOMPARE(info[0].saturated, 0u);
    QCOMPARE(info[1].saturated, 1u);
    QCOMPARE(blocks.saturatedBlocks, 1ull);
    QCOMPARE(stats.count(QuantClass::Overflow), 1ull);
}

void TestBlockFormats::blockStatsOfARangeMatchOneByOne() {
    // addRange (the cast's one loop) against add (the definitions, one block at a time) on
    // blocks of every kind: zero, wholly flushed, partly flushed, saturated, zero and subnormal
    // scales, subnormal and huge ranges, amax below the smallest nonzero's bin.
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<int> pick(0, 7);
    std::uniform_real_distribution<float> log2mag(-140.0f, 120.0f);
    std::vector<BlockInfo> list(5000);
    for (BlockInfo& b : list) {
        const float amax = std::exp2(log2mag(rng));
        b.finiteAmax = amax;
        b.amax = pick(rng) == 0 ? kInf : amax;
        const int minKind = pick(rng);
        b.minNonzero = minKind == 0   ? 0.0f
                       : minKind == 1 ? 1e-42f // a float32 subnormal
                       : minKind == 2 ? amax * 2.0f
                                      : amax * std::exp2(-std::abs(log2mag(rng)) / 2);
        b.nonzero = pick(rng) == 0 ? 0u : static_cast<std::uint32_t>(pick(rng) + 1);
        const int outKind = pick(rng);
        b.nonzeroOut = outKind == 0 ? 0u : (outKind == 1 ? b.nonzero + 1 : b.nonzero / 2 + 1);
        b.saturated = pick(rng) < 2 ? 1u : 0u;
        const int scaleKind = pick(rng);
        b.scale.decoded = scaleKind == 0   ? 0.0f
                          : scaleKind == 1 ? std::exp2(-127.0f) // MX's smallest, a subnormal
                                           : std::exp2(std::round(log2mag(rng)));
    }
    BlockStats one, range;
    std::uint64_t zeroScaleInputs = 0; // what addRange returns, by its definition
    for (const BlockInfo& b : list) {
        one.add(b);
        zeroScaleInputs += b.scale.decoded == 0.0f ? b.nonzero : 0u;
    }
    // counted through copies (1,024 blocks and more), then straight into the arrays
    std::uint64_t returned = range.addRange(list.data(), 1234);
    returned += range.addRange(list.data() + 1234, 100);
    returned += range.addRange(list.data() + 1334, list.size() - 1334);
    QCOMPARE(returned, zeroScaleInputs);
    QVERIFY(zeroScaleInputs > 0);
    compareBlockStats(range, one);
    if (QTest::currentTestFailed())
        return;
    // Not a vacuous comparison: every kind of block occurred.
    QVERIFY(one.zeroBlocks > 0 && one.flushedBlocks > 0 && one.flushedInLiveBlocks > 0);
    QVERIFY(one.rangeHistogram[0] > 0 && one.rangeHistogram[kRangeBins - 1] > 0);
    QVERIFY(one.scaleHistogram[static_cast<std::size_t>(kHistZeroBin)] > 0);
}

void TestBlockFormats::badLayoutIsRefused() {
    std::vector<float> in(10), out(10);
    std::vector<BlockInfo> info;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             quantizeBlocks(Quantizer(saturating("fp8-e4m3")),
                                            scheme(BlockScaleKind::Mx, 32), in, out, {3, 4, false},
                                            nullptr, nullptr, {}, info));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             quantizeBlocks(Quantizer(saturating("fp8-e4m3")),
                                            scheme(BlockScaleKind::Mx, 0), in, out, {}, nullptr,
                                            nullptr, {}, info));
}

void TestBlockFormats::namedBlockFormats() {
    const BlockFormat* nv = findBlockFormat("nvfp4");
    QVERIFY(nv != nullptr);
    QCOMPARE(nv->scheme.blockSize, 16);
    QCOMPARE(nv->element.name, std::string("fp4-e2m1"));
    QCOMPARE(findBlockFormat("fp8-block128")->scheme.blockSize, 128);
    QCOMPARE(scaleFormatName(findBlockFormat("mxfp6-e2m3")->scheme), std::string("e8m0"));
    QVERIFY(findBlockFormat("fp8-e4m3") == nullptr);
    QVERIFY(parseScaleRounding("ceil") == ScaleRounding::Ceil);
    QVERIFY_THROWS_EXCEPTION(FormatError, parseScaleRounding("up"));
}

QTEST_APPLESS_MAIN(TestBlockFormats)
#include "test_block_formats.moc"
