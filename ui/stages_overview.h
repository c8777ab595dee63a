// StagesOverview: every stage's log2|x| histogram for one tensor role, a compact row each over
// the bands of the format that stage's role is cast to (flushed to zero, subnormal, normal,
// overflow), stacked so that one glance shows where in the network values flush or saturate.
// Each row says its flushed and overflowed shares (and, for activations of a transformer stage,
// its outlier channels); clicking a row opens that stage in the gradient view. After Tools >
// Advise, each row carries the format advised for its role, coloured by its place in the ladder,
// and its hover text says what decided it. Painted directly
// (no plot objects): one rectangle per bin, well inside a 16 ms repaint with a GPT's stages.
#pragma once

#include "shown_precision.h"
#include "stats/training_snapshot.h"

#include <QWidget>

#include <map>
#include <utility>
#include <vector>

namespace plab {

class StagesOverview : public QWidget {
    Q_OBJECT
public:
    explicit StagesOverview(QWidget* parent = nullptr);

    void show(const TrainingSnapshot& snapshot, const ShownPrecision& precision, TensorRole role,
              int selectedStage);

    // What a row shows (for tests and tooltips).
    struct Row {
        QString name;
        QString summary;           // "flushed 1.2%  overflow 0%  outliers 3.1%"
        std::vector<float> height; // per log bin, 0..1 of the row's tallest
        double flushBelow = 0.0;   // log2 bounds of the bands: below flushBelow values flush,
        double normalFrom = 0.0;   // [flushBelow, normalFrom) subnormal,
        double overflowFrom = 0.0; // [normalFrom, overflowFrom) normal, above it overflow
        QString advised;           // the advisor's format for this stage's role, or empty
        QString adviceReason;      // what decided it (the row's hover text)
        int adviceRank = 0;        // its place in the ladder, narrowest 0
    };
    // The advisor's choice per stage and role (ladder: narrowest first, for the colours); an
    // empty map clears it.
    struct Advised {
        QString format, reason;
        int rank = 0;
    };
    void setAdvice(std::map<std::pair<int, TensorRole>, Advised> advice, int ladderSize);
    bool hasAdvice() const { return !m_advice.empty(); }
    const std::vector<Row>& rows() const { return m_rows; }
    int rowAt(int y) const; // -1: none
    QSize sizeHint() const override;

signals:
    void stageClicked(int stage);

protected:
    bool event(QEvent* event) override; // a row's hover text: its advice
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    std::vector<Row> m_rows;
    double m_xmin = -30.0, m_xmax = 10.0; // the log2 axis, common to every row
    int m_selected = -1;
    std::map<std::pair<int, TensorRole>, Advised> m_advice;
    int m_ladderSize = 1;
    int m_labelWidth = 120;
    QString m_title;
};

} // namespace plab
