// AdvisePanel: criteria in, the advisor's table out, Apply and Export.
#include "advise_panel.h"

#include "advise/advice_exports.h"
#include "record/record_file.h"
#include "record/run_record.h"

#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace plab {
namespace {

QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->verticalHeader()->hide();
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

void setRow(QTableWidget* t, int row, const QStringList& cells) {
    for (int c = 0; c < cells.size(); ++c) {
        auto* item = new QTableWidgetItem(cells[c]);
        item->setToolTip(cells[c]);
        t->setItem(row, c, item);
    }
}

} // namespace

AdvisePanel::AdvisePanel(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Advise: which format can each layer take?"));
    const AdviceCriteria defaults;
    m_ladder = new QLineEdit(this);
    m_ladder->setPlaceholderText(tr("the run's formats, narrowest first"));
    m_ladder->setToolTip(tr("Formats and framework recipes to try, narrowest first; empty: "
                            "those of the run among %1, else every format it recorded, then "
                            "fp32. Filled in from the run once advised.")
                             .arg(QString::fromStdString([] {
                                 std::string text;
                                 for (const std::string& f : kDefaultLadder)
                                     text += (text.empty() ? "" : ",") + f;
                                 return text;
                             }())));
    auto percentBox = [this](double value, const QString& tip) {
        auto* box = new QDoubleSpinBox(this);
        box->setRange(0.0, 100.0);
        box->setDecimals(3);
        box->setSuffix(QStringLiteral(" %"));
        box->setValue(value * 100.0);
        box->setToolTip(tip);
        return box;
    };
    m_maxFlushed = percentBox(defaults.maxFlushed, tr("Largest share of nonzero values flushed "
                                                      "to zero at any step"));
    m_maxOverflow = percentBox(defaults.maxOverflow, tr("Largest share of nonzero values past "
                                                        "the format's max at any step"));
    m_minSqnr = new QDoubleSpinBox(this);
    m_minSqnr->setRange(-50.0, 200.0);
    m_minSqnr->setSuffix(QStringLiteral(" dB"));
    m_minSqnr->setValue(defaults.minSqnrDb);
    m_minSqnr->setToolTip(tr("Smallest signal-to-quantisation-noise ratio at any step"));
    m_margin = new QDoubleSpinBox(this);
    m_margin->setRange(1.0, 100.0);
    m_margin->setDecimals(0);
    m_margin->setSuffix(QStringLiteral(" %"));
    m_margin->setValue(defaults.margin * 100.0);
    m_margin->setToolTip(tr("Advise only where the worst step is within this share of each "
                            "limit (the SQNR floor raised to match), so that a run under the "
                            "advice still meets them; 100%: at the limits"));
    m_steps = new QLineEdit(QStringLiteral("last:200"), this);
    m_steps->setToolTip(tr("The steps judged: all, last:N or A:B"));
    auto* form = new QFormLayout;
    form->addRow(tr("Ladder"), m_ladder);
    form->addRow(tr("Max flushed"), m_maxFlushed);
    form->addRow(tr("Max overflow"), m_maxOverflow);
    form->addRow(tr("Min SQNR"), m_minSqnr);
    form->addRow(tr("Margin"), m_margin);
    form->addRow(tr("Steps"), m_steps);
    auto* again = new QPushButton(tr("Advise"), this);
    connect(again, &QPushButton::clicked, this, [this] {
        if (const QString error = advise(m_runDir, m_apply->isEnabled(), m_apply->toolTip());
            !error.isEmpty())
            m_status->setText(error);
    });
    m_roles = makeTable({tr("module"), tr("role"), tr("format"), tr("what decided it")}, this);
    m_products = makeTable({tr("module"), tr("product"), tr("format"), tr("why")}, this);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_apply = new QPushButton(tr("Apply as recipe"), this);
    connect(m_apply, &QPushButton::clicked, this, [this] {
        QString error;
        const nlohmann::json document = recipeDocument(&error);
        if (!error.isEmpty()) {
            m_status->setText(error);
            return;
        }
        emit applyRequested(document);
    });
    m_export = new QPushButton(tr("Export…"), this);
    auto* menu = new QMenu(m_export);
    menu->addAction(tr("Recipe (JSON)…"), this, [this] { exportAs(QStringLiteral("recipe")); });
    menu->addAction(tr("Transformer Engine debug YAML…"), this,
                    [this] { exportAs(QStringLiteral("te-yaml")); });
    menu->addAction(tr("Transformer Engine debug YAML, TE 2.4 to 2.12…"), this,
                    [this] { exportAs(QStringLiteral("te-yaml-fp8")); });
    menu->addAction(tr("Megatron-LM precision config…"), this,
                    [this] { exportAs(QStringLiteral("megatron")); });
    menu->addAction(tr("torchao script…"), this, [this] { exportAs(QStringLiteral("torchao")); });
    m_export->setMenu(menu);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(again);
    buttons->addStretch();
    buttons->addWidget(m_apply);
    buttons->addWidget(m_export);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_roles, 3);
    layout->addWidget(m_products, 2);
    layout->addWidget(m_status);
    layout->addLayout(buttons);
    resize(900, 600);
}

void AdvisePanel::forget() {
    m_runDir.clear();
    m_advice.reset();
    m_ladder->clear();
    fillTables();
    setWindowTitle(tr("Advise: which format can each layer take?"));
    m_status->setText(tr("The window shows another run: Tools > Advise advises it"));
}

QString AdvisePanel::advise(const QString& runDir, bool canApply, const QString& whyNotApply) {
    if (runDir != m_runDir)
        m_ladder->clear(); // another run: its own ladder, from what it recorded
    m_runDir = runDir;
    setWindowTitle(
        tr("Advise %1: which format can each layer take?").arg(QFileInfo(runDir).fileName()));
    m_apply->setEnabled(canApply);
    m_apply->setToolTip(canApply ? tr("Start a run under the advice") : whyNotApply);
    AdviceCriteria c;
    c.ladder.clear();
    for (const QString& f : m_ladder->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        c.ladder.push_back(f.trimmed().toStdString());
    c.maxFlushed = m_maxFlushed->value() / 100.0;
    c.maxOverflow = m_maxOverflow->value() / 100.0;
    c.minSqnrDb = m_minSqnr->value();
    c.margin = m_margin->value() / 100.0;
    try {
        parseStepWindow(m_steps->text().trimmed().toStdString(), c);
        m_advice = adviseRun(RunRecord(runDir.toStdString()), c);
    } catch (const std::exception& e) {
        m_advice.reset();
        fillTables();
        m_status->setText(QString::fromUtf8(e.what()));
        return QString::fromUtf8(e.what());
    }
    QStringList ladder;
    for (const std::string& f : m_advice->criteria.ladder)
        ladder << QString::fromStdString(f);
    m_ladder->setText(ladder.join(QLatin1Char(','))); // the ladder it was advised on
    fillTables();
    emit advised();
    m_status->setText(tr("%1: statistics steps %2 to %3 (%4 steps)")
                          .arg(runDir)
                          .arg(m_advice->firstStep)
                          .arg(m_advice->lastStep)
                          .arg(m_advice->statisticsSteps));
    return {};
}

void AdvisePanel::fillTables() {
    m_roles->setRowCount(0);
    m_products->setRowCount(0);
    m_export->setEnabled(m_advice.has_value());
    if (!m_advice) {
        m_apply->setEnabled(false);
        return;
    }
    m_roles->setRowCount(static_cast<int>(m_advice->roles.size()));
    for (std::size_t i = 0; i < m_advice->roles.size(); ++i) {
        const RoleAdvice& r = m_advice->roles[i];
        setRow(m_roles, static_cast<int>(i),
               {QString::fromStdString(r.module), QString::fromUtf8(toString(r.role).data()),
                r.chosen.empty() ? tr("none") : QString::fromStdString(r.chosen),
                QString::fromStdString(r.summary)});
    }
    m_products->setRowCount(static_cast<int>(m_advice->gemms.size()));
    for (std::size_t i = 0; i < m_advice->gemms.size(); ++i) {
        const GemmAdvice& g = m_advice->gemms[i];
        setRow(m_products, static_cast<int>(i),
               {QString::fromStdString(g.module), QString::fromStdString(g.gemm),
                QString::fromStdString(g.format), QString::fromStdString(g.reason)});
    }
    m_roles->resizeColumnsToContents();
    m_products->resizeColumnsToContents();
}

nlohmann::json AdvisePanel::recipeDocument(QString* error) const {
    if (!m_advice) {
        *error = tr("Nothing advised yet");
        return nullptr;
    }
    try {
        return adviceRecipe(*m_advice);
    } catch (const std::exception& e) {
        *error = QString::fromUtf8(e.what());
        return nullptr;
    }
}

QString AdvisePanel::exportTo(const QString& path, const QString& kind) const {
    if (!m_advice)
        return tr("Nothing advised yet");
    try {
        writeFileAtomically(path.toStdString(), adviceExport(*m_advice, kind.toStdString()));
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

void AdvisePanel::exportAs(const QString& kind) {
    const QString suggested = kind == QLatin1String("recipe")     ? QStringLiteral("advice.json")
                              : kind == QLatin1String("torchao")  ? QStringLiteral("advice.py")
                              : kind == QLatin1String("megatron") ? QStringLiteral("precision.yaml")
                                                                  : QStringLiteral("advice.yaml");
    const QString path =
        m_pathPicker ? m_pathPicker(kind)
                     : QFileDialog::getSaveFileName(this, tr("Export the advice"), suggested);
    if (path.isEmpty())
        return;
    if (const QString error = exportTo(path, kind); !error.isEmpty()) {
        m_status->setText(error);
        if (!m_pathPicker)
            QMessageBox::warning(this, tr("Export failed"), error);
        return;
    }
    m_status->setText(tr("Wrote %1").arg(path));
}

} // namespace plab
