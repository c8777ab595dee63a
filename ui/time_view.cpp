// TimeView: thin pens, no fills, data already sorted by step (QCustomPlot's fast path).
#include "time_view.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <cmath>

namespace plab {

TimeView::TimeView(QWidget* parent) : QWidget(parent) {
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(100); // with the gradient view above it, fits an 800x600 window
    m_plot->setNotAntialiasedElements(QCP::aeAll);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("loss / accuracy"));
    m_plot->yAxis2->setVisible(true);
    m_plot->yAxis2->setLabel(tr("log2 loss scale"));
    m_plot->legend->setVisible(true);
    m_plot->legend->setFont(font());
    // The legend in a row of its own above the plot, in three columns: inside the axis rect it
    // covered the newest steps, the log2-scale curve at 2^10-2^12 and the skipped-step marks.
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(3);
    m_plot->legend->setRowSpacing(0);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->axisRect()->insetLayout()->simplify();
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001); // as tall as its entries, no more

    m_trainLoss = m_plot->addGraph();
    m_trainLoss->setName(tr("train loss"));
    m_trainLoss->setPen(QPen(QColor(30, 100, 220), 1));
    m_trainAccuracy = m_plot->addGraph();
    m_trainAccuracy->setName(tr("train accuracy (batch)"));
    m_trainAccuracy->setPen(QPen(QColor(40, 160, 70, 140), 1));
    m_testLoss = m_plot->addGraph();
    m_testLoss->setName(tr("test loss"));
    m_testLoss->setPen(QPen(QColor(220, 120, 20), 2));
    m_testLoss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
    m_testAccuracy = m_plot->addGraph();
    m_testAccuracy->setName(tr("test accuracy"));
    m_testAccuracy->setPen(QPen(QColor(40, 160, 70), 2));
    m_testAccuracy->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, 6));
    m_scale = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    m_scale->setName(tr("log2 scale"));
    m_scale->setPen(QPen(QColor(120, 120, 120), 1, Qt::DashLine));
    m_skipped = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    m_skipped->setName(tr("skipped step"));
    m_skipped->setLineStyle(QCPGraph::lsNone);
    m_skipped->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QColor(200, 40, 40), 7));

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
}

void TimeView::setHistory(const std::vector<StepScalars>& history) {
    QVector<double> steps, loss, accuracy, tSteps, tLoss, tAcc, scale, skipSteps, skipScale;
    double maxLoss = 1.0;
    for (const StepScalars& s : history) {
        const auto x = static_cast<double>(s.step);
        steps.push_back(x);
        loss.push_back(s.loss);
        accuracy.push_back(s.accuracy);
        if (std::isfinite(s.loss))
            maxLoss = std::max(maxLoss, s.loss);
        scale.push_back(std::log2(s.scale));
        if (!std::isnan(s.testLoss)) {
            tSteps.push_back(x);
            tLoss.push_back(s.testLoss);
            tAcc.push_back(s.testAccuracy);
        }
        if (s.skipped) {
            skipSteps.push_back(x);
            skipScale.push_back(std::log2(s.scale));
        }
    }
    m_trainLoss->setData(steps, loss, true);
    m_trainAccuracy->setData(steps, accuracy, true);
    m_testLoss->setData(tSteps, tLoss, true);
    m_testAccuracy->setData(tSteps, tAcc, true);
    m_scale->setData(steps, scale, true);
    m_skipped->setData(skipSteps, skipScale, true);
    m_plot->xAxis->setRange(0.0, std::max(10.0, steps.isEmpty() ? 10.0 : steps.back()));
    m_plot->yAxis->setRange(0.0, std::min(maxLoss * 1.05, 10.0));
    bool found = false;
    const QCPRange sr = m_scale->data()->valueRange(found);
    m_plot->yAxis2->setRange(found ? sr.lower - 2 : -1, found ? sr.upper + 2 : 1);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace plab
