// BlocksView: the block-scaled cast of the tensor the gradient view shows. Left, the histogram
// of the decoded block scales (log2) over the scale format's range (E8M0, E4M3 or FP32); right,
// each block's dynamic range (log2 of its amax over its smallest nonzero value) against the span
// the element format holds without flushing; below, the counts: all-zero blocks, blocks wholly
// flushed, blocks with a saturated element, values flushed inside blocks that kept something.
#pragma once

#include "shown_precision.h"
#include "stats/training_snapshot.h"

#include <QWidget>

class QCustomPlot;
class QCPBars;
class QLabel;

namespace plab {

class BlocksView : public QWidget {
    Q_OBJECT
public:
    explicit BlocksView(QWidget* parent = nullptr);

    void show(const TrainingSnapshot& snapshot, const ShownPrecision& precision, int stage,
              TensorRole role);
    QString countsText() const;
    QCustomPlot* scalePlot() const { return m_scalePlot; }
    QCustomPlot* rangePlot() const { return m_rangePlot; }

private:
    void clear(const QString& why);

    QCustomPlot* m_scalePlot;
    QCustomPlot* m_rangePlot;
    QCPBars* m_scaleBars;
    QCPBars* m_rangeBars;
    QLabel* m_counts;
};

} // namespace plab
