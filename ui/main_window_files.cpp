// MainWindow's files: sessions (the CLI's config with the run's timeline of edits), the
// report and plot exports.
#include "main_window.h"

#include "device/compute_backend.h"
#include "flush_heatmap_view.h"
#include "gradient_view.h"
#include "plot_export.h"
#include "record/run_export.h"
#include "record/run_record.h"
#include "record_run_source.h"
#include "time_view.h"
#include "training_controller.h"
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <filesystem>
#include <qcustomplot.h>

namespace plab {

// plot_export.h's writeWholeFile, for text: the file whole or as it was, errors with the
// system's reason.
QString MainWindow::writeWholeFile(const QString& path, const std::string& text) {
    return plab::writeWholeFile(path, QByteArray::fromStdString(text));
}

QString MainWindow::saveSession(const QString& path) {
    // The start and the timeline of edits, not the state now: a dynamic policy's scale at the
    // end of the run is not the scale it started from.
    const std::string text = m_controller->replayConfig().toJson().dump(2) + "\n";
    if (const QString error = writeWholeFile(path, text); !error.isEmpty())
        return error;
    rememberRecentFile(path);
    return {};
}

QString MainWindow::loadSession(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return tr("%1: cannot open (%2)").arg(path, f.errorString());
    const QByteArray bytes = f.readAll();
    TrainConfig config;
    nlohmann::json document;
    try {
        document = parseConfigText(bytes.toStdString(), path.toStdString()); // names the file
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    try {
        config = configFromJson(document);
    } catch (const std::exception& e) {
        return path + QStringLiteral(": ") + QString::fromUtf8(e.what());
    }
    if (const QString error = startRun(config); !error.isEmpty())
        return error;
    showConfigInControls(config, tr("session: %1").arg(QFileInfo(path).fileName()));
    rememberRecentFile(path);
    return {};
}

QString MainWindow::exportReport(const QString& dir) {
    if (const QString error = exportPlots(dir); !error.isEmpty())
        return error;
    if (const QString error = saveSession(dir + QStringLiteral("/config.json")); !error.isEmpty())
        return error;
    const TrainingSnapshot* s = m_controller->latest();
    nlohmann::json summary = {{"run_directory", m_controller->runDir().toStdString()},
                              {"state", toString(m_controller->state())}};
    if (s) {
        summary["step"] = s->scalars.step;
        summary["epoch"] = s->scalars.epoch;
        summary["loss"] = s->scalars.loss;
        summary["loss_scale"] = s->scalars.scale;
        nlohmann::json layers = nlohmann::json::array();
        for (std::size_t i = 0; i < s->stages.size(); ++i) {
            nlohmann::json roles;
            for (TensorRole r : kAllRoles) {
                const QuantStats& q = s->stages[i].role(r);
                // Shares of all values, but flushed_share: of the nonzero ones (the record's)
                roles[std::string(toString(r))] = {{"zero", q.fraction(QuantClass::Zero)},
                                                   {"flushed_share", q.flushedShare()},
                                                   {"subnormal", q.fraction(QuantClass::Subnormal)},
                                                   {"overflow", q.fraction(QuantClass::Overflow)},
                                                   {"amax", q.amax}};
            }
            layers.push_back({{"name", s->stageNames[i]},
                              {"lost_updates", s->stages[i].lostUpdateFraction()},
                              {"roles", roles}});
        }
        summary["layers"] = layers;
    }
    if (const QString error =
            writeWholeFile(dir + QStringLiteral("/state_at_export.json"), summary.dump(2) + "\n");
        !error.isEmpty())
        return error;
    // The run's record as CSV/JSONL, as far as the run has gone.
    if (!m_controller->runDir().isEmpty()) {
        try {
            exportRunRecord(m_controller->runDir().toStdString(), dir.toStdString());
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
    }
    return {};
}

QString MainWindow::exportPlots(const QString& dir) {
    std::error_code ec; // QDir::mkpath says only that it failed; this says why
    if (!std::filesystem::create_directories(dir.toStdString(), ec) && ec)
        return tr("%1: cannot create the folder (%2)")
            .arg(dir, QString::fromStdString(ec.message()));
    // Each figure names its run and what it shows: cut from the window, it must stand alone.
    const QString runPath = m_viewed ? m_viewed->folder() : m_controller->runDir();
    const QString run =
        runPath.isEmpty() ? tr("Precision Lab") : tr("run %1").arg(QFileInfo(runPath).fileName());
    const QString recipe = shownRecipeLabel();
    const struct {
        QCustomPlot* plot;
        QString name, title;
    } plots[] = {
        {m_gradientView->plot(), QStringLiteral("gradients"),
         tr("%1 (%2): %3").arg(run, recipe, m_gradientView->caption())},
        {m_timeView->plot(), QStringLiteral("training"),
         tr("%1 (%2): loss, accuracy and loss scale per step").arg(run, recipe)},
        {m_heatmap->plot(), QStringLiteral("flushed_per_layer"),
         tr("%1 (%2): share of nonzero activation gradients flushed, per layer and step%3")
             .arg(run, recipe, m_heatmap->logScale() ? tr(" (log colour scale)") : QString())}};
    for (const auto& p : plots)
        if (const QString error =
                exportPlot(p.plot, dir + QLatin1Char('/') + p.name, std::max(p.plot->width(), 800),
                           std::max(p.plot->height(), 400), p.title);
            !error.isEmpty())
            return error;
    return {};
}

// What a figure's title calls the run's precision: the preset entry the app's own run was
// started from; for an opened run (the preset box says "run: NAME" then: issue 65 item 32) its
// recipe's formats and scaling, or for a watched run the format its counts are shown in.
QString MainWindow::shownRecipeLabel() const {
    if (!m_viewed)
        return m_runPreset.isEmpty() ? m_preset->currentText() : m_runPreset;
    if (m_viewed->record().meta("source") == "pytorch-watch")
        return tr("judged in %1").arg(m_watchedFormat->currentText());
    const TrainConfig& config = m_viewed->config();
    QStringList formats;
    for (TensorRole role : kAllRoles) {
        const QString name =
            QString::fromStdString(config.recipe.roles[static_cast<std::size_t>(role)].format.name);
        if (!formats.contains(name))
            formats << name;
    }
    QString label =
        formats.join(QStringLiteral(" / ")) +
        tr(", %1 scaling").arg(QString::fromLatin1(toString(config.scalingPolicy).data()));
    if (!config.recipe.stageOverrides.empty() || !config.recipe.kindOverrides.empty() ||
        !config.recipe.stageScaling.empty() || !config.recipe.kindScaling.empty())
        label += tr(", with per-layer exceptions");
    return label;
}

} // namespace plab
