// LossScaleSlider: slider positions are quarter binades, k / 4 = log2(scale).
#include "loss_scale_slider.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QWheelEvent>

#include <cmath>

namespace plab {

namespace {
constexpr int kMinQuarter = -8 * 4, kMaxQuarter = 32 * 4;
}

LossScaleSlider::LossScaleSlider(QWidget* parent) : QWidget(parent) {
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setRange(kMinQuarter, kMaxQuarter);
    m_slider->setSingleStep(1);
    m_slider->setPageStep(4); // one binade
    m_slider->setValue(0);
    m_slider->setToolTip(tr("Loss scale S on a log2 axis, in quarter-binade steps. The loss "
                            "gradient is multiplied by S before backprop, moving small gradients "
                            "out of the flush-to-zero band; weight gradients are divided by S "
                            "before the update. Arrows and the wheel move a quarter binade, "
                            "PageUp/PageDown one."));
    m_slider->setAccessibleName(tr("Loss scale"));
    m_slider->setMinimumWidth(kMinimumSliderWidth);
    m_slider->installEventFilter(this); // the wheel: a quarter binade a notch
    m_label = new QLabel(this);
    m_label->setMinimumWidth(
        fontMetrics().horizontalAdvance(QStringLiteral("2^-7.75 = 0.00000000")));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* name = new QLabel(tr("Loss scale"), this);
    name->setMinimumWidth(name->sizeHint().width()); // never cut ("Loss scal" at 800 x 600)
    layout->addWidget(name);
    layout->addWidget(m_slider, 1);
    layout->addWidget(m_label);
    connect(m_slider, &QSlider::valueChanged, this, [this] {
        updateLabel();
        emit scaleChanged(scale());
    });
    updateLabel();
}

bool LossScaleSlider::eventFilter(QObject* watched, QEvent* event) {
    // QSlider moves singleStep x the desktop's scroll lines (3) a notch: three quarters.
    if (watched == m_slider && event->type() == QEvent::Wheel) {
        const QPoint delta = static_cast<QWheelEvent*>(event)->angleDelta();
        m_wheelEighths += delta.y() != 0 ? delta.y() : delta.x();
        const int notches = m_wheelEighths / 120; // a notch is 120 eighths of a degree
        m_wheelEighths -= notches * 120;
        if (notches != 0)
            m_slider->setValue(m_slider->value() + notches);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

double LossScaleSlider::log2Scale() const {
    return m_slider->value() / 4.0;
}

double LossScaleSlider::scale() const {
    return std::exp2(log2Scale());
}

void LossScaleSlider::setLog2Scale(double log2Scale) {
    m_slider->setValue(static_cast<int>(std::lround(log2Scale * 4.0)));
}

void LossScaleSlider::updateLabel() {
    const double k = log2Scale();
    m_label->setText(QStringLiteral("2^%1 = %2").arg(k).arg(scale(), 0, 'g', 6));
}

} // namespace plab
