// CompareDialog: presets x seeds on the main window's model and data, run as a sweep
// (core/sweep): TrainingSessions, as many at once as there are cores, each with its own run
// record in <runs>/compare-<time>/<preset>/seed-<k>, beside a sweep.json that the CLI's
// `sweep --file` resumes or tabulates. The loss and flushed-share curves show each preset's mean
// over seeds with a band (the 95% interval of the mean), live while runs go; the final test
// accuracy shows as points with error bars, and a results table gives every metric's mean and
// interval with the verdict against fp32 (core/sweep/sweep_results.h). A finished sweep folder,
// from the CLI or a cluster, opens the same way. The plots and the table export.
#pragma once

#include "sweep/live_sweep.h"
#include "sweep/sweep_results.h"
#include "train/train_config.h"

#include <QDialog>

#include <chrono>

#include <optional>
#include <vector>

class QCustomPlot;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTimer;

namespace plab {

class CompareDialog : public QDialog {
    Q_OBJECT
public:
    // base: the config whose model and data every run shares. runsRoot: where the comparisons'
    // folders go (compare-<time>); empty: the app's runs folder.
    explicit CompareDialog(const TrainConfig& base, QWidget* parent = nullptr,
                           const QString& runsRoot = {});
    ~CompareDialog() override;

    // Starts the given presets (empty: the checked ones) for `steps` steps and seeds 1..`seeds`
    // each (0: the spin boxes' values).
    void run(const QStringList& presets = {}, int steps = 0, int seeds = 0);
    // Stops the runs going (their records say "stopped"; `sweep --file` finishes them).
    void stop();
    // Shows the sweep in `dir` (its sweep.json and run folders), read in the background;
    // comparisonEnded when drawn. Returns the error (one line naming the file) or empty.
    QString openSweep(const QString& dir);

    bool isRunning() const { return m_sweep.running(); }
    QCustomPlot* lossPlot() const { return m_loss; }
    QCustomPlot* flushedPlot() const { return m_flushed; }
    QCustomPlot* metricsPlot() const { return m_metrics; }
    QTableWidget* resultsTable() const { return m_table; }
    QSpinBox* seedsBox() const { return m_seeds; }
    QPushButton* runButton() const { return m_runButton; }
    // loss, flushed and test_accuracy as PNG, PDF and SVG, and results.csv, each written whole;
    // the error text (a file and the system's reason; nothing drawn yet) or empty.
    QString exportPlots(const QString& dir);
    QStringList checkedPresets() const;
    QString progressText() const; // "3 of 10 runs done; going: fp16-amp seed 2 (step 120 of 300)"
    QString compareDir() const;   // the folder of the last comparison (or the opened sweep)
    // The run folder of the first seed of `point` (a preset, or a sweep's point name) that has a
    // record in the comparison on show; empty when none has one (yet).
    QString memberRun(const QString& point) const;
    // Whether an opened sweep is still being written by another process (it is followed).
    bool followsFolder();

signals:
    // The comparison ended (done, stopped or failed) or an opened sweep is read; all drawn.
    void comparisonEnded();
    // A point double-clicked (in the preset list or the results table): its run, to show in the
    // main window (followed while the sweep still trains it); a point without a run yet says so
    // in the progress line instead.
    void runChosen(const QString& runDir);

private:
    void startWorker(const Sweep& sweep, const QString& folder, bool train);
    // The progress line of the sweep going or read (its Status), in the dialog's words.
    QString describe(const LiveSweep::Status& status) const;
    void refresh();
    void drawCurves();
    void drawResults(const SweepResults& results);
    void chooseRun(const QString& point);

    TrainConfig m_base;
    QListWidget* m_list;
    QSpinBox* m_steps;
    QSpinBox* m_seeds;
    QPushButton *m_runButton, *m_stopButton, *m_openButton;
    QCustomPlot *m_loss, *m_flushed, *m_metrics;
    QTableWidget* m_table;
    QTimer* m_timer;
    QLabel* m_progress;
    QString m_runsRoot;
    // The sweep going or read, on its own thread (core/sweep/live_sweep.h); the dialog polls it
    // on m_timer and draws. The rest is the GUI thread's alone.
    LiveSweep m_sweep;
    Sweep m_sweepOnShow;
    std::vector<QString> m_pointNames;
    std::optional<SweepResults> m_shown; // what the table shows
    QString m_progressText;
    QString m_compareDir;
    bool m_endShown = true;      // the sweep's end was drawn, said and signalled (once)
    int m_rereadTicks = 0;       // timer ticks before an opened sweep is looked at again
    bool m_stillWritten = false; // another process wrote the opened sweep when last looked at
    std::chrono::steady_clock::time_point m_lastWriterSeen; // a run of it was last locked
    // The sweep folder opened last (Open sweep folder): Run of the same sweep resumes there
    // instead of starting a new folder. GUI thread only.
    QString m_openedFolder;
    nlohmann::json m_openedSweep;
};

} // namespace plab
