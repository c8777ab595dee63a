// RunLog file writers.
#include "train/run_log.h"

#include <charconv>
#include <cmath>
#include <filesystem>

namespace plab {

std::string recordNumber(double v) {
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v > 0 ? "inf" : "-inf";
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, ec == std::errc() ? end : buf);
}

namespace {

// The files of a run's record; one of them in a folder means an earlier run wrote there.
constexpr const char* kRecordFiles[] = {"config.json", "summary.json",   "metrics.csv",
                                        "layers.csv",  "histograms.csv", "events.jsonl"};

void refuseEarlierRun(const std::string& dir) {
    for (const char* name : kRecordFiles)
        if (std::filesystem::exists(std::filesystem::path(dir) / name))
            throw RecordError(dir + ": holds an earlier run (" + name +
                              "); pass --overwrite to replace it, or choose another --out");
}

} // namespace

RunLog::RunLog(const std::string& dir, const TrainConfig& config,
               const std::vector<std::string>& stageNames, const RunLogOptions& options)
    : m_dir(dir), m_lock(std::make_unique<RunDirectoryLock>(dir)), m_stageNames(stageNames) {
    if (!options.overwrite)
        refuseEarlierRun(dir);
    else // a stale summary must not describe this run while it starts
        std::filesystem::remove(std::filesystem::path(dir) / "summary.json");
    writeFileAtomically(dir + "/config.json", config.toJson().dump(2) + "\n");
    setRecipe(config);
    m_histogramsEvery = config.histogramsEvery;
    m_metrics = RowFile(dir + "/metrics.csv");
    m_metrics.append(
        "step,epoch,loss,accuracy,scale,skipped,samples_per_s,lr,test_loss,test_accuracy\n");
    m_layers = RowFile(dir + "/layers.csv");
    m_layers.append(
        "step,stage,stage_name,role,format,total,zero,underflow,subnormal,normal,overflow,"
        "nan,amax,flushed_fraction,updates,lost_updates,grad_scale,tensor_scale,mx_blocks,"
        "mx_saturated_blocks\n");
    m_histograms = RowFile(dir + "/histograms.csv");
    m_histograms.append("step,stage,role,bin,count\n");
    m_events = RowFile(dir + "/events.jsonl");
    writeSummary(RunSummary{false, "running", 0, 0, 0, 0, 0, 0, 0});
}

void RunLog::setRecipe(const TrainConfig& config) {
    const int stages = static_cast<int>(m_stageNames.size());
    m_roleFormats.clear();
    for (int s = 0; s < stages; ++s)
        for (TensorRole r : kAllRoles)
            m_roleFormats.push_back(config.recipe.config(s, stages, r).format.name);
}

void RunLog::logStep(const StepScalars& s) {
    std::string row = std::to_string(s.step) + ',' + std::to_string(s.epoch) + ',' +
                      recordNumber(s.loss) + ',' + recordNumber(s.accuracy) + ',' +
                      recordNumber(s.scale) + ',' + (s.skipped ? "1" : "0") + ',' +
                      recordNumber(s.samplesPerSecond) + ',' + recordNumber(s.learningRate) + ',';
    if (s.evaluated) // an empty cell: not evaluated after this step
        row += recordNumber(s.testLoss) + ',' + recordNumber(s.testAccuracy);
    else
        row += ',';
    m_metrics.append(row + '\n');
}

void RunLog::logStats(std::int64_t step, const std::vector<StageStats>& stages) {
    // The first statistics step's histograms, then every histograms_every-th.
    const bool withHistograms = m_statsSteps++ % m_histogramsEvery == 0;
    std::string layers, histograms;
    const std::string stepText = std::to_string(step);
    for (std::size_t s = 0; s < stages.size(); ++s) {
        for (TensorRole role : kAllRoles) {
            const auto r = static_cast<std::size_t>(role);
            const QuantStats& q = stages[s].roles[r];
            const bool master = role == TensorRole::MasterWeights;
            layers += stepText + ',' + std::to_string(s) + ',' + m_stageNames[s] + ',' +
                      std::string(toString(role)) + ',' + m_roleFormats[s * kRoleCount + r] + ',' +
                      std::to_string(q.total());
            for (std::size_t c = 0; c < kQuantClassCount; ++c)
                layers += ',' + std::to_string(q.counts[c]);
            layers += ',' + recordNumber(q.amax) + ',' + recordNumber(q.flushedShare()) + ',' +
                      std::to_string(master ? stages[s].updates : 0) + ',' +
                      std::to_string(master ? stages[s].lostUpdates : 0) + ',' +
                      recordNumber(stages[s].gradientScale) + ',' +
                      recordNumber(stages[s].tensorScale[r]) + ',' +
                      std::to_string(stages[s].mxBlocks[r]) + ',' +
                      std::to_string(stages[s].mxSaturatedBlocks[r]) + '\n';
            const std::string prefix =
                stepText + ',' + std::to_string(s) + ',' + std::string(toString(role)) + ',';
            for (int b = 0; withHistograms && b < kHistBinCount; ++b)
                if (const std::uint64_t n = q.histogram[static_cast<std::size_t>(b)])
                    histograms += prefix + std::to_string(b) + ',' + std::to_string(n) + '\n';
        }
    }
    // histograms.csv first: a step's layers.csv rows mean its histogram rows are there.
    m_histograms.append(histograms);
    m_layers.append(layers);
}

void RunLog::logEvent(std::int64_t step, const std::string& type, const std::string& message) {
    const nlohmann::json e = {{"step", step}, {"type", type}, {"message", message}};
    m_events.append(e.dump() + '\n');
}

void RunLog::writeSummary(const RunSummary& s) {
    nlohmann::json j = {{"finished", s.finished},
                        {"stop_reason", s.stopReason},
                        {"steps", s.steps},
                        {"skipped_steps", s.skippedSteps},
                        {"final_train_loss", s.finalTrainLoss},
                        {"test_loss", s.testLoss},
                        {"test_accuracy", s.testAccuracy},
                        {"wall_seconds", s.wallSeconds},
                        {"samples_per_second", s.samplesPerSecond}};
    // JSON has no NaN: nlohmann writes null for it, which a reader must take as "not a number".
    writeFileAtomically(m_dir + "/summary.json", j.dump(2) + "\n");
}

} // namespace plab
