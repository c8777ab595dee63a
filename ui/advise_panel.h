// AdvisePanel (Tools > Advise): the recipe advisor (core/advise) on the run in the window, own,
// watched, emulated or a sweep member: the criteria, the table of each module's roles with the
// number that decided each format, each layer's products, "Apply as recipe" (a new own run
// under the advice, or for an emulated script the recipe sent as a command) and "Export…" as a
// recipe, Transformer Engine YAML, a Megatron-LM precision config or a torchao script.
#pragma once

#include "advise/recipe_advice.h"

#include <QDialog>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace plab {

class AdvisePanel : public QDialog {
    Q_OBJECT
public:
    explicit AdvisePanel(QWidget* parent = nullptr);

    // Advises on the run in runDir with the criteria in the fields; the error (one line) or
    // empty. canApply: whether Apply has somewhere to go (a watched script's model is not the
    // app's), with the reason shown when not.
    QString advise(const QString& runDir, bool canApply = true, const QString& whyNotApply = {});
    const QString& runDir() const { return m_runDir; } // the run advised last
    // Drops the advice (another run is in the window): Apply and Export have nothing to write.
    void forget();
    const std::optional<RunAdvice>& advice() const { return m_advice; }
    // The advice as a recipe document (Apply sends it); the error in *error when it cannot be.
    nlohmann::json recipeDocument(QString* error) const;
    // Writes kind (advice_exports.h: "recipe", "te-yaml", "megatron", ...) to path, whole; the
    // error or empty.
    QString exportTo(const QString& path, const QString& kind) const;

    QLineEdit* ladderField() const { return m_ladder; }
    QDoubleSpinBox* maxFlushedBox() const { return m_maxFlushed; }
    QDoubleSpinBox* minSqnrBox() const { return m_minSqnr; }
    QDoubleSpinBox* marginBox() const { return m_margin; }
    QLineEdit* stepsField() const { return m_steps; }
    QTableWidget* rolesTable() const { return m_roles; }
    QTableWidget* productsTable() const { return m_products; }
    QPushButton* applyButton() const { return m_apply; }
    // Test hook: what the Export dialog answers (a path; empty: cancelled) when set.
    void setPathPicker(std::function<QString(const QString& kind)> picker) {
        m_pathPicker = std::move(picker);
    }

signals:
    // Apply as recipe: the document to start a run with (or send to the script).
    void applyRequested(const nlohmann::json& document);
    // A new advice is in advice() (the All layers view colours its rows by it).
    void advised();

private:
    void fillTables();
    void exportAs(const QString& kind);
    QString m_runDir;
    std::optional<RunAdvice> m_advice;
    QLineEdit *m_ladder, *m_steps;
    QDoubleSpinBox *m_maxFlushed, *m_maxOverflow, *m_minSqnr, *m_margin;
    QTableWidget *m_roles, *m_products;
    QLabel* m_status;
    QPushButton *m_apply, *m_export;
    std::function<QString(const QString&)> m_pathPicker;
};

} // namespace plab
