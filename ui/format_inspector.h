// FormatInspector: type a value and see, in every format side by side, what it becomes: the
// rounded value, its bit pattern, its neighbours, its class and the rounding error; plus a number
// line of one format's representable values.
#pragma once

#include <QDialog>

class QComboBox;
class QLineEdit;
class QTableWidget;
class QCustomPlot;

namespace plab {

class FormatInspector : public QDialog {
    Q_OBJECT
public:
    explicit FormatInspector(QWidget* parent = nullptr);
    void setValueText(const QString& text); // for tests and "inspect this value"
    QTableWidget* table() const { return m_table; }

private:
    void refresh();
    void drawNumberLine();

    QLineEdit* m_value;
    QComboBox* m_rounding;
    QTableWidget* m_table;
    QComboBox* m_lineFormat;
    QCustomPlot* m_line;
};

} // namespace plab
