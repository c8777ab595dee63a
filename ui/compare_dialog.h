// CompareDialog: runs several presets on the same seed and data on a worker thread and overlays
// their loss curves and flushed-gradient shares; the plots export like the main window's.
#pragma once

#include "train/train_config.h"

#include <QDialog>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

class QCustomPlot;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTimer;

namespace plab {

class CompareDialog : public QDialog {
    Q_OBJECT
public:
    // base: the config whose data, model and seed every preset run shares.
    explicit CompareDialog(const TrainConfig& base, QWidget* parent = nullptr);
    ~CompareDialog() override;

    // Starts the given presets (empty: the checked ones) for `steps` steps each.
    void run(const QStringList& presets = {}, int steps = 0);
    bool isRunning() const { return m_running.load(); }
    QCustomPlot* lossPlot() const { return m_loss; }
    QCustomPlot* flushedPlot() const { return m_flushed; }
    QString exportPng(const QString& dir); // loss.png and flushed.png; error text or empty

private:
    struct Curve {
        QString name;
        std::vector<double> steps, loss, flushed;
    };
    void refresh();

    TrainConfig m_base;
    QListWidget* m_list;
    QSpinBox* m_steps;
    QPushButton* m_runButton;
    QCustomPlot *m_loss, *m_flushed;
    QTimer* m_timer;
    std::mutex m_mutex;
    std::vector<Curve> m_curves; // guarded by m_mutex
    QString m_error;             // guarded by m_mutex
    std::atomic<bool> m_running{false};
    std::jthread m_worker;
};

} // namespace plab
