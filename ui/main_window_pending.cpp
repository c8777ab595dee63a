// Pending toolbar values: a field whose value is not the run on show's (a preset or network chosen,
// a seed or step count typed, the lr a new network suggests) takes effect at Apply, so it is marked
// as such; the lr typed during the app's own run goes to it at once and is never pending.
#include "main_window.h"

#include "training_controller.h"

#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QVariant>

#include <cmath>

namespace plab {
namespace {

// A pale yellow, readable in light and dark themes, on the field itself.
constexpr const char* kPendingStyle = "background-color: rgba(240, 200, 40, 90);";
// pendingFields()' names, in its order.
constexpr const char* kFieldNames[] = {"preset", "network", "data",  "seed",
                                       "lr",     "steps",   "device"};

} // namespace

void MainWindow::watchForPendingValues() {
    m_fieldTips.clear();
    for (QWidget* field : pendingFields())
        m_fieldTips.push_back(field->toolTip());
    m_applyTip = m_applyAction->toolTip();
    for (QComboBox* box : {m_preset, m_model, m_data, m_device})
        connect(box, &QComboBox::currentIndexChanged, this, &MainWindow::markPendingValues);
    for (QSpinBox* box : {m_seed, m_steps})
        connect(box, &QSpinBox::valueChanged, this, &MainWindow::markPendingValues);
    connect(m_lr, &QDoubleSpinBox::valueChanged, this, &MainWindow::markPendingValues);
}

std::vector<QWidget*> MainWindow::pendingFields() const {
    return {m_preset, m_model, m_data, m_seed, m_lr, m_steps, m_device};
}

void MainWindow::markPendingValues() {
    // The run on show: the app's own (its config follows every live edit), or a recorded one.
    const bool own = m_controller->hasSession();
    const bool watched = m_preset->currentData(kWatchedRunRole).toBool();
    static const TrainConfig none;
    const TrainConfig& shown = own ? m_controller->config() : m_viewed ? m_viewed->config() : none;
    const bool compare = !watched && (own || m_viewed);
    // The preset: another entry than the own run was started from (Apply takes the preset's
    // recipe then, not the dock's).
    const bool pending[] = {own && m_preset->currentText() != m_runPreset,
                            m_model->currentData().toString().toStdString() != shown.model.type,
                            dataSourceFromControls().toStdString() != shown.dataSource,
                            static_cast<std::uint64_t>(m_seed->value()) != shown.seed,
                            std::abs(m_lr->value() - shown.learningRate) >
                                1e-9 * std::max(1.0, shown.learningRate),
                            shown.steps > 0 && m_steps->value() != shown.steps,
                            m_device->currentData().toString().toStdString() != shown.device};
    QStringList waiting;
    const std::vector<QWidget*> fields = pendingFields();
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const bool mark = compare && pending[i];
        if (mark)
            waiting << tr(kFieldNames[i]);
        QWidget* field = fields[i];
        if (field->property("pending").toBool() == mark)
            continue;
        field->setProperty("pending", mark);
        field->setStyleSheet(mark ? QString::fromLatin1(kPendingStyle) : QString());
        field->setToolTip(mark ? m_fieldTips.value(static_cast<qsizetype>(i)) +
                                     tr(" (pending: not the run on show's; Apply starts a run "
                                        "with it)")
                               : m_fieldTips.value(static_cast<qsizetype>(i)));
    }
    m_applyAction->setToolTip(
        waiting.isEmpty()
            ? m_applyTip
            : tr("%1 (pending: %2)").arg(m_applyTip, waiting.join(QStringLiteral(", "))));
}

QStringList MainWindow::pendingValues() const {
    QStringList names;
    const std::vector<QWidget*> fields = pendingFields();
    for (std::size_t i = 0; i < fields.size(); ++i)
        if (fields[i]->property("pending").toBool())
            names << QString::fromLatin1(kFieldNames[i]);
    return names;
}

} // namespace plab
