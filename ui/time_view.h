// TimeView: loss (train and test) and the loss scale over steps, skipped steps marked, drawn
// from the controller's bounded history.
#pragma once

#include "stats/training_snapshot.h"

#include <QWidget>

#include <vector>

class QCustomPlot;
class QCPGraph;

namespace plab {

class TimeView : public QWidget {
    Q_OBJECT
public:
    explicit TimeView(QWidget* parent = nullptr);
    void setHistory(const std::vector<StepScalars>& history);
    QCustomPlot* plot() const { return m_plot; }

private:
    QCustomPlot* m_plot;
    QCPGraph *m_trainLoss, *m_trainAccuracy, *m_testLoss, *m_testAccuracy, *m_scale, *m_skipped;
};

} // namespace plab
