// RecipeEditor: format, rounding and overflow for every tensor role. Edits apply to the running
// session at the next step; a custom eXmY that does not parse is marked and not applied.
#pragma once

#include "train/precision_recipe.h"

#include <QWidget>

#include <array>

class QComboBox;
class QLabel;

namespace plab {

class RecipeEditor : public QWidget {
    Q_OBJECT
public:
    explicit RecipeEditor(QWidget* parent = nullptr);

    void setRecipe(const PrecisionRecipe& recipe); // shows it; emits nothing
    const PrecisionRecipe& recipe() const { return m_recipe; }
    QComboBox* formatBox(TensorRole role) const {
        return m_rows[static_cast<std::size_t>(role)].format;
    }
    QString lastError() const;
    // Where the recipe departs from the rows above for some layers (a preset's first and last
    // layers, a GPT's head or norms): one line each; empty when it does not.
    QString exceptionsText() const;
    // The style a format box shows: empty, or the red border of a refused entry.
    QString formatBoxStyle(TensorRole role) const;

signals:
    void recipeChanged(const PrecisionRecipe& recipe);

private:
    struct Row {
        QComboBox* format;
        QComboBox* rounding;
        QComboBox* overflow;
    };
    void onEdited(TensorRole role);

    std::array<Row, kRoleCount> m_rows;
    PrecisionRecipe m_recipe;
    QLabel* m_error;
    QLabel* m_exceptions;
    bool m_loading = false;
};

// "range 2^-24 .. 65504, 10 mantissa bits (epsilon 2^-10)" for tooltips.
QString formatSummary(const FormatSpec& format);

} // namespace plab
