// CompareDialog: runs several presets on the same seed and data, one after another, each as a
// TrainingSession with its own run record (like every GUI and CLI run), and overlays their loss
// curves and flushed-gradient shares: live while a run goes, then from its record by the core's
// run analysis (the numbers `compare` in the CLI prints). Progress and "done" show below the list;
// the plots export like the main window's.
#pragma once

#include "train/train_config.h"

#include <QDialog>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

class QCustomPlot;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTimer;

namespace plab {

class CompareDialog : public QDialog {
    Q_OBJECT
public:
    // base: the config whose data, model and seed every preset run shares. runsRoot: where the
    // runs' folders go (compare-<time>/<preset>); empty: the app's runs folder.
    explicit CompareDialog(const TrainConfig& base, QWidget* parent = nullptr,
                           const QString& runsRoot = {});
    ~CompareDialog() override;

    // Starts the given presets (empty: the checked ones) for `steps` steps each.
    void run(const QStringList& presets = {}, int steps = 0);
    bool isRunning() const { return m_running.load(); }
    QCustomPlot* lossPlot() const { return m_loss; }
    QCustomPlot* flushedPlot() const { return m_flushed; }
    QString exportPng(const QString& dir); // loss.png and flushed.png; error text or empty
    QStringList checkedPresets() const;
    QString progressText() const; // "fp16-amp (2 of 3): step 120 of 300", "Done: ..."
    QString compareDir() const;   // the folder of the last comparison's runs

signals:
    // The comparison ended (done, stopped or failed) and its final curves are drawn.
    void comparisonEnded();

private:
    struct Curve {
        QString name;
        std::vector<double> steps, loss;           // every step
        std::vector<double> flushedSteps, flushed; // statistics steps (from the record)
    };
    void refresh();

    TrainConfig m_base;
    QListWidget* m_list;
    QSpinBox* m_steps;
    QPushButton* m_runButton;
    QCustomPlot *m_loss, *m_flushed;
    QTimer* m_timer;
    QLabel* m_progress;
    QString m_runsRoot;
    mutable std::mutex m_mutex;
    std::vector<Curve> m_curves; // guarded by m_mutex
    QString m_error;             // guarded by m_mutex
    QString m_progressText;      // guarded by m_mutex
    QString m_compareDir;        // guarded by m_mutex
    std::atomic<bool> m_running{false};
    std::jthread m_worker;
};

} // namespace plab
