// The desktop app offscreen (TestMainWindow; one file per window area, test_main_window_*.cpp,
// the class and the helpers they share here): a real session on the built-in data, steps from the
// keyboard, the slider changing the flushed share in the direction the format demands before any
// new step, export to PNG/PDF/SVG, errors as messages, and a screenshot to look at.
#pragma once

#include <QComboBox>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QWheelEvent>

#include <QTest>
#include <fstream>

#include <algorithm>
#include <csignal>
#include <functional>
#include <map>
#include <sys/resource.h>

#include "blocks_view.h"
#include "compare_dialog.h"
#include "device/compute_backend.h"
#include "flush_heatmap_view.h"
#include "format_inspector.h"
#include "format_what_if_table.h"
#include "gradient_view.h"
#include "loss_scale_slider.h"
#include "main_window.h"
#include "numerics/reference_quantize.h"
#include "percent_text.h"
#include "plot_export.h"
#include "recipe_editor.h"
#include "record/run_folder.h"
#include "record/run_record.h"
#include "stages_overview.h"
#include "sweep/sweep_run.h"
#include "test_shard.h"
#include "time_view.h"
#include "train/presets.h"
#include "train/run_checkpoint.h"
#include "training_controller.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QStatusBar>
#include <QTableWidget>
#include <QToolBar>
#include <qcustomplot.h>

#include <filesystem>
#include <fstream>
#include <optional>

using namespace plab;

// How long a wait for the training thread may take: Qt's default of 5 s ran out once on a loaded
// 2-core machine (the suite runs two tests at a time beside other load); the waits end as soon as
// their condition holds, so a long limit costs nothing when all is well.
inline constexpr int kWorkerWaitMs = 30000;

// Until the controller's run has taken step `step`: it waits as long as the run keeps stepping
// (paced steps on a loaded machine, under TSan), and gives up only when no step came for
// kWorkerWaitMs (a stopped or hung run). Progress is the state waited on, not a total time.
inline bool reachesStep(const TrainingController* c, std::int64_t step) {
    std::int64_t seen = -1;
    QElapsedTimer sinceLastStep;
    sinceLastStep.start();
    for (;;) {
        const std::int64_t now = c->latest() ? c->latest()->scalars.step : 0;
        if (now >= step)
            return true;
        if (now != seen) {
            seen = now;
            sinceLastStep.restart();
        } else if (sinceLastStep.elapsed() > kWorkerWaitMs) {
            qWarning("the run stopped at step %lld of %lld", static_cast<long long>(now),
                     static_cast<long long>(step));
            return false;
        }
        QTest::qWait(10);
    }
}

// The window's combo box that offers `item` (a preset, a policy).
inline QComboBox* boxOffering(QWidget* window, const QString& item) {
    for (QComboBox* box : window->findChildren<QComboBox*>())
        if (box->findText(item) >= 0)
            return box;
    return nullptr;
}

inline void showRole(GradientView* view, TensorRole role) {
    view->roleBox()->setCurrentIndex(view->roleBox()->findData(static_cast<int>(role)));
}

// What `write` answers while no file may grow past 20 kB (a full disk, as the CLI's tests play
// it: writes past the limit fail with EFBIG instead of killing the process).
inline QString underFileSizeLimit(const std::function<QString()>& write) {
    rlimit before{};
    if (::getrlimit(RLIMIT_FSIZE, &before) != 0)
        return QStringLiteral("getrlimit failed");
    const auto previous = std::signal(SIGXFSZ, SIG_IGN);
    const rlimit small{20000, before.rlim_max};
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0)
        return QStringLiteral("setrlimit failed");
    const QString answer = write();
    ::setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, previous);
    return answer;
}

// The what-if table's row in bold (the format in use), or -1.
inline int boldRow(const QTableWidget* table) {
    int bold = -1;
    for (int row = 0; row < table->rowCount(); ++row)
        if (table->item(row, 0)->font().bold())
            bold = row;
    return bold;
}

// The config a Save session wrote (one that does not parse throws: the test fails on it).
inline TrainConfig savedSession(const QString& path) {
    std::ifstream in(path.toStdString());
    return configFromJson(nlohmann::json::parse(in));
}

// Whether the config's timeline is the one edit `set` made after `step` steps.
inline bool isOneEdit(const TrainConfig& config, std::int64_t step, const char* set) {
    return config.timeline.size() == 1 && config.timeline[0].step == step &&
           config.timeline[0].set == nlohmann::json::parse(set);
}

// Steps the window's run `n` times and returns the losses of every step so far, in order.
inline std::vector<double> stepAndCollectLosses(MainWindow& window, int n) {
    TrainingController* c = window.controller();
    const std::int64_t target = (c->latest() ? c->latest()->scalars.step : 0) + n;
    for (int i = 0; i < n; ++i) {
        const std::int64_t before = c->latest() ? c->latest()->scalars.step : 0;
        c->step();
        for (int t = 0; t < 1000 && (!c->latest() || c->latest()->scalars.step == before); ++t)
            QTest::qWait(5);
    }
    std::vector<double> losses;
    for (const StepScalars& s : c->history())
        if (s.step <= target)
            losses.push_back(s.loss);
    return losses;
}

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void stepsAndShowsGradients();
    void lossLegendCoversNoCurve();
    void sliderReshadesBeforeNextStep();
    void exportWritesFiles();
    void errorsBecomeMessages();
    void recipeEditsApplyAtNextStep();
    void sessionSaveLoadRoundTrip();
    void oneDragOrEntryIsOneEdit();
    void applyAndSaveUseWhatTheWindowShows();
    void formatInspectorShowsEveryFormat();
    void formatInspectorRefusesAndReportsHonestly();
    void deviceBoxFeedsConfigAndSaysWhereItRuns();
    void reportAndHeatmap();
    void compareOverlaysCurves();
    void compareStopLeavesRunsToDo();
    void dataFolderIsShownAndChosenAgain();
    void unappliedValuesArePending();
    void narrowWindowKeepsTheSettingsInView();
    void screenshotAfterTraining();
    void spaceOnAnEndedRunDoesNothing();
    void applyShowsTheNewRunAtOnce();
    void resetStartsANewRunWithTheEdits();
    void resetAfterTheEndKeepsTheEdits();
    void statusShowsTheRealThroughput();
    void openRunShowsAPastRun();
    void readmeFirstSessionHoldsAsWritten();
    void blocksAndFormatWhatIfFollowTheView();
    void perLayerSliderWaitsForTheNextStep();
    void divergenceAdvisesOnTheScale();
    void sliderUnderPolicyNoneMakesTheRunStatic();
    void runFoldersAreNeverShared();
    void quickAppliesLeaveNoEmptyFolders();
    void smallWindowKeepsItsControlsReadable();
    void gptTrainsWithAllLayersOverviewAndSample();

private:
    // The window's config on a small synthetic set: Compare's runs take a second or two.
    TrainConfig smallCompareBase() const {
        TrainConfig base = m_window->controller()->config();
        base.syntheticTrain = 600;
        base.syntheticTest = 100;
        base.batchSize = 32;
        return base;
    }
    // The app's data folder (its runs) for this test alone, removed at the end: the runs the
    // window records do not pile up in the user's home, run after run.
    QTemporaryDir m_dataHome;
    std::unique_ptr<MainWindow> m_window;
    QString m_error;
};
