// DiagnosticsView (the Diagnostics tab): a run's diagnostics over training as a layer x step heat
// map (record/run_diagnostics.h): log2 amax, kurtosis, signal-to-quantisation-noise ratio, block
// scale spread, blocks with a zero scale, for the role chosen.
#pragma once

#include "record/run_diagnostics.h"

#include <QWidget>

class QComboBox;
class QLabel;

namespace plab {

class FlushHeatmapView;
class RunRecord;

class DiagnosticsView : public QWidget {
    Q_OBJECT
public:
    explicit DiagnosticsView(QWidget* parent = nullptr);
    // Reads the quantity chosen from the record and draws it; format: the rows' (a watched run's
    // judged format on show; empty for others).
    void show(const RunRecord& record, const std::string& format);
    // Before a run's first statistics step (its record not written yet): an empty map and a
    // line saying so, not a one-colour map.
    void showNothingYet();
    DiagnosticQuantity quantity() const;
    TensorRole role() const;
    QComboBox* quantityBox() const { return m_quantity; }
    QComboBox* roleBox() const { return m_role; }
    FlushHeatmapView* map() const { return m_map; }
    QString note() const; // what the map shows, or why it is empty

signals:
    void choiceChanged(); // the quantity or the role: read the record again

private:
    QComboBox *m_quantity, *m_role;
    FlushHeatmapView* m_map;
    QLabel* m_note;
};

} // namespace plab
