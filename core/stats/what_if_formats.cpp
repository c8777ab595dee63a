// Every format on one sample.
#include "stats/what_if_formats.h"

#include "numerics/amax_scaling.h"
#include "numerics/block_quantizer.h"
#include "numerics/quantizer.h"

#include <algorithm>

namespace plab {
namespace {

FormatOutcome outcome(std::string name, bool block, const QuantStats& stats,
                      std::span<const float> in, std::span<const float> out) {
    return recordedOutcome(std::move(name), block, stats.counts, measureError(in, out));
}

} // namespace

FormatOutcome recordedOutcome(std::string name, bool blockFormat, const ClassCounts& counts,
                              const QuantError& error) {
    QuantStats stats; // the shares by QuantStats' own definitions, as on a live run's rows
    stats.counts = counts;
    FormatOutcome o;
    o.name = std::move(name);
    o.blockFormat = blockFormat;
    o.values = stats.total();
    const std::uint64_t nonzero = o.values - stats.count(QuantClass::Zero);
    const auto ofNonzero = [&](QuantClass c) {
        return nonzero == 0 ? 0.0
                            : static_cast<double>(stats.count(c)) / static_cast<double>(nonzero);
    };
    o.flushed = stats.flushedShare();
    o.subnormal = ofNonzero(QuantClass::Subnormal);
    o.overflow = ofNonzero(QuantClass::Overflow);
    o.sqnrDb = error.sqnrDb();
    return o;
}

bool hasTensorScaledRow(const FormatSpec& format) {
    return format.hasNarrowRange(); // amaxScale is 1 for FP32's range (BF16)
}

std::string tensorScaledName(const std::string& format) {
    return format + ", tensor amax";
}

std::vector<FormatOutcome> compareFormats(std::span<const float> sample, std::size_t runLength,
                                          int amaxMargin, double tensorAmax) {
    std::vector<FormatOutcome> out;
    std::vector<float> cast(sample.size());
    const double amax = tensorAmax > 0.0 ? tensorAmax : amaxOf(sample);
    for (const char* name :
         {"fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "fp6-e3m2", "fp6-e2m3", "fp4-e2m1"}) {
        const FormatSpec format = parseFormat(name);
        QuantStats stats;
        Quantizer(QuantConfig::forFormat(format)).quantize(sample, cast, &stats);
        out.push_back(outcome(name, false, stats, sample, cast));
        if (!hasTensorScaledRow(format))
            continue;
        QuantConfig scaled = QuantConfig::forFormat(format);
        scaled.overflow = Overflow::Saturate; // as the amax policies cast
        QuantStats scaledStats;
        quantizeScaled(Quantizer(scaled), sample, cast, amaxScale(amax, format, amaxMargin),
                       &scaledStats, {});
        out.push_back(outcome(tensorScaledName(name), false, scaledStats, sample, cast));
        out.back().tensorScaled = true;
    }
    // Whole rows for the block layout; the rest (a partial row) as one more tensor.
    const std::size_t length = std::max<std::size_t>(1, runLength);
    const std::size_t rows = sample.size() / length, body = rows * length;
    std::vector<BlockInfo> blocks;
    for (const BlockFormat& f : blockFormats()) {
        const Quantizer element({f.element, Rounding::NearestEven, Overflow::Saturate});
        QuantStats stats;
        if (body > 0)
            quantizeBlocks(element, f.scheme, sample.first(body), std::span(cast).first(body),
                           {rows, length, false}, &stats, nullptr, {}, blocks);
        if (body < sample.size())
            quantizeBlocks(element, f.scheme, sample.subspan(body), std::span(cast).subspan(body),
                           {}, &stats, nullptr, {}, blocks);
        out.push_back(outcome(f.name, true, stats, sample, cast));
    }
    return out;
}

} // namespace plab
