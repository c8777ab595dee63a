// FormatWhatIfTable: "what would this tensor look like in another format", for the tensor the
// gradient view shows: every element and block format side by side (flushed, subnormal,
// overflow, SQNR) on the sample the last statistics step kept of it (stats/tensor_sample.h),
// computed at once (stats/what_if_formats.h), without retraining. The format in use is bold,
// with the step's exact counts over the whole tensor (the shares line's numbers).
#pragma once

#include "stats/training_snapshot.h"
#include "stats/what_if_formats.h"
#include "train/train_config.h"

#include <QWidget>

class QLabel;
class QTableWidget;

namespace plab {

class FormatWhatIfTable : public QWidget {
    Q_OBJECT
public:
    explicit FormatWhatIfTable(QWidget* parent = nullptr);

    void show(const TrainingSnapshot& snapshot, const TrainConfig& config, int stage,
              TensorRole role);
    // A watched run's tensor: the formats it was judged in, from the counts the record holds
    // for the whole tensor at `step` (RunRecord::tensorRows); `current` in bold.
    void showRecorded(const std::vector<FormatOutcome>& judged, const std::string& stageName,
                      TensorRole role, std::int64_t step, const std::string& current);
    QTableWidget* table() const { return m_table; }
    QString caption() const;

private:
    void fillRows(const std::vector<FormatOutcome>& outcomes, const std::string& current);
    QLabel* m_caption;
    QTableWidget* m_table;
    // What the table was computed from: recomputed only when it changes.
    std::int64_t m_step = -1;
    int m_stage = -1;
    int m_role = -1;
    std::string m_current;
    int m_margin = 0; // the run's amax margin the rows were computed with
};

} // namespace plab
