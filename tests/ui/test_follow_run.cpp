// The app following a run that another process writes (File > Open run, precision-lab --open):
// new steps appear without any click, the gradient view stays on the newest recorded step unless
// scrubbed back, the status bar says live then ended, and a watched run's formats can be chosen.
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QSlider>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include "flush_heatmap_view.h"
#include "loss_scale_slider.h"
#include "main_window.h"

#include <QApplication>
#include <QFileInfo>

#include <set>

using namespace plab;

class TestFollowRun : public QObject {
    Q_OBJECT
private slots:
    void followsARunWrittenByAnotherProcess();
};

namespace {

QString statusText(const MainWindow& w) {
    QString text;
    for (const QLabel* label : w.statusBar()->findChildren<QLabel*>())
        text += label->text() + QLatin1Char('\n');
    return text;
}

} // namespace

void TestFollowRun::followsARunWrittenByAnotherProcess() {
    QTemporaryDir runs;
    const QString dir = runs.path() + QStringLiteral("/watched");
    QProcess writer;
    writer.setProcessChannelMode(QProcess::ForwardedChannels);
    writer.start(QStringLiteral(PLAB_SLOW_RECORD_WRITER),
                 {dir, QStringLiteral("50"), QStringLiteral("100")});
    QVERIFY(writer.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(dir + QStringLiteral("/run.sqlite")), 10000);

    QString error;
    MainWindow w;
    w.setErrorSink(&error);
    w.resize(1280, 820);
    w.show();
    QTRY_COMPARE_WITH_TIMEOUT(w.openRun(dir), QString(), 10000); // once its schema is committed
    QVERIFY(w.viewedRunIsLive());
    QVERIFY2(statusText(w).contains(QLatin1String("live")), qPrintable(statusText(w)));
    // The gradient view draws a recorded step at the loss scale it used, not the app's own.
    QTRY_VERIFY_WITH_TIMEOUT(w.viewedStep() > 0, 10000);
    QCOMPARE(w.scaleSlider()->scale(), 1024.0);
    QComboBox* formats = w.watchedFormatBox();
    QCOMPARE(formats->count(), 3);
    QCOMPARE(formats->itemText(2), QStringLiteral("nvfp4"));

    // Steps arrive while the writer goes, with no user action: many sizes are seen on the way.
    std::set<std::size_t> seen;
    bool scrubbedBack = false;
    std::int64_t keptStep = 0;
    QElapsedTimer clock;
    clock.start();
    while (w.viewedHistory().size() < 50 && clock.elapsed() < 60000) {
        QTest::qWait(20);
        seen.insert(w.viewedHistory().size());
        // Halfway, the user scrubs back to the first recorded step: it stays on show.
        if (!scrubbedBack && w.viewedHistory().size() >= 25) {
            w.scrubSlider()->setValue(0);
            keptStep = w.viewedStep();
            QCOMPARE(keptStep, std::int64_t{1});
            scrubbedBack = true;
        }
        if (scrubbedBack)
            QCOMPARE(w.viewedStep(), keptStep);
    }
    QCOMPARE(w.viewedHistory().size(), std::size_t{50});
    QVERIFY2(seen.size() >= 5, qPrintable(QString::number(seen.size()))); // ~25 polls as it writes
    QCOMPARE(w.viewedHistory().back().loss, 2.0 / 50);
    QCOMPARE(w.viewedHistory().back().scale, 1024.0);

    // Back to the newest, then the writer ends: the status says so.
    w.scrubSlider()->setValue(w.scrubSlider()->maximum());
    QCOMPARE(w.viewedStep(), std::int64_t{46}); // statistics every 5 steps: 1, 6, ..., 46
    if (writer.state() != QProcess::NotRunning) // it may have ended while the loop waited
        QVERIFY(writer.waitForFinished(30000));
    QCOMPARE(writer.exitStatus(), QProcess::NormalExit);
    QCOMPARE(writer.exitCode(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!w.viewedRunIsLive(), 5000);
    QTRY_VERIFY_WITH_TIMEOUT(statusText(w).contains(QLatin1String("ended: completed")), 5000);

    // Another judged format: its counts on show (FP8 E4M3 flushes more of the tiny gradients
    // than FP16 at the same scale), the histograms the same.
    const double fp16Flushed = w.heatmapView()->valueAt(1, 0);
    formats->setCurrentIndex(1);
    emit formats->activated(1);
    QCOMPARE(error, QString());
    const double fp8Flushed = w.heatmapView()->valueAt(1, 0);
    QVERIFY2(fp16Flushed < 0.05 && fp8Flushed > 0.5,
             qPrintable(QStringLiteral("%1 %2").arg(fp16Flushed).arg(fp8Flushed)));
    QCOMPARE(w.viewedStep(), std::int64_t{46});

    // The slider previews another scale on a recorded run and says it cannot steer it; the
    // preview stays while the step on show does.
    w.scaleSlider()->setLog2Scale(4);
    auto* follow = w.findChild<QTimer*>(QStringLiteral("followTimer"));
    QVERIFY(follow != nullptr && follow->isActive());
    QSignalSpy polls(follow, &QTimer::timeout);
    QTRY_VERIFY_WITH_TIMEOUT(polls.count() >= 2, 30000); // two polls of the ended run since
    QCOMPARE(w.scaleSlider()->scale(), 16.0);
    QVERIFY2(w.statusBar()->currentMessage().contains(QLatin1String("cannot be changed")),
             qPrintable(w.statusBar()->currentMessage()));
}

QTEST_MAIN(TestFollowRun)
#include "test_follow_run.moc"
