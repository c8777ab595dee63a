// MainWindow's Tools > Advise: the advisor on the run in the window, and what Apply does.
#include "main_window.h"

#include "advise_panel.h"
#include "record/run_record.h"
#include "run_steering.h"
#include "stages_overview.h"

#include <QFileInfo>
#include <QStatusBar>

namespace plab {

AdvisePanel* MainWindow::advisePanel() {
    if (!m_advise) {
        m_advise = new AdvisePanel(this);
        connect(m_advise, &AdvisePanel::applyRequested, this, [this](const nlohmann::json& doc) {
            if (const QString error = applyAdvice(doc); !error.isEmpty())
                showError(tr("Cannot apply the advice"), error);
        });
        // The All layers view colours each row by the format advised for it.
        connect(m_advise, &AdvisePanel::advised, this, [this] {
            std::map<std::pair<int, TensorRole>, StagesOverview::Advised> byStage;
            const RunAdvice& a = *m_advise->advice();
            for (const RoleAdvice& r : a.roles)
                byStage[{static_cast<int>(r.stage), r.role}] = {
                    r.chosen.empty() ? tr("none") : QString::fromStdString(r.chosen),
                    QString::fromStdString(r.module) + QStringLiteral(" ") +
                        QString::fromUtf8(toString(r.role).data()) + QStringLiteral(": ") +
                        QString::fromStdString(r.summary),
                    static_cast<int>(ladderRank(a.criteria, r.chosen.empty() ? "fp32" : r.chosen))};
            m_overview->setAdvice(std::move(byStage),
                                  static_cast<int>(a.criteria.ladder.size()) + 1);
            m_adviceRun = m_advise->runDir();
            updateDetailViews();
        });
    }
    return m_advise;
}

void MainWindow::followRunInAdvise() {
    const QString shown = m_source->folder();
    if (!m_advise || m_advise->runDir().isEmpty() || m_advise->runDir() == shown ||
        m_startingRunUnderAdvice || (!shown.isEmpty() && shown == m_runUnderAdvice))
        return; // the advice's own run, or the run Apply started under it
    if (m_advise->isVisible())
        openAdvise(); // an error (a run without statistics yet) is the panel's status line
    else
        m_advise->forget();
}

QString MainWindow::openAdvise() {
    const bool viewing = viewingRecord();
    const QString dir = m_source->folder();
    if (dir.isEmpty())
        return tr("No run to advise on: train one, or open a run folder (File > Open run)");
    bool canApply = true;
    QString why;
    if (viewing) {
        const nlohmann::json source = m_viewed->record().meta("source");
        if (source == "pytorch-watch") {
            canApply = false;
            why = tr("A watched run's model is your script's: export the recipe and pass it to "
                     "precision_lab.torch.emulate");
        } else if (source == "pytorch-emulate" && !steeringViewedRun()) {
            canApply = false;
            why = tr("The emulated script no longer runs: export the recipe and run "
                     "emulate(model, FILE)");
        }
    }
    AdvisePanel* panel = advisePanel();
    const QString error = panel->advise(dir, canApply, why);
    panel->show();
    panel->raise();
    return error;
}

QString MainWindow::applyAdvice(const nlohmann::json& document) {
    try {
        if (steeringViewedRun()) {
            // The script's stages are its modules: the advice's module names become stages.
            nlohmann::json recipe = document.at("recipe");
            const std::vector<std::string> names = m_viewed->stageNames();
            if (recipe.contains("overrides"))
                for (nlohmann::json& entry : recipe["overrides"])
                    if (entry.contains("modules")) {
                        const std::string name = entry["modules"].get<std::string>();
                        const auto it = std::find(names.begin(), names.end(), name);
                        if (it == names.end())
                            return tr("The advice names module %1, which the run does not have")
                                .arg(QString::fromStdString(name));
                        entry.erase("modules");
                        entry["stage"] = static_cast<int>(it - names.begin());
                    }
            const TrainConfig edited = applyEdit(m_viewed->config(), {{"recipe", recipe}});
            sentToRun(m_source->setRecipe(edited.recipe), tr("the recipe"));
            return {};
        }
        const TrainConfig config = configFromJson(document);
        const QString from = QFileInfo(m_advise ? m_advise->runDir() : QString()).fileName();
        m_startingRunUnderAdvice = true; // shown while it starts: the panel keeps its advice
        const QString error = startRun(config);
        m_startingRunUnderAdvice = false;
        m_runUnderAdvice = error.isEmpty() ? m_controller->runDir() : QString();
        if (!error.isEmpty())
            return error;
        showConfigInControls(config, tr("advice: %1").arg(from));
        statusBar()->showMessage(tr("A new run under the advice for %1").arg(from), 5000);
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace plab
