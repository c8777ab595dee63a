// StagesOverview: every stage's log2|x| histogram for one tensor role, a compact row each over
// the bands of the format that stage's role is cast to (flushed to zero, subnormal, normal,
// overflow), stacked so that one glance shows where in the network values flush or saturate.
// Each row says its flushed and overflowed shares (and, for activations of a transformer stage,
// its outlier channels); clicking a row opens that stage in the gradient view. Painted directly
// (no plot objects): one rectangle per bin, well inside a 16 ms repaint with a GPT's stages.
#pragma once

#include "stats/training_snapshot.h"
#include "train/train_config.h"

#include <QWidget>

#include <vector>

namespace plab {

class StagesOverview : public QWidget {
    Q_OBJECT
public:
    explicit StagesOverview(QWidget* parent = nullptr);

    void show(const TrainingSnapshot& snapshot, const TrainConfig& config, TensorRole role,
              int selectedStage);

    // What a row shows (for tests and tooltips).
    struct Row {
        QString name;
        QString summary;           // "flushed 1.2%  overflow 0%  outliers 3.1%"
        std::vector<float> height; // per log bin, 0..1 of the row's tallest
        double flushBelow = 0.0;   // log2 bounds of the bands: below flushBelow values flush,
        double normalFrom = 0.0;   // [flushBelow, normalFrom) subnormal,
        double overflowFrom = 0.0; // [normalFrom, overflowFrom) normal, above it overflow
    };
    const std::vector<Row>& rows() const { return m_rows; }
    int rowAt(int y) const; // -1: none
    QSize sizeHint() const override;

signals:
    void stageClicked(int stage);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    std::vector<Row> m_rows;
    double m_xmin = -30.0, m_xmax = 10.0; // the log2 axis, common to every row
    int m_selected = -1;
    int m_labelWidth = 120;
    QString m_title;
};

} // namespace plab
