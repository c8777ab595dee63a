// FormatInspector: type a value and see, in every format side by side, what it becomes: the
// rounded value, its bit pattern, its neighbours, its class and the rounding error; plus a number
// line of one format's representable values.
#pragma once

#include <QDialog>

class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;
class QCustomPlot;

namespace plab {

class FormatInspector : public QDialog {
    Q_OBJECT
public:
    explicit FormatInspector(QWidget* parent = nullptr);
    void setValueText(const QString& text); // for tests and "inspect this value"
    // Custom formats shown after the named ones, comma separated specs ("e5m2:bias=16:nosub").
    void setCustomFormatsText(const QString& text);
    QTableWidget* table() const { return m_table; }
    // Why the value text was refused; empty when it was read (the table then holds its results,
    // and is empty otherwise: never the previous value's).
    QString valueError() const { return m_valueError; }
    // Why a custom format spec was refused (the spec and the reason); empty when all were read.
    QString customFormatsError() const { return m_customError; }
    // The line under the inputs that says why a value or a spec was refused (hidden when none).
    QLabel* messageLabel() const { return m_message; }

private:
    void refresh();
    void drawNumberLine();

    QLineEdit* m_value;
    QLineEdit* m_custom;
    QLabel* m_message;
    QComboBox* m_rounding;
    QTableWidget* m_table;
    QComboBox* m_lineFormat;
    QCustomPlot* m_line;
    QString m_valueError;
    QString m_customError;
};

// The inspector's input: a decimal or hex-float number representable in float32 (a value past
// float32's range, however many digits, or a nonzero one that rounds to 0 in float32, is refused
// with the reason), or
// exactly inf, +inf, -inf, infinity or nan (any case). Returns the reason on refusal.
QString parseInspectorValue(const QString& text, float* value);
// |q - x| / |x|: inf when a finite x became Inf or NaN, or when x is 0 and q is not (E8M0 has no
// zero); NaN (shown "-") when x is NaN.
double inspectorRelativeError(float x, float q);

} // namespace plab
