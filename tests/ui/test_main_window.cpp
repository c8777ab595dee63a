// The desktop app offscreen: a real session on the built-in data, steps from the keyboard, the
// slider changing the flushed share in the direction the format demands before any new step,
// export to PNG/PDF/SVG, errors as messages, and a screenshot to look at.
#include <QComboBox>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>

#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "main_window.h"
#include "training_controller.h"

#include <QAction>
#include <QFile>
#include <QImage>

using namespace plab;

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void stepsAndShowsGradients();
    void sliderReshadesBeforeNextStep();
    void exportWritesFiles();
    void errorsBecomeMessages();
    void screenshotAfterTraining();

private:
    std::unique_ptr<MainWindow> m_window;
    QString m_error;
};

void TestMainWindow::initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("PrecisionLabTests"));
    m_window = std::make_unique<MainWindow>();
    m_window->setErrorSink(&m_error);
    m_window->resize(1280, 820);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QVERIFY(m_window->controller()->hasSession());
}

void TestMainWindow::stepsAndShowsGradients() {
    QTest::keyClick(m_window.get(), Qt::Key_S); // Step
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest() != nullptr, 10000);
    QCOMPARE(m_window->controller()->latest()->scalars.step, std::int64_t{1});
    QCOMPARE(m_window->gradientView()->stageBox()->count(), 3); // MLP 256-256: three layers
    QVERIFY(m_window->gradientView()->role() == TensorRole::ActivationGradients);
    const WhatIfFractions f = m_window->gradientView()->currentFractions();
    QVERIFY(f.normal > 0.0);
}

void TestMainWindow::sliderReshadesBeforeNextStep() {
    // Train until the classifier's loss gradients have become small enough to flush in FP16.
    m_window->controller()->train();
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest()->scalars.step >= 80, 30000);
    m_window->controller()->pause();
    QTRY_VERIFY(m_window->controller()->state() == SessionState::Paused);
    m_window->controller()->poll();
    GradientView* view = m_window->gradientView();
    view->stageBox()->setCurrentIndex(2); // the classifier: its loss gradients are the smallest
    const std::int64_t step = m_window->controller()->latest()->scalars.step;
    const double flushedAt1 = view->currentFractions().flushed;
    QVERIFY2(flushedAt1 > 0.05, qPrintable(QString::number(flushedAt1)));

    QSlider* slider = m_window->scaleSlider()->slider();
    slider->setFocus();
    for (int i = 0; i < 12; ++i)
        QTest::keyClick(slider, Qt::Key_PageUp); // +12 binades
    QCOMPARE(m_window->scaleSlider()->log2Scale(), 12.0);
    const double flushedUp = view->currentFractions().flushed;
    QVERIFY2(flushedUp < flushedAt1,
             qPrintable(QStringLiteral("%1 -> %2").arg(flushedAt1).arg(flushedUp)));
    for (int i = 0; i < 20; ++i)
        QTest::keyClick(slider, Qt::Key_PageDown);
    const double flushedDown = view->currentFractions().flushed;
    QVERIFY(flushedDown > flushedAt1);
    // Far up, FP16 overflows instead.
    m_window->scaleSlider()->setLog2Scale(32.0);
    QVERIFY(view->currentFractions().overflow > 0.0);
    m_window->controller()->poll();
    QCOMPARE(m_window->controller()->latest()->scalars.step, step); // no training happened
    m_window->scaleSlider()->setLog2Scale(0.0);
}

void TestMainWindow::exportWritesFiles() {
    QTemporaryDir dir;
    QCOMPARE(m_window->exportPlots(dir.path()), QString());
    for (const char* name : {"gradients", "training"}) {
        const QString base = dir.path() + QLatin1Char('/') + QLatin1String(name);
        QImage png(base + QStringLiteral(".png"));
        QVERIFY(!png.isNull());
        QVERIFY(png.width() >= 800);
        QFile pdf(base + QStringLiteral(".pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        QVERIFY(pdf.read(5) == "%PDF-");
        QFile svg(base + QStringLiteral(".svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QVERIFY(svg.readAll().contains("<svg"));
    }
    QVERIFY(!m_window->exportPlots(QStringLiteral("/proc/no-such-place/plots")).isEmpty());
}

void TestMainWindow::errorsBecomeMessages() {
    TrainConfig bad = m_window->controller()->config();
    bad.dataSource = "/nonexistent/fashion";
    const QString error = m_window->controller()->configure(bad);
    QVERIFY2(error.contains(QLatin1String("/nonexistent/fashion")), qPrintable(error));
    QVERIFY(m_window->controller()->hasSession()); // the previous run survives
}

void TestMainWindow::screenshotAfterTraining() {
    const std::int64_t before = m_window->controller()->latest()->scalars.step;
    QTest::keyClick(m_window.get(), Qt::Key_Space); // Train
    QCOMPARE(m_window->trainAction()->text(), QStringLiteral("Pause"));
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest()->scalars.step >= before + 40, 30000);
    QTest::keyClick(m_window.get(), Qt::Key_Space); // Pause
    QTRY_VERIFY(m_window->controller()->state() == SessionState::Paused);
    QTRY_COMPARE(m_window->trainAction()->text(), QStringLiteral("Train")); // the window noticed
    m_window->gradientView()->stageBox()->setCurrentIndex(2);
    QTest::qWait(100);
    const QString path =
        QCoreApplication::applicationDirPath() + QStringLiteral("/main_window.png");
    QVERIFY(m_window->grab().save(path));
    QVERIFY(QFile(path).size() > 10000);
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
