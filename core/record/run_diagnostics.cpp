// Diagnostic columns from the stats and diagnostics rows.
#include "record/run_diagnostics.h"

#include "record/run_record.h"
#include "stats/tensor_diagnostics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace plab {

std::string_view toString(DiagnosticQuantity q) {
    switch (q) {
    case DiagnosticQuantity::Log2Amax:
        return "log2 amax";
    case DiagnosticQuantity::Kurtosis:
        return "kurtosis";
    case DiagnosticQuantity::GradientNoiseRatio:
        return "signal / quantisation noise";
    case DiagnosticQuantity::BlockScaleSpread:
        return "block scale spread (std of log2)";
    case DiagnosticQuantity::ZeroScaleBlocks:
        return "blocks with a zero scale";
    }
    return "?";
}

bool dependsOnFormat(DiagnosticQuantity q) {
    return q != DiagnosticQuantity::Log2Amax && q != DiagnosticQuantity::Kurtosis;
}

std::vector<DiagnosticColumn> diagnosticColumns(const RunRecord& record, DiagnosticQuantity q,
                                                TensorRole role, const std::string& format) {
    const std::size_t stages = record.stageNames().size();
    std::map<std::int64_t, std::vector<double>> byStep;
    auto cell = [&](std::int64_t step, std::size_t stage) -> double& {
        auto [it, added] = byStep.try_emplace(step);
        if (added)
            it->second.assign(stages, std::numeric_limits<double>::quiet_NaN());
        return it->second[stage];
    };
    if (q == DiagnosticQuantity::Log2Amax || q == DiagnosticQuantity::GradientNoiseRatio) {
        for (const StatsRow& r : record.statsRows(format, role)) {
            if (q == DiagnosticQuantity::Log2Amax)
                // A gradient's amax is recorded at the scale it carried (the loss scale, a
                // layer's own): divided out, so that moving the loss scale does not move the map.
                cell(r.step, r.stage) =
                    r.amax > 0.0f ? std::log2(static_cast<double>(r.amax)) -
                                        (r.gradientScale > 0.0 && std::isfinite(r.gradientScale)
                                             ? std::log2(r.gradientScale)
                                             : 0.0)
                                  : -std::numeric_limits<double>::infinity();
            else if (r.error.measured())
                cell(r.step, r.stage) = signalToNoiseRatio(r.error);
        }
    } else {
        // The kurtosis rows name no format; the block rows their block format.
        std::string blockFormat = format;
        if (blockFormat.empty() && record.judgesSeveralFormats())
            blockFormat = record.judgedFormats().front();
        for (const DiagnosticsRow& r : record.diagnosticsRows()) {
            if (r.role != role)
                continue;
            if (q == DiagnosticQuantity::Kurtosis && r.format.empty())
                cell(r.step, r.stage) = r.kurtosis;
            else if (q == DiagnosticQuantity::BlockScaleSpread && r.format == blockFormat)
                cell(r.step, r.stage) = r.scaleLog2StdDev;
            else if (q == DiagnosticQuantity::ZeroScaleBlocks && r.format == blockFormat)
                cell(r.step, r.stage) = static_cast<double>(r.zeroScaleBlocks);
        }
    }
    std::vector<DiagnosticColumn> out;
    out.reserve(byStep.size());
    for (auto& [step, values] : byStep)
        out.push_back({step, std::move(values)});
    return out;
}

} // namespace plab

namespace plab {

std::string diagnosticAbsence(const RunRecord& record, DiagnosticQuantity q, TensorRole role,
                              const std::string& format) {
    if (record.steps().empty())
        return "no statistics yet: the run has not recorded its first statistics step";
    const std::string roleName = [&] {
        std::string words(toString(role));
        std::replace(words.begin(), words.end(), '_', ' ');
        return words;
    }();
    const nlohmann::json source = record.meta("source");
    const bool watched = source == "pytorch-watch";
    if (record.statsRows(format, role).empty())
        return "this run records no statistics of " + roleName +
               (watched ? " (the watcher was given roles without it, or the module's input "
                          "is not recorded)"
                        : "");
    switch (q) {
    case DiagnosticQuantity::Log2Amax:
        break;
    case DiagnosticQuantity::GradientNoiseRatio:
        return "the casts of " + roleName + " measured no error" +
               (format.empty() ? "" : " in " + format) + " (an exact format such as FP32)";
    case DiagnosticQuantity::Kurtosis:
        if (!watched)
            return "the kurtosis is recorded by watched runs only, whose tensors are captured "
                   "whole (a trained or emulated run counts its casts as it goes)";
        if (role != TensorRole::Activations)
            return "the watcher records the kurtosis of activations only (on every role it "
                   "would cost the counting thread a sixth more)";
        break;
    case DiagnosticQuantity::BlockScaleSpread:
    case DiagnosticQuantity::ZeroScaleBlocks:
        if (!watched)
            return "block-scale diagnostics are recorded by watched runs only";
        return "the watched run judged " + roleName + " in no block format" +
               (format.empty() ? "" : " named " + format) +
               " (choose a block format or a block-scaled recipe in the Format box)";
    }
    return "this run records no " + std::string(toString(q)) + " of " + roleName;
}

} // namespace plab
