// RecipeEditor rows: one per tensor role.
#include "recipe_editor.h"

#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>

#include <algorithm>
#include <cmath>

namespace plab {

QString formatSummary(const FormatSpec& f) {
    return QObject::tr("%1: values from 2^%2 to %3 (min normal 2^%4), %5 mantissa bits "
                       "(epsilon 2^-%5), %6 finite values")
        .arg(QString::fromStdString(f.name))
        .arg(std::log2(f.minPositive()))
        .arg(f.maxFinite(), 0, 'g', 6)
        .arg(std::log2(f.minNormal()))
        .arg(f.mantissaBits)
        .arg(static_cast<qulonglong>(f.finiteValueCount()));
}

RecipeEditor::RecipeEditor(QWidget* parent) : QWidget(parent) {
    auto* grid = new QGridLayout(this);
    grid->addWidget(new QLabel(tr("<b>Layer</b>"), this), 0, 0);
    m_layer = new QComboBox(this);
    m_layer->addItem(tr("all layers"));
    m_layer->setToolTip(tr("All layers: the recipe's rows. One layer: its own formats (an "
                           "exception to the rows, as a preset's first and last layers are)"));
    grid->addWidget(m_layer, 0, 1, 1, 3);
    connect(m_layer, &QComboBox::currentIndexChanged, this, [this] { showRows(); });
    grid->addWidget(new QLabel(tr("<b>Tensor</b>"), this), 1, 0);
    grid->addWidget(new QLabel(tr("<b>Format</b>"), this), 1, 1);
    grid->addWidget(new QLabel(tr("<b>Rounding</b>"), this), 1, 2);
    grid->addWidget(new QLabel(tr("<b>Overflow</b>"), this), 1, 3);
    const char* tips[] = {
        "Weights as the forward pass reads them (rounded from the master copy each step)",
        "Each layer's output as the next layer reads it",
        "The loss-scaled gradient arriving at each layer from above",
        "Loss-scaled weight gradients",
        "The copy of the weights the optimiser updates: new = round(master - update)",
        "Momentum / Adam moments"};
    int row = 2;
    for (TensorRole role : kAllRoles) {
        const auto r = static_cast<std::size_t>(role);
        auto* label = new QLabel(
            QString::fromLatin1(toString(role).data()).replace(QLatin1Char('_'), QLatin1Char(' ')),
            this);
        label->setToolTip(tr(tips[r]));
        Row& w = m_rows[r];
        w.format = new QComboBox(this);
        w.format->setEditable(true);
        w.format->setInsertPolicy(QComboBox::NoInsert);
        for (const FormatSpec& f : namedFormats()) {
            w.format->addItem(QString::fromStdString(f.name));
            w.format->setItemData(w.format->count() - 1, formatSummary(f), Qt::ToolTipRole);
        }
        w.format->setToolTip(
            tr("A named format or a custom eXmY[:bias=B][:nosub][:fn|:fnuz|:finite]"));
        w.rounding = new QComboBox(this);
        for (Rounding rr : kAllRoundings)
            w.rounding->addItem(QString::fromLatin1(toString(rr).data()));
        w.rounding->setToolTip(tr("Stochastic rounding rounds up with probability equal to the "
                                  "dropped fraction: unbiased, reproducible from the seed"));
        w.overflow = new QComboBox(this);
        w.overflow->addItem(QStringLiteral("saturate"));
        w.overflow->addItem(QStringLiteral("inf"));
        m_overflowTip = tr("saturate: past the largest value becomes +-max; inf: Inf where the "
                           "format has it, NaN where it has only NaN");
        w.overflow->setToolTip(m_overflowTip);
        grid->addWidget(label, row, 0);
        grid->addWidget(w.format, row, 1);
        grid->addWidget(w.rounding, row, 2);
        grid->addWidget(w.overflow, row, 3);
        ++row;
        connect(w.format->lineEdit(), &QLineEdit::editingFinished, this,
                [this, role] { onEdited(role); });
        connect(w.format, &QComboBox::activated, this, [this, role] { onEdited(role); });
        connect(w.rounding, &QComboBox::activated, this, [this, role] { onEdited(role); });
        connect(w.overflow, &QComboBox::activated, this, [this, role] { onEdited(role); });
    }
    auto* scalingLabel = new QLabel(tr("scaling"), this);
    scalingLabel->setToolTip(tr("How this layer's weights, activations and activation gradients "
                                "are scaled before their cast: the run's (the policy box), or "
                                "its own per-tensor or per-block scaling, as Transformer "
                                "Engine's nested recipes give a layer"));
    m_scaling = new QComboBox(this);
    m_scaling->addItem(tr("the run's"));
    for (const ScalingPolicyInfo& p : kScalingPolicies)
        if (isTensorScalingPolicy(p.policy)) {
            m_scaling->addItem(QString::fromLatin1(p.name), static_cast<int>(p.policy));
            m_scaling->setItemData(m_scaling->count() - 1, tr(p.description), Qt::ToolTipRole);
        }
    m_scaling->setToolTip(scalingLabel->toolTip());
    grid->addWidget(scalingLabel, row, 0);
    grid->addWidget(m_scaling, row, 1, 1, 3);
    ++row;
    connect(m_scaling, &QComboBox::activated, this, [this] { onScalingEdited(); });
    m_error = new QLabel(this);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #c03030"));
    grid->addWidget(m_error, row, 0, 1, 4);
    m_exceptions = new QLabel(this);
    m_exceptions->setWordWrap(true);
    m_exceptions->setToolTip(tr("Per-layer exceptions of this recipe (its stage and kind "
                                "overrides): these layers use these formats instead of the rows "
                                "above. The gradient view shows each layer's own."));
    grid->addWidget(m_exceptions, row + 1, 0, 1, 4);
    m_recordNote = new QLabel(this);
    m_recordNote->setWordWrap(true);
    m_recordNote->hide();
    grid->addWidget(m_recordNote, row + 2, 0, 1, 4);
    grid->setRowStretch(row + 3, 1);
    for (int i = 0; i < grid->count(); ++i)
        if (QWidget* w = grid->itemAt(i)->widget(); w != m_recordNote)
            m_recipeWidgets.push_back(w);
}

void RecipeEditor::showRecordOnly(const QString& note) {
    for (QWidget* w : m_recipeWidgets)
        w->setVisible(note.isEmpty());
    m_recordNote->setText(note);
    m_recordNote->setVisible(!note.isEmpty());
}

QString RecipeEditor::recordOnlyNote() const {
    return m_recordNote->isVisible() ? m_recordNote->text() : QString();
}

namespace {

// A role's or rounding's name as words ("activation gradients"); module names keep their
// underscores (issue 65 item 30: "mlp.c_fc" was shown as "mlp.c fc").
std::string spoken(std::string_view name) {
    std::string text(name);
    std::replace(text.begin(), text.end(), '_', ' ');
    return text;
}

// "fp16 (stochastic)" for a QuantConfig, as the rows show its parts.
std::string describe(const QuantConfig& q) {
    std::string text = q.format.name;
    if (q.rounding != Rounding::NearestEven)
        text += " (" + spoken(toString(q.rounding)) + ")";
    return text;
}

// "activations fp16, weights fp16" for the roles an override sets.
std::string describeRoles(const std::array<std::optional<QuantConfig>, kRoleCount>& roles) {
    std::string text;
    for (TensorRole role : kAllRoles)
        if (const auto& q = roles[static_cast<std::size_t>(role)])
            text += (text.empty() ? "" : ", ") + spoken(toString(role)) + " " + describe(*q);
    return text;
}

} // namespace

QString RecipeEditor::exceptionsText() const {
    std::string text;
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "\n" + string.
    const auto line = [&](const std::string& who, const std::string& what) {
        text += '\n';
        text += who;
        text += ": ";
        text += what;
    };
    for (const auto& [stage, roles] : m_recipe.stageOverrides)
        if (const std::string set = describeRoles(roles); !set.empty())
            line(describeStage(stage), set);
    for (const auto& [kind, roles] : m_recipe.kindOverrides)
        line(kind, describeRoles(roles));
    for (const auto& [stage, scaling] : m_recipe.stageScaling)
        line(describeStage(stage), "scaling " + std::string(toString(scaling.policy)));
    for (const auto& [kind, scaling] : m_recipe.kindScaling)
        line(kind, "scaling " + std::string(toString(scaling.policy)));
    if (m_recipe.accumulation)
        text += "\nproducts accumulate in " + m_recipe.accumulation->format.name;
    return text.empty() ? QString() : tr("Exceptions:%1").arg(QString::fromStdString(text));
}

std::string RecipeEditor::describeStage(int stage) const {
    const bool named = stage >= 0 && static_cast<std::size_t>(stage) < m_stageNames.size();
    return stage == -1  ? "last layer"
           : named      ? "layer " + m_stageNames[static_cast<std::size_t>(stage)]
           : stage == 0 ? "first layer"
                        : "layer " + std::to_string(stage + 1);
}

QString RecipeEditor::formatBoxStyle(TensorRole role) const {
    return m_rows[static_cast<std::size_t>(role)].format->styleSheet();
}

QString RecipeEditor::lastError() const {
    return m_error->text();
}

void RecipeEditor::setStageNames(const std::vector<std::string>& names) {
    if (names == m_stageNames)
        return;
    m_stageNames = names;
    const QSignalBlocker block(m_layer);
    m_layer->clear();
    m_layer->addItem(tr("all layers"));
    for (const std::string& name : names)
        m_layer->addItem(QString::fromStdString(name));
    showRows();
}

int RecipeEditor::shownStage() const {
    return m_layer->currentIndex() - 1;
}

const QuantConfig& RecipeEditor::shownConfig(TensorRole role) const {
    const int stage = shownStage();
    return stage < 0 ? m_recipe.roles[static_cast<std::size_t>(role)]
                     : m_recipe.stageConfig(stage, m_stageNames, role);
}

void RecipeEditor::setRecipe(const PrecisionRecipe& recipe, ScalingPolicy runScaling) {
    m_recipe = recipe;
    m_runScaling = runScaling;
    showRows();
}

void RecipeEditor::showRows() {
    m_loading = true;
    for (TensorRole role : kAllRoles) {
        const auto r = static_cast<std::size_t>(role);
        const QuantConfig& q = shownConfig(role);
        m_rows[r].format->setEditText(QString::fromStdString(q.format.name));
        m_rows[r].format->setToolTip(formatSummary(q.format));
        m_rows[r].rounding->setCurrentText(QString::fromLatin1(toString(q.rounding).data()));
        m_rows[r].format->setStyleSheet({}); // a refused entry's marker goes with it
    }
    const int stage = shownStage();
    const TensorScaling* own =
        stage < 0 ? nullptr : m_recipe.stageScalingOverride(stage, m_stageNames);
    // The overflow in effect: a product input cast under a per-tensor or per-block scale
    // saturates (the scale fills the range; a stale amax or a block's largest element clips),
    // whatever the recipe's setting, which the row then shows greyed (issue 65 item 21: the
    // dock said "inf" for fp8-hybrid's E5M2 gradients).
    const ScalingPolicy scaling = own != nullptr ? own->policy : m_runScaling;
    const bool scaled = isAmaxScaling(scaling) || isBlockScaling(scaling);
    for (TensorRole role : kAllRoles) {
        const auto r = static_cast<std::size_t>(role);
        const bool forced = scaled && isProductInput(role);
        m_rows[r].overflow->setCurrentText(QString::fromLatin1(
            toString(forced ? Overflow::Saturate : shownConfig(role).overflow).data()));
        m_rows[r].overflow->setEnabled(!forced);
        m_rows[r].overflow->setToolTip(
            forced ? tr("Saturates: under %1 scaling this tensor is scaled to fill the range, and "
                        "what passes its largest value clips (the recipe's setting, %2, applies "
                        "where it is not scaled)")
                         .arg(QString::fromLatin1(toString(scaling).data()),
                              QString::fromLatin1(toString(shownConfig(role).overflow).data()))
                   : m_overflowTip);
    }
    m_scaling->setEnabled(stage >= 0);
    m_scaling->setCurrentIndex(own ? m_scaling->findData(static_cast<int>(own->policy)) : 0);
    m_error->clear();
    m_exceptions->setText(exceptionsText());
    m_exceptions->setVisible(!m_exceptions->text().isEmpty());
    m_loading = false;
}

void RecipeEditor::onScalingEdited() {
    const int stage = shownStage();
    if (m_loading || stage < 0)
        return;
    const QVariant policy = m_scaling->currentData();
    const TensorScaling* before = m_recipe.stageScalingOverride(stage, m_stageNames);
    if (!policy.isValid()) { // the run's: this layer's own goes (kept under -1 for the last)
        std::size_t erased = m_recipe.stageScaling.erase(stage);
        if (stage + 1 == static_cast<int>(m_stageNames.size()))
            erased += m_recipe.stageScaling.erase(-1);
        if (erased == 0)
            return;
        showRows(); // a kind's scaling may still apply to it
    } else {
        TensorScaling own;
        own.policy = static_cast<ScalingPolicy>(policy.toInt());
        own.weightTiles =
            own.policy == ScalingPolicy::Nvfp4 || own.policy == ScalingPolicy::Blockwise;
        if (before != nullptr && before->policy == own.policy)
            return;
        m_recipe.stageScaling[stage] = own;
    }
    m_exceptions->setText(exceptionsText());
    m_exceptions->setVisible(!m_exceptions->text().isEmpty());
    emit recipeChanged(m_recipe);
}

void RecipeEditor::onEdited(TensorRole role) {
    if (m_loading)
        return;
    const auto r = static_cast<std::size_t>(role);
    const Row& w = m_rows[r];
    try {
        QuantConfig q;
        q.format = parseFormat(w.format->currentText().trimmed().toStdString());
        q.rounding = parseRounding(w.rounding->currentText().toStdString());
        // A greyed (scaled, saturating) overflow keeps the recipe's own setting.
        q.overflow = w.overflow->isEnabled()
                         ? parseOverflow(w.overflow->currentText().toStdString())
                         : shownConfig(role).overflow;
        // A valid entry clears a refused one's marker, also when it is the format in use.
        w.format->setStyleSheet({});
        m_error->clear();
        const QuantConfig& old = shownConfig(role);
        if (q.format.sameParameters(old.format) && q.rounding == old.rounding &&
            q.overflow == old.overflow)
            return;
        if (const int stage = shownStage(); stage >= 0)
            m_recipe.stageOverrides[stage][r] = q; // this layer's cell
        else
            m_recipe.roles[r] = q;
        m_exceptions->setText(exceptionsText());
        m_exceptions->setVisible(!m_exceptions->text().isEmpty());
        w.format->setToolTip(formatSummary(q.format));
        emit recipeChanged(m_recipe);
    } catch (const std::exception& e) {
        w.format->setStyleSheet(QStringLiteral("QComboBox { border: 1px solid #c03030; }"));
        m_error->setText(QString::fromUtf8(e.what()));
    }
}

} // namespace plab
