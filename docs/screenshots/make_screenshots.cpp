// Regenerates the manual's screenshots with the app itself, offscreen: the main window part-way
// through training the demo network, the format inspector, and that run opened from its record.
// Run through
// docs/regenerate-screenshots.sh, which builds this and writes docs/images/.
//   make_screenshots <out-dir>
#include "blocks_view.h"
#include "format_inspector.h"
#include "format_what_if_table.h"
#include "gradient_view.h"
#include "main_window.h"
#include "training_controller.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QTest>

#include <cstdio>
#include <functional>

namespace {

// Runs the event loop until pred holds; false after timeoutMs.
bool waitUntil(const std::function<bool()>& pred, int timeoutMs) {
    QElapsedTimer timer;
    timer.start();
    while (!pred()) {
        if (timer.elapsed() > timeoutMs)
            return false;
        QTest::qWait(20);
    }
    return true;
}

bool save(QWidget* widget, const QString& path) {
    if (!widget->grab().save(path)) {
        std::fprintf(stderr, "make_screenshots: cannot write %s\n", qPrintable(path));
        return false;
    }
    std::printf("wrote %s\n", qPrintable(path));
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_screenshots <out-dir>\n");
        return 2;
    }
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    // Own settings scope: the user's recent files and window state stay out of the pictures.
    QApplication::setOrganizationName(QStringLiteral("PrecisionLabScreenshots"));
    const QString outDir = QString::fromLocal8Bit(argv[1]);
    if (!QDir().mkpath(outDir)) {
        std::fprintf(stderr, "make_screenshots: cannot create %s\n", argv[1]);
        return 1;
    }

    plab::MainWindow window;
    window.resize(1280, 820);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window) || !window.controller()->hasSession()) {
        std::fprintf(stderr, "make_screenshots: the main window did not come up\n");
        return 1;
    }
    // Mid-training: the demo network (FP16, no loss scale) a few hundred steps in, with the
    // classifier's input gradients shown, where FP16 flushes the most.
    window.controller()->train();
    const bool trained = waitUntil(
        [&] {
            const auto* s = window.controller()->latest();
            return s != nullptr && s->scalars.step >= 300;
        },
        120000);
    window.controller()->pause();
    if (!trained ||
        !waitUntil([&] { return window.controller()->state() == plab::SessionState::Paused; },
                   10000)) {
        std::fprintf(stderr, "make_screenshots: training did not reach step 300\n");
        return 1;
    }
    QComboBox* stages = window.gradientView()->stageBox();
    stages->setCurrentIndex(stages->count() - 1);
    QTest::qWait(300); // the refresh timer's pass
    if (!save(&window, outDir + QStringLiteral("/main-window.png")))
        return 1;

    plab::FormatInspector* inspector = window.formatInspector();
    inspector->resize(1100, 640);
    inspector->setValueText(QStringLiteral("0.0000123"));
    inspector->show();
    QTest::qWait(300);
    if (!save(inspector, outDir + QStringLiteral("/format-inspector.png")))
        return 1;
    inspector->hide();

    // The same run opened from its record (File > Open run), scrubbed back to step 1.
    const QString run = window.controller()->runDir();
    if (const QString error = window.openRun(run); !error.isEmpty()) {
        std::fprintf(stderr, "make_screenshots: open run: %s\n", qPrintable(error));
        return 1;
    }
    window.gradientView()->stageBox()->setCurrentIndex(stages->count() - 1);
    QTest::qWait(300);
    if (!save(&window, outDir + QStringLiteral("/open-run.png")))
        return 1;

    // NVFP4, 200 steps in: the first layer's activation gradients in blocks, then every format
    // on their sample.
    for (QComboBox* box : window.findChildren<QComboBox*>())
        if (box->findText(QStringLiteral("nvfp4")) >= 0 &&
            box->findText(QStringLiteral("fp8-blockwise")) >= 0)
            box->setCurrentText(QStringLiteral("nvfp4"));
    if (const QString error = window.applySettings(); !error.isEmpty()) {
        std::fprintf(stderr, "make_screenshots: nvfp4: %s\n", qPrintable(error));
        return 1;
    }
    window.controller()->train();
    if (!waitUntil(
            [&] {
                const auto* s = window.controller()->latest();
                return s != nullptr && s->scalars.step >= 200;
            },
            120000)) {
        std::fprintf(stderr, "make_screenshots: nvfp4 training did not reach step 200\n");
        return 1;
    }
    window.controller()->pause();
    waitUntil([&] { return window.controller()->state() == plab::SessionState::Paused; }, 10000);
    window.gradientView()->stageBox()->setCurrentIndex(0);
    QComboBox* roles = window.gradientView()->roleBox();
    roles->setCurrentIndex(
        roles->findData(static_cast<int>(plab::TensorRole::ActivationGradients)));
    window.detailTabs()->setCurrentWidget(window.blocksView());
    QTest::qWait(300);
    if (!save(&window, outDir + QStringLiteral("/blocks.png")))
        return 1;
    window.detailTabs()->setCurrentWidget(window.formatWhatIf());
    QTest::qWait(300);
    if (!save(&window, outDir + QStringLiteral("/format-what-if.png")))
        return 1;
    return 0;
}
