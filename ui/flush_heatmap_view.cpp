// FlushHeatmapView: one QCPColorMap cell per (statistics step, layer).
#include "flush_heatmap_view.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

namespace plab {

FlushHeatmapView::FlushHeatmapView(QWidget* parent) : QWidget(parent) {
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(140);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("layer"));
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    auto* scale = new QCPColorScale(m_plot);
    scale->setLabel(tr("flushed share of activation gradients"));
    m_plot->plotLayout()->addElement(0, 1, scale);
    m_map->setColorScale(scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    m_map->setGradient(gradient);
    m_map->setDataRange(QCPRange(0.0, 1.0));
    m_map->setInterpolate(false);
    m_plot->setToolTip(tr("Each cell: of the nonzero activation gradients arriving at that layer "
                          "on that step, the share the cast flushed to zero"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
}

void FlushHeatmapView::setColumns(const std::vector<TrainingController::FlushColumn>& columns,
                                  const std::vector<std::string>& stageNames) {
    const int rows = columns.empty() ? 1 : static_cast<int>(columns.front().flushed.size());
    const int cols = std::max<int>(1, static_cast<int>(columns.size()));
    m_map->data()->setSize(cols, rows);
    const double first = columns.empty() ? 0.0 : static_cast<double>(columns.front().step);
    const double last = columns.empty() ? 1.0 : static_cast<double>(columns.back().step);
    m_map->data()->setRange(QCPRange(first, std::max(last, first + 1)),
                            QCPRange(0, std::max(rows - 1, 1)));
    for (int c = 0; c < static_cast<int>(columns.size()); ++c)
        for (int r = 0;
             r < rows && r < static_cast<int>(columns[static_cast<std::size_t>(c)].flushed.size());
             ++r)
            m_map->data()->setCell(
                c, r, columns[static_cast<std::size_t>(c)].flushed[static_cast<std::size_t>(r)]);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int r = 0; r < static_cast<int>(stageNames.size()); ++r)
        ticker->addTick(r, QStringLiteral("L%1").arg(r));
    m_plot->yAxis->setTicker(ticker);
    m_plot->rescaleAxes();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace plab
