// RecipeEditor: format, rounding and overflow for every tensor role, of all layers or of one
// (the Layer box: an edit there is that layer's override, a recipe cell), and one layer's own
// per-tensor scaling (the Scaling box: the run's, or none, amax or block scaling of its own).
// Edits apply to the running session (or a steered script) at the next step; a custom eXmY that
// does not parse is marked and not applied.
#pragma once

#include "recipe/precision_recipe.h"

#include <QWidget>

#include <array>
#include <string>
#include <vector>

class QComboBox;
class QLabel;

namespace plab {

class RecipeEditor : public QWidget {
    Q_OBJECT
public:
    explicit RecipeEditor(QWidget* parent = nullptr);

    // Shows it; emits nothing. runScaling: the run's tensor scaling policy (the policy box's),
    // under which a layer without a scaling of its own casts: a scaled product input saturates
    // whatever its overflow setting says, and its row shows that.
    void setRecipe(const PrecisionRecipe& recipe, ScalingPolicy runScaling = ScalingPolicy::None);
    // The model's layers, for the Layer box (its choice is kept while the names stay the same).
    void setStageNames(const std::vector<std::string>& names);
    QComboBox* layerBox() const { return m_layer; }
    // The layer the rows show and edit, or -1 for all layers (the recipe's rows).
    int shownStage() const;
    const PrecisionRecipe& recipe() const { return m_recipe; }
    ScalingPolicy runScaling() const { return m_runScaling; }
    // The shown layer's scaling: "the run's" (no override) or a policy of its own; disabled
    // while all layers show (the run's scaling is the policy box's).
    QComboBox* scalingBox() const { return m_scaling; }
    QComboBox* formatBox(TensorRole role) const {
        return m_rows[static_cast<std::size_t>(role)].format;
    }
    QComboBox* overflowBox(TensorRole role) const {
        return m_rows[static_cast<std::size_t>(role)].overflow;
    }
    QString lastError() const;
    // Where the recipe departs from the rows above for some layers (a preset's first and last
    // layers, a GPT's head or norms): one line each; empty when it does not.
    QString exceptionsText() const;
    // The style a format box shows: empty, or the red border of a refused entry.
    QString formatBoxStyle(TensorRole role) const;
    // A watched run has no recipe: the rows give way to a note saying what the record holds
    // (empty: the rows again).
    void showRecordOnly(const QString& note);
    QString recordOnlyNote() const; // empty while the rows show

signals:
    void recipeChanged(const PrecisionRecipe& recipe);

private:
    struct Row {
        QComboBox* format;
        QComboBox* rounding;
        QComboBox* overflow;
    };
    void onEdited(TensorRole role);
    void onScalingEdited();
    void showRows(); // the shown layer's formats
    const QuantConfig& shownConfig(TensorRole role) const;
    // "first layer", "layer fc2", "last layer": an exception's stage as the dock names it.
    std::string describeStage(int stage) const;

    std::array<Row, kRoleCount> m_rows;
    QComboBox* m_scaling = nullptr;
    PrecisionRecipe m_recipe;
    ScalingPolicy m_runScaling = ScalingPolicy::None;
    QString m_overflowTip; // an overflow box's own tooltip (a scaled row says why it saturates)
    std::vector<std::string> m_stageNames;
    QComboBox* m_layer;
    QLabel* m_error;
    QLabel* m_exceptions;
    QLabel* m_recordNote;
    std::vector<QWidget*> m_recipeWidgets; // what showRecordOnly() hides
    bool m_loading = false;
};

// "range 2^-24 .. 65504, 10 mantissa bits (epsilon 2^-10)" for tooltips.
QString formatSummary(const FormatSpec& format);

} // namespace plab
