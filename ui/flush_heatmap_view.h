// FlushHeatmapView: share of activation gradients flushed to zero, per layer (rows) over steps
// (columns), as a colour map: where and when underflow sets in. The Diagnostics tab draws other
// quantities with it (setQuantity).
#pragma once

#include "training_controller.h"

#include <QWidget>

class QCheckBox;

class QCustomPlot;
class QCPColorMap;

namespace plab {

class FlushHeatmapView : public QWidget {
    Q_OBJECT
public:
    explicit FlushHeatmapView(QWidget* parent = nullptr);
    void setColumns(const std::vector<TrainingController::FlushColumn>& columns,
                    const std::vector<std::string>& stageNames);
    QCustomPlot* plot() const { return m_plot; }
    // The share shown at a step and layer (what a person reads off the map there).
    double valueAt(double step, int layer) const;
    // The rows' labels, first layer first (the layers' names).
    QStringList rowLabels() const;
    // Colours by log10 of the share (1e-4 .. 1), so that 1.8% stands out from 0; zero cells
    // take the lowest colour. Off by default.
    void setLogScale(bool on);
    bool logScale() const;
    QCheckBox* logScaleBox() const { return m_logScale; }
    // Another quantity than the flushed share: its colour-scale label and tooltip; the colours
    // then span the finite values drawn, and cells without a value are left blank. An empty
    // label returns to the flushed share.
    void setQuantity(const QString& label, const QString& tooltip);
    static constexpr int kMaxCells = 2048;     // across the x axis
    static constexpr int kMaxLabelLength = 24; // longer names show their tail

private:
    QCustomPlot* m_plot;
    QCPColorMap* m_map;
    QCheckBox* m_logScale;
    QString m_quantity; // empty: the flushed share
    // What is drawn, kept to redraw it on the other colour scale.
    std::vector<TrainingController::FlushColumn> m_columns;
    std::vector<std::string> m_stageNames;
};

} // namespace plab
