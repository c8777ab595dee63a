// LossScaleSlider: the loss scale on a log2 axis in quarter-binade steps (2^-8 .. 2^32), shown as
// 2^k and as a number. Dragging emits scaleChanged at once; the views re-shade from it, and the
// main window sends it on release. At least kMinimumSliderWidth wide (issue 65 item 28: a
// collapsed slider made a small drag many binades); arrows and each wheel notch move a quarter
// binade, PageUp/PageDown one.
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

    static constexpr int kMinimumSliderWidth = 200; // 5 px a binade over its 40

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

public slots:
    void setLog2Scale(double log2Scale); // rounded to a quarter binade; emits if it changed

signals:
    void scaleChanged(double scale);

private:
    void updateLabel();

    QSlider* m_slider;
    QLabel* m_label;
    int m_wheelEighths = 0; // a touchpad's partial notches, kept until they make one
};

} // namespace plab
