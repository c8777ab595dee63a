// RunLog file writers.
#include "train/run_log.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace plab {
namespace {

std::string number(double v) {
    if (std::isnan(v))
        return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

} // namespace

std::ofstream RunLog::open(const std::string& name) {
    std::ofstream f(m_dir + "/" + name, std::ios::trunc);
    if (!f)
        throw std::runtime_error(m_dir + "/" + name + ": cannot write");
    return f;
}

RunLog::RunLog(const std::string& dir, const TrainConfig& config,
               const std::vector<std::string>& stageNames)
    : m_dir(dir), m_stageNames(stageNames) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(dir + ": cannot create the run directory (" + ec.message() + ")");
    {
        std::ofstream cfg = open("config.json");
        cfg << config.toJson().dump(2) << "\n";
    }
    for (int s = 0; s < static_cast<int>(stageNames.size()); ++s)
        for (TensorRole r : kAllRoles)
            m_roleFormats.push_back(
                config.recipe.config(s, static_cast<int>(stageNames.size()), r).format.name);
    m_metrics = open("metrics.csv");
    m_metrics << "step,epoch,loss,accuracy,scale,skipped,samples_per_s,lr,test_loss,test_accuracy\n"
              << std::flush;
    m_layers = open("layers.csv");
    m_layers << "step,stage,stage_name,role,format,total,zero,underflow,subnormal,normal,overflow,"
                "nan,amax,flushed_fraction,updates,lost_updates,grad_scale,tensor_scale,mx_blocks,"
                "mx_saturated_blocks\n"
             << std::flush;
    m_histograms = open("histograms.csv");
    m_histograms << "step,stage,role,bin,count\n" << std::flush;
    m_events = open("events.jsonl");
    writeSummary(RunSummary{false, "running", 0, 0, 0, 0, 0, 0, 0});
}

void RunLog::logStep(const StepScalars& s) {
    m_metrics << s.step << ',' << s.epoch << ',' << number(s.loss) << ',' << number(s.accuracy)
              << ',' << number(s.scale) << ',' << (s.skipped ? 1 : 0) << ','
              << number(s.samplesPerSecond) << ',' << number(s.learningRate) << ','
              << number(s.testLoss) << ',' << number(s.testAccuracy) << '\n'
              << std::flush;
}

void RunLog::logStats(std::int64_t step, const std::vector<StageStats>& stages) {
    for (std::size_t s = 0; s < stages.size(); ++s) {
        for (TensorRole role : kAllRoles) {
            const auto r = static_cast<std::size_t>(role);
            const QuantStats& q = stages[s].roles[r];
            const bool master = role == TensorRole::MasterWeights;
            m_layers << step << ',' << s << ',' << m_stageNames[s] << ',' << toString(role) << ','
                     << m_roleFormats[s * kRoleCount + r] << ',' << q.total();
            for (std::size_t c = 0; c < kQuantClassCount; ++c)
                m_layers << ',' << q.counts[c];
            m_layers << ',' << number(q.amax) << ',' << number(q.fraction(QuantClass::Underflow))
                     << ',' << (master ? stages[s].updates : 0) << ','
                     << (master ? stages[s].lostUpdates : 0) << ','
                     << number(stages[s].gradientScale) << ',' << number(stages[s].tensorScale[r])
                     << ',' << stages[s].mxBlocks[r] << ',' << stages[s].mxSaturatedBlocks[r]
                     << '\n';
            for (int b = 0; b < kHistBinCount; ++b)
                if (const std::uint64_t n = q.histogram[static_cast<std::size_t>(b)])
                    m_histograms << step << ',' << s << ',' << toString(role) << ',' << b << ','
                                 << n << '\n';
        }
    }
    m_layers.flush();
    m_histograms.flush();
}

void RunLog::logEvent(std::int64_t step, const std::string& type, const std::string& message) {
    nlohmann::json e = {{"step", step}, {"type", type}, {"message", message}};
    m_events << e.dump() << '\n' << std::flush;
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
    const std::string path = m_dir + "/summary.json";
    {
        std::ofstream f(path + ".tmp", std::ios::trunc);
        if (!f)
            throw std::runtime_error(path + ": cannot write");
        f << j.dump(2) << "\n";
    }
    std::filesystem::rename(path + ".tmp", path);
}

} // namespace plab
