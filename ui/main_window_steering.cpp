// MainWindow steering an emulated PyTorch run it follows (precision_lab.torch.emulate): the
// slider, the policy box, the recipe dock and Pause / Step send commands through the run's
// record (ui/run_steering.h), and the run's answers come back as its events. Every other run on
// show (watched, ended, a copy, a run of the core's trainer in another process) is view-only:
// those controls are disabled with the reason in their tooltip, the slider previews.
#include "main_window.h"

#include "loss_scale_slider.h"
#include "recipe_editor.h"
#include "run_steering.h"

#include <QAction>
#include <QComboBox>
#include <QSlider>
#include <QStatusBar>

#include <cmath>

namespace plab {

bool MainWindow::steeringViewedRun() const {
    return viewingRecord() && m_source->whyNot().empty();
}

void MainWindow::rememberControlTips() {
    m_controlTips = {m_trainAction->toolTip(),      m_stepAction->toolTip(),
                     m_resetAction->toolTip(),      m_policy->toolTip(),
                     m_slider->slider()->toolTip(), m_recipeEditor->toolTip()};
}

void MainWindow::updateRunControls() {
    if (!viewingRecord()) { // the app's own run: every control is its own
        for (QAction* a : {m_trainAction, m_stepAction, m_resetAction})
            a->setEnabled(true);
        m_policy->setEnabled(true);
        m_recipeEditor->setEnabled(true);
        m_trainAction->setToolTip(m_controlTips.value(0));
        m_stepAction->setToolTip(m_controlTips.value(1));
        m_resetAction->setToolTip(m_controlTips.value(2));
        m_policy->setToolTip(m_controlTips.value(3));
        m_slider->slider()->setToolTip(m_controlTips.value(4));
        m_recipeEditor->setToolTip(m_controlTips.value(5));
        return;
    }
    const bool steer = steeringViewedRun();
    const RunSteering& steering = m_viewed->steering();
    const bool paused = steer && steering.paused();
    const QString why = tr("View-only: %1").arg(QString::fromStdString(steering.whyNot()));
    m_trainAction->setEnabled(steer);
    m_trainAction->setText(!steer ? tr("Train") : paused ? tr("Resume") : tr("Pause"));
    m_trainAction->setToolTip(steer ? tr("Pause or resume the script at its next step boundary "
                                         "(Space)")
                                    : why);
    m_stepAction->setEnabled(paused);
    m_stepAction->setToolTip(!steer   ? why
                             : paused ? tr("One step of the script, then held again (S)")
                                      : tr("Pause the script first; then Step runs one step"));
    m_resetAction->setEnabled(false);
    m_resetAction->setToolTip(steer ? tr("The script's run: to start over, start the script "
                                         "again")
                                    : why);
    m_policy->setEnabled(steer);
    m_policy->setToolTip(steer ? tr("The script's scaling policy, from its next step") : why);
    m_recipeEditor->setEnabled(steer);
    m_recipeEditor->setToolTip(steer ? tr("The script's recipe: a change applies from its next "
                                          "step")
                                     : why);
    m_slider->slider()->setToolTip(steer ? tr("The script's loss scale: sent when you release "
                                              "the slider, used from its next step")
                                         : tr("Preview only (the recorded histograms at another "
                                              "scale). %1")
                                               .arg(why));
}

// A command to the run on show, sent through its source (RunSource's write side): an error in a
// dialog (`liveTitle` its title for the app's own run); a command sent to a script said in the
// status bar, since the script applies it at its next step boundary and answers with an event.
bool MainWindow::sentToRun(const std::string& error, const QString& what,
                           const QString& liveTitle) {
    if (!error.empty()) {
        showError(m_source->remote() || liveTitle.isEmpty() ? tr("Cannot steer the run")
                                                            : liveTitle,
                  QString::fromStdString(error));
        return false;
    }
    if (m_source->remote()) {
        m_steeringReply =
            tr("Sent to the script: %1. It applies it at its next step boundary.").arg(what);
        statusBar()->showMessage(m_steeringReply, 10000);
    }
    return true;
}

// The script's answers (recorded events): a refusal in a dialog, the rest in the status bar;
// the dock and the policy box show the settings the script uses now.
void MainWindow::showSteeringReplies(const std::vector<RecordedEvent>& replies) {
    for (const RecordedEvent& e : replies) {
        const QString message = QString::fromStdString(e.message);
        m_steeringReply = message;
        if (e.type == "command" || e.type == "edit")
            showError(tr("The script refused a command"), message);
        else
            statusBar()->showMessage(tr("The script: %1").arg(message), 10000);
    }
    const RunSteering& steering = m_viewed->steering();
    if (!steering.settingsChanged())
        return;
    const TrainConfig& now = steering.settings();
    m_viewed->setConfig(steering.recordedConfig()); // its start and the timeline so far
    m_recipeEditor->setRecipe(now.recipe, now.scalingPolicy);
    m_policy->setCurrentIndex(m_policy->findData(static_cast<int>(now.scalingPolicy)));
}

} // namespace plab
