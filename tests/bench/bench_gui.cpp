// Benchmark (not a test): (1) slider drag to repainted gradient view, p50/p95/max over a scripted
// drag, with six layers and four overlaid formats; (2) training samples/s with the window open
// and updating vs the same recipe headless, in one run; (3) the all-layers overview repainted
// with a GPT of 4 blocks (9 stages) under the FP8 hybrid recipe. Offscreen unless
// QT_QPA_PLATFORM is set.
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "main_window.h"
#include "stages_overview.h"
#include "train/presets.h"
#include "training_controller.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSlider>
#include <QTemporaryDir>
#include <QThread>

#include <qcustomplot.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace plab;

namespace {

TrainConfig benchConfig(std::int64_t steps) {
    return configFromJson({{"model", {{"hidden", {256, 256, 256, 256, 256}}}}, // six layers
                           {"train", {{"steps", steps}, {"stats_every", 1}}},
                           {"recipe",
                            {{"weights", "fp16"},
                             {"activations", "fp16"},
                             {"activation_gradients", "fp16"},
                             {"weight_gradients", "fp16"}}}});
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("PrecisionLabBench"));
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    TrainingController* c = window.controller();
    QTemporaryDir guiRunDir; // the GUI logs its runs as the CLI does
    if (!c->configure(benchConfig(400), guiRunDir.path()).isEmpty())
        return 1;
    for (QCheckBox* box : window.gradientView()->findChildren<QCheckBox*>())
        box->setChecked(true);

    // (2) samples/s with the window open: 300 steps while the GUI polls and repaints.
    c->train();
    while (!c->latest() || c->latest()->scalars.step < 300) {
        QApplication::processEvents(QEventLoop::AllEvents, 5);
        QThread::msleep(1);
    }
    const double guiRate = c->latest()->scalars.samplesPerSecond;
    c->pause();
    while (c->state() != SessionState::Paused)
        QApplication::processEvents();
    c->poll();

    // (1) slider drag: each move re-shades from the last histogram and repaints.
    QSlider* slider = window.scaleSlider()->slider();
    std::vector<double> ms;
    QElapsedTimer timer;
    for (int i = 0; i < 400; ++i) {
        const int value = (i % 160) - 32;
        timer.start();
        slider->setValue(value);
        window.gradientView()->plot()->replot(QCustomPlot::rpImmediateRefresh);
        QApplication::processEvents();
        ms.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
    }

    // (3) the all-layers overview of a GPT (4 blocks: 9 stages), repainted.
    std::vector<double> overviewMs;
    {
        nlohmann::json gpt = findPreset("fp8-hybrid-delayed").json;
        gpt["model"] = {{"type", "gpt"}, {"blocks", 4}};
        gpt["train"] = {{"steps", 3}};
        QTemporaryDir gptDir;
        if (!c->configure(configFromJson(gpt), gptDir.path()).isEmpty())
            return 1;
        c->step();
        while (!c->latest() || c->latest()->scalars.step < 1)
            QApplication::processEvents(QEventLoop::AllEvents, 5);
        c->poll();
        QWidget* tab = window.stagesOverview()->parentWidget()->parentWidget();
        window.detailTabs()->setCurrentWidget(tab);
        QApplication::processEvents();
        for (int i = 0; i < 200; ++i) {
            timer.start();
            window.stagesOverview()->repaint();
            overviewMs.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
        }
        if (window.stagesOverview()->rows().size() != 9)
            return 1;
    }

    // Headless as the CLI runs it (session thread and run log), same recipe, same process.
    window.hide();
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(1, 20000, 2000));
    QTemporaryDir runDir;
    double headless = 0.0;
    {
        TrainingSession session(benchConfig(300), data, runDir.path().toStdString());
        session.start();
        session.waitUntilDone();
        headless = session.latestSnapshot()->scalars.samplesPerSecond;
    }

    std::printf("slider drag -> repainted view (6 layers, 4 overlays, %zu moves): p50 %.2f ms, "
                "p95 %.2f ms, max %.2f ms\n",
                ms.size(), percentile(ms, 0.5), percentile(ms, 0.95), percentile(ms, 1.0));
    std::printf("all-layers overview repaint (gpt, 9 stages, %zu repaints): p50 %.2f ms, p95 "
                "%.2f ms, max %.2f ms\n",
                overviewMs.size(), percentile(overviewMs, 0.5), percentile(overviewMs, 0.95),
                percentile(overviewMs, 1.0));
    std::printf("training with the window open: %.0f samples/s; headless: %.0f samples/s; "
                "ratio %.2f\n",
                guiRate, headless, guiRate / headless);
    return 0;
}
