// FormatWhatIfTable: "what would this tensor look like in another format", for the tensor the
// gradient view shows: formats side by side (flushed, subnormal, overflow, SQNR), the one in use
// bold. A passive view: what it shows (the rows, the caption) is made by format_comparison.h
// from the run on show.
#pragma once

#include "format_comparison.h"

#include <QWidget>

class QLabel;
class QTableWidget;

namespace plab {

class FormatWhatIfTable : public QWidget {
    Q_OBJECT
public:
    explicit FormatWhatIfTable(QWidget* parent = nullptr);

    // Draws `comparison` (nothing to do when it is the one on show).
    void show(const FormatComparison& comparison);
    QTableWidget* table() const { return m_table; }
    QString caption() const;

private:
    void fillRows(const std::vector<FormatOutcome>& outcomes, const std::string& current);
    QLabel* m_caption;
    QTableWidget* m_table;
    std::string m_key; // of the comparison on show
};

} // namespace plab
