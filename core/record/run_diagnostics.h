// A run's diagnostics over training as layer x step columns, what the app's Diagnostics heat
// map draws: log2 of each tensor's amax and its gradient-to-noise ratio from the stats rows, the
// kurtosis and the block-scale spread from the diagnostics table (stats/tensor_diagnostics.h).
#pragma once

#include "numerics/tensor_role.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

class RunRecord;

enum class DiagnosticQuantity {
    Log2Amax,           // log2 of the tensor's largest |x| (outliers growing before divergence)
    Kurtosis,           // E[(x-mean)^4] / var^2 of a layer's activations (3: normal)
    GradientNoiseRatio, // ||x|| / ||q(x) - x|| in the format (10^(SQNR/20))
    BlockScaleSpread,   // standard deviation of log2 of the block scales (block formats)
    ZeroScaleBlocks,    // live blocks whose scale underflowed to zero (block formats)
};
inline constexpr DiagnosticQuantity kDiagnosticQuantities[] = {
    DiagnosticQuantity::Log2Amax, DiagnosticQuantity::Kurtosis,
    DiagnosticQuantity::GradientNoiseRatio, DiagnosticQuantity::BlockScaleSpread,
    DiagnosticQuantity::ZeroScaleBlocks};
std::string_view toString(DiagnosticQuantity q); // "log2 amax", "kurtosis", ...
// Whether the quantity depends on the format (the ratio and the block quantities) or is the
// tensor's own (amax, kurtosis).
bool dependsOnFormat(DiagnosticQuantity q);

struct DiagnosticColumn {
    std::int64_t step = 0;
    std::vector<double> values; // per stage; NaN where the record holds none
};

// One column per statistics step that holds the quantity for the role, since the last reset.
// format: the one the rows name (a watched run's judged format; empty: the record's first, or a
// trained run's own). Empty when the record holds none of it (e.g. the kurtosis of a trained
// run, whose tensors are not captured whole).
// A gradient's log2 amax is the unscaled gradient's: each row's gradient scale (the loss
// scale, or a layer's own) divided out.
std::vector<DiagnosticColumn> diagnosticColumns(const RunRecord& record, DiagnosticQuantity q,
                                                TensorRole role, const std::string& format);

// Why diagnosticColumns is empty, one line: no statistics yet, the role not recorded, the
// quantity recorded by watched runs only or for activations only, no block format judged.
std::string diagnosticAbsence(const RunRecord& record, DiagnosticQuantity q, TensorRole role,
                              const std::string& format);

} // namespace plab
