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
    // Why the value text was refused; empty when it was read (the table then holds its results,
    // and is empty otherwise: never the previous value's).
    QString valueError() const { return m_valueError; }

private:
    void refresh();
    void drawNumberLine();

    QLineEdit* m_value;
    QComboBox* m_rounding;
    QTableWidget* m_table;
    QComboBox* m_lineFormat;
    QCustomPlot* m_line;
    QString m_valueError;
};

// The inspector's input: a decimal or hex-float number representable in float32 (a value past
// float32's range, or a nonzero one that rounds to 0 in float32, is refused with the reason), or
// exactly inf, +inf, -inf, infinity or nan (any case). Returns the reason on refusal.
QString parseInspectorValue(const QString& text, float* value);
// |q - x| / |x|: inf when a finite x became Inf or NaN, or when x is 0 and q is not (E8M0 has no
// zero); NaN (shown "-") when x is NaN.
double inspectorRelativeError(float x, float q);

} // namespace plab
