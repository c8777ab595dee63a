// CompareDialog: presets x seeds on the main window's model and data, run as a sweep
// (core/sweep): TrainingSessions, as many at once as there are cores, each with its own run
// record in <runs>/compare-<time>/<preset>/seed-<k>, beside a sweep.json that the CLI's
// `sweep --file` resumes or tabulates. The loss and flushed-share curves show each preset's mean
// over seeds with a band (the 95% interval of the mean), live while runs go; the final test
// accuracy shows as points with error bars, and a results table gives every metric's mean and
// interval with the verdict against fp32 (core/sweep/sweep_results.h). A finished sweep folder,
// from the CLI or a cluster, opens the same way. The plots and the table export.
#pragma once

#include "sweep/sweep_results.h"
#include "train/train_config.h"

#include <QDialog>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
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

    bool isRunning() const { return m_running.load(); }
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

signals:
    // The comparison ended (done, stopped or failed) or an opened sweep is read; all drawn.
    void comparisonEnded();

private:
    struct RunCurves {
        std::size_t point = 0;
        std::vector<std::pair<double, double>> loss;    // (step, training loss), every step
        std::vector<std::pair<double, double>> flushed; // statistics steps, from the record
    };
    void startWorker(const Sweep& sweep, const QString& folder, bool train);
    void trainSweep(const std::stop_token& stop, const Sweep& sweep, const std::string& folder);
    void readSweep(const Sweep& sweep, const std::string& folder);
    void refresh();
    void drawCurves();
    void drawResults(const SweepResults& results);

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
    mutable std::mutex m_mutex;
    std::vector<QString> m_pointNames;   // guarded by m_mutex
    std::vector<RunCurves> m_runs;       // guarded by m_mutex
    std::optional<SweepResults> m_fresh; // results not drawn yet; guarded by m_mutex
    std::optional<SweepResults> m_shown; // GUI thread only: what the table shows
    QString m_error;                     // guarded by m_mutex
    QString m_progressText;              // guarded by m_mutex
    QString m_compareDir;                // guarded by m_mutex
    // The sweep folder opened last (Open sweep folder): Run of the same sweep resumes there
    // instead of starting a new folder. GUI thread only.
    QString m_openedFolder;
    nlohmann::json m_openedSweep;
    std::atomic<bool> m_running{false};
    std::jthread m_worker;
};

} // namespace plab
