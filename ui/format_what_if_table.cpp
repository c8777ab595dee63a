// FormatWhatIfTable: a FormatComparison into a QTableWidget.
#include "format_what_if_table.h"
#include "percent_text.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace plab {
namespace {

QTableWidgetItem* cell(const QString& text, bool bold, bool number) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    if (number)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (bold) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
    }
    return item;
}

} // namespace

FormatWhatIfTable::FormatWhatIfTable(QWidget* parent) : QWidget(parent) {
    m_caption = new QLabel(this);
    m_caption->setWordWrap(true);
    m_table = new QTableWidget(0, 5, this);
    m_table->setHorizontalHeaderLabels(
        {tr("format"), tr("flushed"), tr("subnormal"), tr("overflow"), tr("SQNR (dB)")});
    m_table->verticalHeader()->hide();
    // Compact rows: a row per format and scaling (twenty), little scrolling.
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setToolTip(tr("Shares of the nonzero values (as the shares line): flushed, nonzero "
                           "values that would become zero; subnormal; overflow. SQNR: signal over "
                           "quantisation noise, 10 log10(sum x^2 / "
                           "sum (q - x)^2). \"tensor amax\": the values first scaled by "
                           "(format max / amax) / 2^margin with the whole tensor's amax and the "
                           "run's margin (Transformer Engine's current scaling). Scaled and block "
                           "formats saturate; element formats keep their default overflow (Inf "
                           "where they have it)."));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_caption);
    layout->addWidget(m_table, 1);
    m_caption->setText(tr("Press Train or Step: each statistics step keeps a sample of every "
                          "tensor to compare the formats on."));
}

QString FormatWhatIfTable::caption() const {
    return m_caption->text();
}

void FormatWhatIfTable::show(const FormatComparison& comparison) {
    if (comparison.key == m_key)
        return; // on show already
    m_key = comparison.key;
    m_caption->setText(comparison.caption);
    fillRows(comparison.rows, comparison.current);
}

void FormatWhatIfTable::fillRows(const std::vector<FormatOutcome>& outcomes,
                                 const std::string& current) {
    m_table->setRowCount(static_cast<int>(outcomes.size()));
    for (int row = 0; row < static_cast<int>(outcomes.size()); ++row) {
        const FormatOutcome& o = outcomes[static_cast<std::size_t>(row)];
        const bool bold = o.name == current;
        m_table->setItem(row, 0, cell(QString::fromStdString(o.name), bold, false));
        m_table->setItem(row, 1, cell(percentText(o.flushed), bold, true));
        m_table->setItem(row, 2, cell(percentText(o.subnormal), bold, true));
        m_table->setItem(row, 3, cell(percentText(o.overflow), bold, true));
        const QString sqnr = std::isnan(o.sqnrDb)   ? tr("not measured")
                             : std::isinf(o.sqnrDb) ? tr("exact")
                                                    : QString::number(o.sqnrDb, 'f', 1);
        m_table->setItem(row, 4, cell(sqnr, bold, true));
    }
}

} // namespace plab
