// Statistics over seeds: the mean, the sample standard deviation and Student's 95% interval of
// textbook samples; Welch's interval of a difference and its verdict, both ways.
#include <QTest>

#include "stats/seed_statistics.h"

#include <cmath>
#include <limits>

using namespace plab;

class TestSeedStatistics : public QObject {
    Q_OBJECT
private slots:
    void summaryOfFiveSeeds();
    void tQuantiles();
    void welchDifferenceAndVerdict();
    void nonFiniteAndTooFew();
    void bandOverUnevenCurves();
};

void TestSeedStatistics::summaryOfFiveSeeds() {
    const SeedSummary s = summarise({1, 2, 3, 4, 5});
    QCOMPARE(s.n, std::size_t{5});
    QCOMPARE(s.mean, 3.0);
    QVERIFY(std::fabs(s.stdDev - std::sqrt(2.5)) < 1e-12);
    // 2.776 x 1.5811 / sqrt(5)
    QVERIFY(std::fabs(s.ci95 - 2.776 * std::sqrt(2.5) / std::sqrt(5.0)) < 1e-12);
}

void TestSeedStatistics::tQuantiles() {
    QCOMPARE(tQuantile975(1), 12.706);
    QCOMPARE(tQuantile975(4), 2.776);
    QCOMPARE(tQuantile975(8.7), 2.306); // the next lower whole df: a wider interval
    QCOMPARE(tQuantile975(30), 2.042);
    QVERIFY(std::fabs(tQuantile975(40) - 2.021) < 0.001); // tables: 2.021
    QVERIFY(std::fabs(tQuantile975(120) - 1.980) < 0.001);
    QVERIFY(std::isnan(tQuantile975(0.5)));
}

void TestSeedStatistics::welchDifferenceAndVerdict() {
    const SeedSummary a = summarise({1, 2, 3, 4, 5});
    // Equal spreads, n = 5 each: se 1, df 8, t 2.306.
    const Difference close = difference(a, summarise({3, 4, 5, 6, 7}));
    QCOMPARE(close.mean, -2.0);
    QCOMPARE(close.df, 8.0);
    QVERIFY(std::fabs(close.ci95 - 2.306) < 1e-12);
    QVERIFY(!close.distinguishable);
    QCOMPARE(QString::fromStdString(verdict(close, 5, false)),
             QString("indistinguishable at n = 5"));
    const Difference apart = difference(a, summarise({4, 5, 6, 7, 8}));
    QVERIFY(apart.distinguishable);
    QCOMPARE(QString::fromStdString(verdict(apart, 5, false)), QString("better by 3 ± 2.3"));
    QCOMPARE(QString::fromStdString(verdict(apart, 5, true, 100.0, " points")),
             QString("worse by 300 ± 2.3e+02 points"));
    // Unequal spreads: Welch-Satterthwaite df below n1 + n2 - 2.
    const Difference welch =
        difference(summarise({1, 1.1, 0.9, 1.05, 0.95}), summarise({0, 4, 1, 3, 2}));
    QVERIFY(welch.df > 4.0 && welch.df < 4.2);
    // t at the whole df below (4: 2.776), not above (5: 2.571): the wider, honest interval.
    const double se = std::sqrt(0.00625 / 5.0 + 2.5 / 5.0);
    QVERIFY2(std::fabs(welch.ci95 - 2.776 * se) < 1e-12, qPrintable(QString::number(welch.ci95)));
}

void TestSeedStatistics::nonFiniteAndTooFew() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const SeedSummary s = summarise({1.0, nan, 3.0});
    QCOMPARE(s.n, std::size_t{2});
    QCOMPARE(s.mean, 2.0);
    const SeedSummary one = summarise({7.0});
    QCOMPARE(one.mean, 7.0);
    QVERIFY(std::isnan(one.ci95));
    QCOMPARE(QString::fromStdString(verdict(difference(one, s), 1, false)),
             QString("n < 2: no interval"));
    QVERIFY(std::isnan(summarise({}).mean));
}

// Two runs to step 2, one run on to step 3 (still going), a diverged step: the mean and interval
// where two are there, a collapsed band where one is, nothing where none has a finite value.
void TestSeedStatistics::bandOverUnevenCurves() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const SeedBand band =
        bandOverSeeds({{{1, 1.0}, {2, 3.0}, {3, 5.0}, {4, nan}}, {{1, 2.0}, {2, 5.0}}});
    QCOMPARE(band.steps, (std::vector<double>{1, 2, 3}));
    QCOMPARE(band.mean, (std::vector<double>{1.5, 4.0, 5.0}));
    QCOMPARE(band.runs, (std::vector<std::size_t>{2, 2, 1}));
    // n = 2: sd = 0.7071 (step 1), t(1) = 12.706, half-width = 12.706 * 0.7071 / sqrt(2) = 6.353.
    QVERIFY(std::abs(band.high[0] - (1.5 + 6.353)) < 1e-3);
    QVERIFY(std::abs(band.low[1] - (4.0 - 12.706)) < 1e-3);
    QCOMPARE(band.low[2], 5.0);
    QCOMPARE(band.high[2], 5.0);
    // Drawn, the band keeps to what the runs reached (issue 42 item 27: a loss band below zero).
    QCOMPARE(band.lowest, (std::vector<double>{1.0, 3.0, 5.0}));
    QCOMPARE(band.highest, (std::vector<double>{2.0, 5.0, 5.0}));
    const SeedBand drawn = band.drawn();
    QCOMPARE(drawn.low, (std::vector<double>{1.0, 3.0, 5.0}));
    QCOMPARE(drawn.high, (std::vector<double>{2.0, 5.0, 5.0}));
    QCOMPARE(drawn.mean, band.mean);
}

QTEST_APPLESS_MAIN(TestSeedStatistics)
#include "test_seed_statistics.moc"
