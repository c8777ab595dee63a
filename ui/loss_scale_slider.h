// LossScaleSlider: the loss scale on a log2 axis in quarter-binade steps (2^-8 .. 2^32), shown as
// 2^k and as a number. Dragging emits scaleChanged at once; the views re-shade from it and the
// session picks it up at the next step.
#pragma once

#include <QWidget>

class QLabel;
class QSlider;

namespace plab {

class LossScaleSlider : public QWidget {
    Q_OBJECT
public:
    explicit LossScaleSlider(QWidget* parent = nullptr);

    double scale() const;
    double log2Scale() const;
    QSlider* slider() const { return m_slider; }

public slots:
    void setLog2Scale(double log2Scale); // rounded to a quarter binade; emits if it changed

signals:
    void scaleChanged(double scale);

private:
    void updateLabel();

    QSlider* m_slider;
    QLabel* m_label;
};

} // namespace plab
