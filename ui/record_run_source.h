// RecordRunSource: a run record as a RunSource: a past run, or one another process still writes
// (a CLI train, a sweep's member, a watched or an emulated PyTorch run), followed by polling its
// data version. A watched run judged every tensor in several formats: one of them is on show
// (setJudgedFormat). The step on show is the newest with histograms unless another is chosen
// (showStep: the window's scrub slider).
#pragma once

#include "record/run_record.h"
#include "record/run_summary.h"
#include "run_source.h"
#include "run_steering.h"
#include "train/train_config.h"

#include <memory>
#include <optional>

namespace plab {

class RecordRunSource final : public RunSource {
public:
    // Opens the record and reads what showing it needs (its config, or for an emulated run the
    // recipe its script resolved to). Throws std::exception naming `dir` and what is missing.
    explicit RecordRunSource(const QString& dir);

    static constexpr int kFollowMs = 200;
    int pollIntervalMs() const override { return kFollowMs; }
    bool poll() override;
    QString folder() const override { return m_dir; }
    std::vector<std::string> stageNames() const override { return m_names; }
    const std::vector<StepScalars>& history() const override { return m_shownHistory; }
    const std::vector<FlushColumn>& flushColumns() const override { return m_columns; }
    const TrainingSnapshot* snapshot() const override { return &m_snapshot; }
    ShownPrecision precision() const override { return precisionAt(m_snapshot.statsStep); }
    const FormatComparison& compareFormats(int stage, TensorRole role) override;

    // Commands to an emulated run's script, through its record (RunSteering); any other record
    // (watched, ended, a copy, another process's trainer) takes none and says why.
    std::string whyNot() const override;
    std::string setLossScale(double scale) override;
    std::string setScalingPolicy(ScalingPolicy policy, double scale) override;
    std::string setRecipe(const PrecisionRecipe& recipe) override;
    std::string toggleRunning() override;
    std::string stepOnce() override;
    bool remote() const override { return true; }

    // Reads the record again (its steps, heat-map columns, histogram steps, summary and the
    // steering replies since the last read). Throws std::exception naming the run.
    void refresh();
    // Shows the statistics of `step` (one of histogramSteps()); a step the record lacks shows an
    // empty snapshot. Throws std::exception naming the run.
    void showStep(std::int64_t step);
    void showNoStep(); // the record has no histograms (yet): an empty snapshot

    const RunRecord& record() const { return *m_record; }
    RunSteering& steering() { return m_steering; }
    const RunSteering& steering() const { return m_steering; }
    // A watched PyTorch run: judged in several formats, no recipe; an emulated one: the recipe
    // its script ran. Neither has settings the app could train.
    bool watched() const { return m_record->judgesSeveralFormats(); }
    bool emulated() const { return m_emulated; }
    // The formats a watched run was judged in, and the one on show ("" for other runs).
    std::vector<std::string> judgedFormats() const { return m_record->judgedFormats(); }
    const std::string& judgedFormat() const { return m_judged; }
    // Another judged format on show: everything is read again in it.
    void setJudgedFormat(const std::string& format);
    // The config the run started from (its timeline included), and with its edits up to `step`;
    // a watched run's is the default config (it has none).
    const TrainConfig& config() const { return m_config; }
    void setConfig(const TrainConfig& config) { m_config = config; } // a steered script's edits
    TrainConfig configAt(std::int64_t step) const;
    ShownPrecision precisionAt(std::int64_t step) const;

    bool live() const { return m_live; }
    const std::vector<StepScalars>& steps() const { return m_history; }
    const std::vector<std::int64_t>& histogramSteps() const { return m_histogramSteps; }
    const RunSummary& summary() const { return m_summary; }
    // The roles the record holds (until its first statistics step, those its kind of run
    // records), and the steering events the last refresh read.
    const std::vector<TensorRole>& roles() const { return m_roles; }
    const std::vector<RecordedEvent>& replies() const { return m_replies; }

private:
    QString m_dir;
    std::unique_ptr<RunRecord> m_record;
    RunSteering m_steering;
    bool m_emulated = false;
    std::string m_judged;
    TrainConfig m_config;
    std::vector<std::string> m_names;
    std::int64_t m_version = -1; // the record's data_version at the last refresh
    bool m_live = false;
    std::vector<StepScalars> m_history;
    std::vector<StepScalars> m_shownHistory; // as the time view draws it, made at each read
    // The heat map's columns, and the last stats row they were read up to: a refresh reads only
    // the rows committed since.
    std::vector<FlushColumn> m_columns;
    std::int64_t m_statsSeq = 0;
    std::vector<std::int64_t> m_histogramSteps;
    RunSummary m_summary;
    std::vector<TensorRole> m_roles;
    bool m_rolesKnown = false; // read from its first statistics step
    std::vector<RecordedEvent> m_replies;
    TrainingSnapshot m_snapshot;
    SampledFormatComparer m_sampled;
    FormatComparison m_judgedComparison; // a watched run's, read from the record
};

} // namespace plab
