// Loss-scaling policies on scripted overflow sequences: GradScaler's grow / back-off / skip,
// Megatron's hysteresis and minimum, the enhanced floor never undercut; and in training, the
// dynamic policy recovering from an overflowing start by itself.
#include <QTest>

#include "train/dynamic_scaler.h"
#include "train/trainer.h"

#include <cmath>

using namespace plab;

class TestScalers : public QObject {
    Q_OBJECT
private slots:
    void gradScalerSequence();
    void megatronHysteresisAndMinimum();
    void enhancedFloorNeverUndercut();
    void userSetScaleIsClamped();
    void dynamicPolicyRecoversInTraining();
};

void TestScalers::gradScalerSequence() {
    DynamicScalerSettings s; // GradScaler defaults
    s.growthInterval = 3;    // short, to script it
    DynamicScaler d(s);
    QCOMPARE(d.scale(), 65536.0);
    const ScaleDecision first = d.update(true);
    QVERIFY(first.skipStep);
    QCOMPARE(d.scale(), 32768.0);
    QVERIFY(QString::fromStdString(first.reason).contains(QLatin1String("2^16 -> 2^15")));
    QVERIFY(d.update(true).skipStep);
    QCOMPARE(d.scale(), 16384.0);
    QVERIFY(!d.update(false).skipStep);
    QVERIFY(!d.update(false).skipStep);
    QCOMPARE(d.scale(), 16384.0); // 2 clean steps: not yet
    const ScaleDecision grow = d.update(false);
    QVERIFY(!grow.skipStep);
    QCOMPARE(d.scale(), 32768.0); // 3rd clean step: x2
    QVERIFY(QString::fromStdString(grow.reason).contains(QLatin1String("3 clean steps")));
    d.update(false);
    d.update(false);
    d.update(true); // an overflow resets the clean-step count
    QCOMPARE(d.scale(), 16384.0);
    d.update(false);
    d.update(false);
    QCOMPARE(d.scale(), 16384.0);
    d.update(false);
    QCOMPARE(d.scale(), 32768.0);
}

void TestScalers::megatronHysteresisAndMinimum() {
    DynamicScalerSettings s;
    s.initialScale = 8.0;
    s.hysteresis = 2;
    s.minScale = 2.0;
    s.growthInterval = 1000;
    DynamicScaler d(s);
    QVERIFY(d.update(true).skipStep); // 1st overflow: tolerated, still skipped
    QCOMPARE(d.scale(), 8.0);
    QVERIFY(d.update(true).skipStep); // 2nd: back off
    QCOMPARE(d.scale(), 4.0);
    d.update(true);
    d.update(true);
    QCOMPARE(d.scale(), 2.0);
    d.update(true);
    const ScaleDecision held = d.update(true);
    QCOMPARE(d.scale(), 2.0); // never below min_scale
    QVERIFY(QString::fromStdString(held.reason).contains(QLatin1String("minimum")));
}

void TestScalers::enhancedFloorNeverUndercut() {
    DynamicScalerSettings s;
    s.enhanced = true;
    s.initialScale = 1024.0;
    s.floorInitial = 64.0;
    s.floorGrowth = 2.0;
    s.floorInterval = 10;
    s.floorMax = 512.0;
    s.growthInterval = 1000000;
    DynamicScaler d(s);
    double lastFloor = 0.0;
    for (int step = 0; step < 200; ++step) {
        d.update(step % 2 == 0); // overflow every other step: a plain dynamic scaler collapses
        QVERIFY2(d.scale() >= d.floor(), qPrintable(QStringLiteral("step %1").arg(step)));
        QVERIFY(d.floor() >= lastFloor); // the floor only rises
        lastFloor = d.floor();
    }
    QCOMPARE(d.floor(), 512.0);
    QCOMPARE(d.scale(), 512.0);
}

void TestScalers::userSetScaleIsClamped() {
    DynamicScalerSettings s;
    s.minScale = 4.0;
    s.maxScale = 1024.0;
    DynamicScaler d(s);
    QCOMPARE(d.scale(), 1024.0);
    d.setScale(1.0);
    QCOMPARE(d.scale(), 4.0);
}

void TestScalers::dynamicPolicyRecoversInTraining() {
    // FP16 gradients that overflow at 2^40: the dynamic policy backs off until they fit, and
    // training then proceeds; a static 2^40 diverges at once.
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(1, 2000, 500));
    const nlohmann::json base = {
        {"data", {{"train_size", 2000}, {"test_size", 500}}},
        {"model", {{"hidden", {64}}}},
        {"train", {{"steps", 200}, {"batch_size", 64}}},
        {"recipe", {{"activation_gradients", "fp16"}, {"weight_gradients", "fp16"}}}};
    nlohmann::json dyn = base, stat = base;
    dyn["scaling"] = {{"policy", "dynamic"}, {"scale", 1099511627776.0}, {"growth_interval", 100}};
    stat["scaling"] = {{"policy", "static"}, {"scale", 1099511627776.0}};
    Trainer s(configFromJson(stat), data);
    QVERIFY(s.step().diverged);
    Trainer t(configFromJson(dyn), data);
    int skipped = 0;
    std::string firstEvent;
    for (int i = 0; i < 200; ++i) {
        const StepResult r = t.step();
        QVERIFY(!r.diverged);
        skipped += r.scalars.skipped ? 1 : 0;
        if (firstEvent.empty())
            firstEvent = r.event;
    }
    QVERIFY2(skipped >= 10 && skipped < 60, qPrintable(QString::number(skipped)));
    QVERIFY(t.scaler().scale() < 65536.0);
    QVERIFY2(firstEvent.find("first Inf/NaN:") != std::string::npos, firstEvent.c_str());
    QVERIFY(t.evaluate().accuracy > 0.3);
}

QTEST_APPLESS_MAIN(TestScalers)
#include "test_scalers.moc"
