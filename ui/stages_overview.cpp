#include "stages_overview.h"

#include "format_bands.h"

#include "gpt/gpt_model.h" // outlierChannelShare
#include "numerics/quant_stats.h"
#include "stats/what_if.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace plab {
namespace {

constexpr int kRowHeight = 26, kTitleHeight = 18;

QString compactPercent(double share) {
    return QString::number(100.0 * share, 'g', share < 0.001 ? 2 : 3) + QLatin1Char('%');
}

} // namespace

StagesOverview::StagesOverview(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(100);
    setMouseTracking(false);
    setToolTip(tr("Every stage's histogram for the role shown above, over its format's bands: "
                  "red flushes to zero, orange is subnormal, purple overflows. Click a row to "
                  "open that stage above."));
}

void StagesOverview::show(const TrainingSnapshot& snapshot, const ShownPrecision& precision,
                          TensorRole role, int selectedStage) {
    m_rows.clear();
    m_selected = selectedStage;
    const auto r = static_cast<std::size_t>(role);
    int lowest = kHistLogBins, highest = 1;
    double formatLow = 0.0, formatHigh = 0.0;
    for (std::size_t s = 0; s < snapshot.stages.size(); ++s) {
        const StageStats& stage = snapshot.stages[s];
        const QuantStats& q = stage.roles[r];
        const FormatSpec& format = precision.format(static_cast<int>(s), snapshot.stageNames, role);
        Row row;
        row.name = s < snapshot.stageNames.size() ? QString::fromStdString(snapshot.stageNames[s])
                                                  : QStringLiteral("stage %1").arg(s);
        const FormatBands bands = formatBands(format);
        row.flushBelow = bands.flushBelow;
        row.normalFrom = bands.normalFrom;
        row.overflowFrom = bands.overflowFrom;
        if (format.hasNarrowRange()) { // FP32-range formats would stretch the axis for nothing
            formatLow = std::min(formatLow, row.flushBelow);
            formatHigh = std::max(formatHigh, row.overflowFrom);
        }
        std::uint64_t tallest = 0;
        for (int b = 1; b <= kHistLogBins; ++b)
            tallest = std::max(tallest, q.histogram[static_cast<std::size_t>(b)]);
        row.height.assign(kHistLogBins + 1, 0.0f);
        for (int b = 1; b <= kHistLogBins && tallest > 0; ++b)
            if (const std::uint64_t n = q.histogram[static_cast<std::size_t>(b)]; n > 0) {
                row.height[static_cast<std::size_t>(b)] =
                    static_cast<float>(n) / static_cast<float>(tallest);
                lowest = std::min(lowest, b);
                highest = std::max(highest, b);
            }
        const WhatIfFractions f = measuredFractions(q);
        row.summary = q.total() == 0 ? tr("not counted")
                                     : tr("%1  flushed %2  overflow %3")
                                           .arg(QString::fromStdString(format.name),
                                                compactPercent(f.ofNonzero.flushed),
                                                compactPercent(f.ofNonzero.overflow));
        if (role == TensorRole::Activations && !stage.channelAmax.empty())
            row.summary +=
                tr("  outliers %1")
                    .arg(compactPercent(transformer::outlierChannelShare(stage.channelAmax)));
        if (const auto a = m_advice.find({static_cast<int>(s), role}); a != m_advice.end()) {
            row.advised = a->second.format;
            row.adviceReason = a->second.reason;
            row.adviceRank = a->second.rank;
            row.summary += tr("  advised %1").arg(row.advised);
        }
        m_rows.push_back(std::move(row));
    }
    if (lowest <= highest) {
        m_xmin = std::min(histogramBinLowerLog2(lowest), formatLow) - 2.0;
        m_xmax = std::max(histogramBinLowerLog2(highest) + 0.25, formatHigh) + 2.0;
    }
    // The label column fits the longest summary (in the smaller font), up to half the width.
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    const QFontMetrics names(font()), summaries(small);
    m_labelWidth = 120;
    for (const Row& row : m_rows)
        m_labelWidth = std::max({m_labelWidth, names.horizontalAdvance(row.name) + 12,
                                 summaries.horizontalAdvance(row.summary) + 12});
    m_title = tr("%1, step %2")
                  .arg(QString::fromLatin1(toString(role).data(),
                                           static_cast<qsizetype>(toString(role).size())),
                       QString::number(snapshot.statsStep));
    updateGeometry();
    update();
}

void StagesOverview::setAdvice(std::map<std::pair<int, TensorRole>, Advised> advice,
                               int ladderSize) {
    m_advice = std::move(advice);
    m_ladderSize = std::max(1, ladderSize);
    update();
}

bool StagesOverview::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(e);
        const int row = rowAt(help->pos().y());
        if (row >= 0 && !m_rows[static_cast<std::size_t>(row)].adviceReason.isEmpty()) {
            QToolTip::showText(help->globalPos(),
                               m_rows[static_cast<std::size_t>(row)].adviceReason, this);
            return true;
        }
    }
    return QWidget::event(e);
}

int StagesOverview::rowAt(int y) const {
    const int row = (y - kTitleHeight) / kRowHeight;
    return y >= kTitleHeight && row < static_cast<int>(m_rows.size()) ? row : -1;
}

QSize StagesOverview::sizeHint() const {
    return {m_labelWidth + 400,
            kTitleHeight + kRowHeight * (std::max<int>(3, static_cast<int>(m_rows.size())) + 1)};
}

void StagesOverview::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    p.setPen(palette().text().color());
    p.drawText(QRect(4, 0, width() - 8, kTitleHeight), Qt::AlignLeft | Qt::AlignVCenter, m_title);
    const int labelWidth = std::min(m_labelWidth, width() / 2);
    const int plotLeft = labelWidth, plotWidth = std::max(10, width() - labelWidth - 8);
    const auto xOf = [&](double log2x) {
        return plotLeft + static_cast<int>((log2x - m_xmin) / (m_xmax - m_xmin) * plotWidth);
    };
    const QColor flushed(220, 60, 60, 70), subnormal(240, 160, 40, 70), overflow(150, 60, 200, 70);
    for (std::size_t i = 0; i < m_rows.size(); ++i) {
        const Row& row = m_rows[i];
        const int top = kTitleHeight + static_cast<int>(i) * kRowHeight;
        const QRect band(plotLeft, top + 1, plotWidth, kRowHeight - 2);
        if (static_cast<int>(i) == m_selected)
            p.fillRect(QRect(0, top, width(), kRowHeight), palette().alternateBase());
        const auto shade = [&](double from, double to, const QColor& c) {
            const int a = std::clamp(xOf(from), band.left(), band.right());
            const int b = std::clamp(xOf(to), band.left(), band.right());
            if (b > a)
                p.fillRect(QRect(a, band.top(), b - a, band.height()), c);
        };
        shade(m_xmin, row.flushBelow, flushed);
        shade(row.flushBelow, row.normalFrom, subnormal);
        shade(row.overflowFrom, m_xmax, overflow);
        p.setPen(palette().mid().color());
        p.drawRect(band.adjusted(0, 0, -1, -1));
        const QColor bar = palette().text().color();
        for (int b = 1; b < static_cast<int>(row.height.size()); ++b) {
            const float h = row.height[static_cast<std::size_t>(b)];
            if (h <= 0.0f)
                continue;
            const double lo = histogramBinLowerLog2(b);
            const int x0 = xOf(lo), x1 = std::max(x0 + 1, xOf(lo + 0.25));
            const int hPx = std::max(1, static_cast<int>(h * static_cast<float>(band.height())));
            p.fillRect(QRect(x0, band.bottom() - hPx + 1, x1 - x0, hPx), bar);
        }
        if (!row.advised.isEmpty()) {
            // The advised format's colour: narrowest green through amber to grey for the widest.
            const double t = m_ladderSize > 1 ? static_cast<double>(row.adviceRank) /
                                                    static_cast<double>(m_ladderSize - 1)
                                              : 0.0;
            const QColor tag = QColor::fromHsvF(static_cast<float>(0.33 * (1.0 - t)),
                                                t >= 1.0 ? 0.0f : 0.6f, 0.85f);
            p.fillRect(QRect(0, top + 2, 4, kRowHeight - 4), tag);
        }
        p.setPen(palette().text().color());
        p.drawText(QRect(8, top, labelWidth - 12, kRowHeight / 2 + 2),
                   Qt::AlignLeft | Qt::AlignVCenter, row.name);
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * 0.85);
        p.setFont(small);
        p.drawText(QRect(8, top + kRowHeight / 2, labelWidth - 12, kRowHeight / 2),
                   Qt::AlignLeft | Qt::AlignVCenter, row.summary);
        p.setFont(font());
    }
    // The log2 axis: a tick every 8 binades along the bottom of the last row.
    p.setPen(palette().mid().color());
    const int axisY = kTitleHeight + static_cast<int>(m_rows.size()) * kRowHeight;
    for (int e = static_cast<int>(std::ceil(m_xmin / 8.0)) * 8; e <= m_xmax; e += 8)
        if (axisY + 12 < height())
            p.drawText(QRect(xOf(e) - 20, axisY, 40, 14), Qt::AlignCenter,
                       QStringLiteral("2^%1").arg(e));
}

void StagesOverview::mousePressEvent(QMouseEvent* event) {
    if (const int row = rowAt(static_cast<int>(event->position().y())); row >= 0)
        emit stageClicked(row);
}

} // namespace plab
