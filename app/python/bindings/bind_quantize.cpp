// formats() and quantize(): the format table, and any array through any format with the cast's
// exact statistics (the core's TensorCast, the code `precision-lab-cli quantize` runs).
#include "bindings.h"

#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "numerics/tensor_cast.h"
#include "util/thread_pool.h"

#include <pybind11/stl.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace plab::python {
namespace {

py::dict elementFormatRow(const FormatSpec& f) {
    py::dict row;
    row["name"] = f.name;
    row["kind"] = "element";
    row["signed"] = f.isSigned;
    row["exponent_bits"] = f.exponentBits;
    row["mantissa_bits"] = f.mantissaBits;
    row["bias"] = f.bias;
    row["max_finite"] = f.maxFinite();
    row["min_normal"] = f.minNormal();
    row["min_subnormal"] = (f.hasZero && f.subnormals && f.mantissaBits > 0)
                               ? py::object(py::float_(f.minPositive()))
                               : py::object(py::none());
    row["epsilon"] = f.epsilon();
    row["binades"] = f.binades();
    row["finite_values"] = f.finiteValueCount();
    row["specials"] = std::string(toString(f.specials));
    row["default_overflow"] = std::string(toString(defaultOverflow(f)));
    return row;
}

py::dict blockFormatRow(const BlockFormat& b) {
    py::dict row;
    row["name"] = b.name;
    row["kind"] = "block";
    row["element"] = b.element.name;
    row["block_size"] = b.scheme.blockSize;
    // The element format's largest value: a block holds values up to it times its scale.
    row["max_finite"] = b.element.maxFinite();
    row["scale"] = scaleFormatName(b.scheme);
    row["description"] = b.description;
    return row;
}

py::object formats(const std::optional<std::string>& spec) {
    if (spec) {
        if (const BlockFormat* b = findBlockFormat(*spec))
            return blockFormatRow(*b);
        return elementFormatRow(parseFormat(*spec));
    }
    py::list rows;
    for (const FormatSpec& f : namedFormats())
        rows.append(elementFormatRow(f));
    for (const BlockFormat& b : blockFormats())
        rows.append(blockFormatRow(b));
    return rows;
}

// The pools of quantize(threads=N), one per N, each used by one call at a time (the core's pool
// runs one parallel loop at a time).
struct SharedPool {
    std::mutex busy;
    ThreadPool pool;
    explicit SharedPool(unsigned threads) : pool(threads) {}
};
SharedPool& sharedPool(unsigned threads) {
    static std::mutex mutex;
    static std::map<unsigned, std::unique_ptr<SharedPool>> pools;
    const std::lock_guard lock(mutex);
    auto& p = pools[threads];
    if (!p)
        p = std::make_unique<SharedPool>(threads);
    return *p;
}

py::array_t<double> doubles(const std::vector<double>& values) {
    py::array_t<double> a(static_cast<py::ssize_t>(values.size()));
    std::copy(values.begin(), values.end(), a.mutable_data());
    return a;
}

template <std::size_t N>
py::array_t<std::uint64_t> counts(const std::array<std::uint64_t, N>& bins) {
    py::array_t<std::uint64_t> a(static_cast<py::ssize_t>(N));
    std::copy(bins.begin(), bins.end(), a.mutable_data());
    return a;
}

// The histogram's log-bin edges: bins 1..kHistLogBins of quant_stats.h's layout.
py::array_t<double> histogramEdges() {
    std::vector<double> edges;
    for (int b = 1; b <= kHistLogBins; ++b)
        edges.push_back(histogramBinLowerLog2(b));
    edges.push_back(kHistMaxExponent + 1);
    return doubles(edges);
}

py::dict statsDict(const TensorCastResult& r, const TensorCast& cast,
                   const std::vector<BlockInfo>& blocks, bool withError) {
    const QuantStats& q = r.stats;
    py::dict d;
    d["format"] = cast.name();
    d["total"] = q.total();
    d["zero"] = q.count(QuantClass::Zero);
    d["flushed"] = q.count(QuantClass::Underflow);
    d["subnormal"] = q.count(QuantClass::Subnormal);
    d["normal"] = q.count(QuantClass::Normal);
    d["overflow"] = q.count(QuantClass::Overflow);
    d["nan"] = q.count(QuantClass::NaN);
    d["amax"] = static_cast<double>(q.amax);
    d["flushed_share"] = q.flushedShare();
    if (withError) { // finite (input, output) pairs: err_count of them
        d["err_count"] = q.error.count;
        d["signal_sq"] = q.error.signalSq;
        d["error_sq"] = q.error.errorSq;
        d["output_sq"] = q.error.outputSq;
        d["mse"] = q.error.mse();
        d["sqnr_db"] = q.error.sqnrDb();
    }
    // Bin 0: zeros; 1..N: log2|x| bins (edges in bin_edges_log2); N+1: Inf; N+2: NaN.
    d["histogram"] = counts(q.histogram);
    d["bin_edges_log2"] = histogramEdges();
    if (cast.isBlockFormat()) {
        const BlockStats& b = r.blocks;
        py::dict bd;
        bd["blocks"] = b.blocks;
        bd["zero_blocks"] = b.zeroBlocks;
        bd["flushed_blocks"] = b.flushedBlocks;
        bd["saturated_blocks"] = b.saturatedBlocks;
        bd["flushed_in_live_blocks"] = b.flushedInLiveBlocks;
        bd["live_elements"] = b.liveElements;
        bd["flushed_block_share"] = b.flushedBlockShare();
        bd["saturated_block_share"] = b.saturatedBlockShare();
        bd["scale_histogram"] = counts(b.scaleHistogram);
        bd["range_histogram"] = counts(b.rangeHistogram);
        if (!blocks.empty()) { // block_scales=True: each block's decoded scale and amax
            py::array_t<float> scales(static_cast<py::ssize_t>(blocks.size()));
            py::array_t<float> amax(static_cast<py::ssize_t>(blocks.size()));
            float* s = scales.mutable_data();
            float* a = amax.mutable_data();
            for (std::size_t i = 0; i < blocks.size(); ++i) {
                s[i] = blocks[i].scale.decoded;
                a[i] = blocks[i].amax;
            }
            bd["scales"] = scales;
            bd["amax"] = amax;
        }
        d["blocks"] = bd;
        d["tensor_scale"] = static_cast<double>(r.tensorScale);
    }
    return d;
}

py::tuple quantize(const py::handle& x, const std::string& format, const std::string& rounding,
                   std::uint64_t seed, double scale, bool withStats,
                   const std::optional<std::string>& scaleRounding, const py::handle& outArg,
                   unsigned threads, const std::optional<std::string>& overflow, bool fourOverSix,
                   bool pow2Scales, bool blockScales, bool error, std::uint64_t stream) {
    // Every check before anything is written.
    const py::array in = checkedFloatArray(x, "x", false);
    if (!std::isfinite(scale) || scale <= 0.0 || !std::isfinite(static_cast<float>(scale)))
        throw py::value_error("scale " + std::string(py::str(py::float_(scale))) +
                              ": expected a finite positive number (the factor the values are "
                              "multiplied by before the cast)");
    if (threads < 1)
        throw py::value_error("threads 0: expected 1 or more");
    TensorCastSpec spec{.format = format, .rounding = parseRounding(rounding)};
    if (overflow)
        spec.overflow = parseOverflow(*overflow);
    if (scaleRounding)
        spec.scaleRounding = parseScaleRounding(*scaleRounding);
    spec.fourOverSix = fourOverSix;
    spec.powerOfTwoScales = pow2Scales;
    const TensorCast cast(spec);
    py::array out;
    if (outArg.is_none()) {
        std::vector<py::ssize_t> shape(in.shape(), in.shape() + in.ndim());
        out = py::array_t<float>(shape);
    } else {
        out = checkedFloatArray(outArg, "out", true);
        if (out.ndim() != in.ndim() || !std::equal(in.shape(), in.shape() + in.ndim(), out.shape()))
            throw py::value_error("out has another shape than x: expected the same shape");
    }
    const std::span<float> inValues = floatValues(in), outValues = floatValues(out);
    // Blocks run along the last dimension (the rows of a matrix); a 1-D array is one row, as
    // the CLI casts its stdin.
    const std::size_t rowLength =
        in.ndim() >= 2 ? static_cast<std::size_t>(in.shape(in.ndim() - 1)) : 0;
    TensorCastResult result;
    std::vector<BlockInfo> blocks;
    {
        py::gil_scoped_release release;
        QuantizeOptions options;
        options.seed = seed;
        options.stream = stream;
        options.measureError = error;
        std::unique_lock<std::mutex> poolLock;
        if (threads > 1) {
            SharedPool& shared = sharedPool(threads);
            poolLock = std::unique_lock(shared.busy);
            options.pool = &shared.pool;
        }
        cast.cast(inValues, outValues, rowLength, static_cast<float>(scale), options,
                  withStats ? &result : nullptr,
                  withStats && blockScales && cast.isBlockFormat() ? &blocks : nullptr);
    }
    return py::make_tuple(out, withStats ? py::object(statsDict(result, cast, blocks, error))
                                         : py::object(py::none()));
}

} // namespace

void bindQuantize(py::module_& m) {
    m.def("formats", &formats, py::arg("spec") = py::none());
    m.def("quantize", &quantize, py::arg("x"), py::arg("fmt"), py::arg("rounding"), py::arg("seed"),
          py::arg("scale"), py::arg("stats"), py::arg("scale_rounding"), py::arg("out"),
          py::arg("threads"), py::arg("overflow"), py::arg("four_over_six"), py::arg("pow2_scales"),
          py::arg("block_scales"), py::arg("error"), py::arg("stream") = 0);
    m.attr("HIST_BIN_COUNT") = kHistBinCount;
}

} // namespace plab::python
