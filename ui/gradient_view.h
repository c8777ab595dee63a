// GradientView: the centre of the app. For the chosen stage and tensor role, the log2|x|
// histogram as bars over shaded bands of the active format (flushed to zero, subnormal, normal,
// overflow), optional range markers of other formats, and the share of values in each band.
// A what-if scale re-shades the recorded histogram at once, without waiting for training.
#pragma once

#include "shown_precision.h"
#include "stats/training_snapshot.h"
#include "stats/what_if.h"

#include <QWidget>

#include <map>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QCustomPlot;
class QCPBars;
class QCPItemRect;

namespace plab {

class GradientView : public QWidget {
    Q_OBJECT
public:
    explicit GradientView(QWidget* parent = nullptr);

    // A new snapshot and the precision it was trained with (or is judged in).
    void setSnapshot(const TrainingSnapshot& snapshot, const ShownPrecision& precision);
    // The scale the user is looking at (the slider); gradient roles are re-shaded for it.
    void setWhatIfScale(double scale);

    WhatIfFractions currentFractions() const { return m_fractions; }
    QCustomPlot* plot() const { return m_plot; }
    QComboBox* stageBox() const { return m_stage; }
    QComboBox* roleBox() const { return m_role; }
    // The layer, tensor, format, scale and step on show, as a line of plain text (empty before
    // a snapshot): the title of an exported figure.
    QString caption() const { return m_caption; }
    // The roles the Tensor box offers: those the run on show records (a watched run has no
    // master weights or optimiser state). The choice is kept where it is offered.
    void setRoles(const std::vector<TensorRole>& roles);
    TensorRole role() const;
    int stage() const;
    const TrainingSnapshot& snapshot() const { return m_snapshot; }
    const ShownPrecision& precision() const { return m_precision; }

signals:
    // A new snapshot, or another stage or role chosen: the views beside it follow.
    void shown();

private:
    // What scaled a role's values before their cast, and how the slider's preview moves them.
    struct ScaleNote {
        double previewShift = 1.0; // applied to the last step's histogram
        QString axisLabel;
        QString sharesLine; // after the role and format in the shares line
    };
    ScaleNote scaleNote(int stage, TensorRole role, const FormatSpec& format) const;
    void refresh();
    void drawBands(const FormatSpec& format);
    void drawOverlays();

    QComboBox* m_stage;
    QComboBox* m_role;
    std::map<std::string, QCheckBox*> m_overlayBoxes;
    QCustomPlot* m_plot;
    QCPBars* m_bars = nullptr;
    QLabel* m_counters;

    TrainingSnapshot m_snapshot; // only the parts this view needs are read
    ShownPrecision m_precision;
    bool m_hasSnapshot = false;
    double m_whatIfScale = 1.0;
    QString m_caption;
    WhatIfFractions m_fractions;
};

} // namespace plab
