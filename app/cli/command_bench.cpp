// `bench quantize` (`bench train` is in command_bench_train.cpp): quantise-with-counting throughput
// for each format and rounding mode, next to a plain copy of the same buffers in the same run (the
// ratio is the figure to quote). Block formats (nvfp4, ...) add their ratio to the element
// format's cast with the same rounding: what the blocks cost.
#include "cli_commands.h"

#include "device/compute_backend.h"
#include "numerics/amax_scaling.h"
#include "numerics/block_quantizer.h"
#include "numerics/quantizer.h"
#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace plab::cli {
namespace {

struct BenchArgs {
    std::size_t size = std::size_t{1} << 24;
    unsigned threads = 1;
    std::string kernel = "auto";
    int repeat = 5;
    bool noStats = false;
    bool specials = false;
    bool amaxScaled = false;
    std::string device = "cpu";
    std::vector<std::string> formats = {"fp16",         "bf16",       "fp8-e4m3", "fp8-e5m2",
                                        "fp6-e3m2",     "fp6-e2m3",   "fp4-e2m1", "nvfp4",
                                        "fp8-block128", "mxfp8-e4m3", "mxfp4"};
};

CpuKernel parseKernel(const std::string& name) {
    for (CpuKernel k : {CpuKernel::Auto, CpuKernel::Generic, CpuKernel::Avx2, CpuKernel::Avx512})
        if (name == toString(k))
            return k;
    throw std::invalid_argument("bench: --kernel \"" + name +
                                "\": expected auto, generic, avx2 or avx512");
}

// Gradient-like data: normal values spread over ~24 binades, so every format sees underflow,
// subnormals and normals, and the histogram is not degenerate. With `specials`, every 97th value
// is one of the inputs the kernels take out of their fast path (float32 subnormals, Inf, NaN)
// or count apart (zeros, overflows): what a cast costs on tensors that hold a few of them.
std::vector<float> makeData(std::size_t n, bool specials) {
    std::vector<float> data(n);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> binade(-20.0f, 4.0f);
    for (float& v : data)
        v = normal(rng) * std::exp2(binade(rng));
    if (specials) {
        const float kinds[] = {1e-40f,   -3e-39f,   1.4e-45f, 0.0f,  -0.0f,
                               INFINITY, -INFINITY, NAN,      1e30f, 5e-30f};
        constexpr std::size_t kEvery = 97;
        for (std::size_t i = 0; i < n; i += kEvery)
            data[i] = kinds[(i / kEvery) % std::size(kinds)];
    }
    return data;
}

template <typename Fn>
double bestSeconds(int repeat, Fn&& fn) {
    double best = 1e300;
    for (int r = 0; r < repeat; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        const auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    return best;
}

// The same table on a GPU: device-resident buffers, the kernel timed with CUDA events against a
// device-to-device copy of the same bytes in the same run.
int runDeviceQuantizeBench(const BenchArgs& args, const DeviceChoice& device) {
    const ComputeBackend* cuda = findBackend("cuda");
    const std::vector<float> in = makeData(args.size, args.specials);
    std::printf("bench quantize: %zu float32 elements%s on %s, %s, %d timed passes\n", args.size,
                args.specials ? " (1 in 97 special)" : "", device.label.c_str(),
                args.noStats ? "values only" : "with counters and histogram", args.repeat);
    std::printf("%-14s %-14s %12s %12s %14s\n", "format", "rounding", "G elem/s", "x copy",
                "copy GB/s");
    for (const std::string& name : args.formats) {
        if (findBlockFormat(name) != nullptr) {
            std::printf("%-14s (block formats are measured on the CPU only)\n", name.c_str());
            continue;
        }
        for (Rounding rounding : kAllRoundings) {
            const DeviceTiming t = cuda->timeQuantize(
                device.index, QuantConfig::forFormat(parseFormat(name), rounding), in, args.repeat,
                !args.noStats);
            const double elements = static_cast<double>(t.elements) * t.repeat;
            const double copyBytesPerSecond = 2.0 * 4.0 * elements / t.copySeconds; // read + write
            std::printf("%-14s %-14s %12.3f %12.3f %14.1f\n", name.c_str(),
                        std::string(toString(rounding)).c_str(), elements / t.quantizeSeconds / 1e9,
                        t.copySeconds / t.quantizeSeconds, copyBytesPerSecond / 1e9);
        }
    }
    return 0;
}

// Every --formats name resolves, and none is measured twice (fp16 and e5m10 are one format),
// before anything is printed: a bad name came after the table's header, a twice-given one was
// measured twice.
void checkBenchFormats(const std::vector<std::string>& names) {
    std::vector<FormatSpec> seen;
    std::vector<std::string> blocks;
    for (const std::string& name : names) {
        if (findBlockFormat(name) != nullptr) {
            if (std::find(blocks.begin(), blocks.end(), name) != blocks.end())
                throw std::invalid_argument("bench quantize: --formats: " + name + " given twice");
            blocks.push_back(name);
            continue;
        }
        FormatSpec format;
        try {
            format = parseFormat(name);
        } catch (const std::exception& e) {
            throw std::invalid_argument("bench quantize: --formats: " + std::string(e.what()));
        }
        for (const FormatSpec& s : seen)
            if (s.sameParameters(format))
                throw std::invalid_argument("bench quantize: --formats: " + name + " is " + s.name +
                                            ", given twice");
        seen.push_back(format);
    }
}

// --amax-scaled: a per-tensor amax-scaled cast (the scale from the tensor's amax, as the
// amax-current policy casts) in the quantiser's one pass, against the three passes it replaced
// (scale, cast, unscale, in place: issue 66 item 1), alternating, each the best of its passes,
// each after the same copy of the input; the two must give the same bits and counts.
void printScaledCast(const Quantizer& q, const std::vector<float>& in, std::vector<float>& out,
                     const std::string& name, Rounding rounding, const BenchArgs& args,
                     const QuantizeOptions& options, double copyRate) {
    const std::size_t n = in.size();
    const double scale = amaxScale(amaxOf(in), q.config().format, 0);
    const auto s = static_cast<float>(scale), inverse = static_cast<float>(1.0 / scale);
    // Both in place, as the engine casts, on a fresh copy of the input (the copy in both).
    QuantStats onePassStats, threePassStats;
    std::vector<float> threePass(n);
    auto onePass = [&] {
        onePassStats.reset();
        std::memcpy(out.data(), in.data(), n * sizeof(float));
        quantizeScaled(q, out, out, scale, args.noStats ? nullptr : &onePassStats, options);
    };
    auto threePasses = [&] {
        threePassStats.reset();
        std::memcpy(threePass.data(), in.data(), n * sizeof(float));
        scaleInPlace(threePass, s);
        q.quantize(threePass, threePass, args.noStats ? nullptr : &threePassStats, options);
        scaleInPlace(threePass, inverse);
    };
    double one = 1e300, three = 1e300;
    for (int r = 0; r < args.repeat; ++r) {
        one = std::min(one, bestSeconds(1, onePass));
        three = std::min(three, bestSeconds(1, threePasses));
    }
    if (std::memcmp(out.data(), threePass.data(), n * sizeof(float)) != 0 ||
        onePassStats.counts != threePassStats.counts || onePassStats.amax != threePassStats.amax)
        throw std::runtime_error("bench quantize --amax-scaled: " + name +
                                 ": the one pass and the three passes differ");
    const double rate = static_cast<double>(n) / one;
    std::printf("%-14s %-14s %12.3f %12.3f %12.3f\n", (name + " scaled").c_str(),
                std::string(toString(rounding)).c_str(), rate / 1e9, rate / copyRate, three / one);
}

int runQuantizeBench(const BenchArgs& args) {
    if (args.size == 0 || args.repeat < 1)
        throw std::invalid_argument("bench quantize: --size and --repeat must be positive");
    checkBenchFormats(args.formats);
    if (const DeviceChoice device = resolveDevice(parseDeviceSpec(args.device)); device.cuda) {
        std::fprintf(stderr, "%s\n", device.notice.c_str());
        return runDeviceQuantizeBench(args, device);
    } else if (!device.notice.empty()) {
        std::fprintf(stderr, "%s\n", device.notice.c_str());
    }
    const CpuKernel kernel = parseKernel(args.kernel);
    ThreadPool pool(args.threads);
    const std::vector<float> in = makeData(args.size, args.specials);
    std::vector<float> out(args.size);
    const std::size_t n = args.size;
    constexpr std::size_t kChunk = 1 << 16;
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    auto copy = [&] {
        pool.parallelFor(chunks, [&](std::size_t c) {
            const std::size_t begin = c * kChunk;
            std::memcpy(out.data() + begin, in.data() + begin,
                        std::min(kChunk, n - begin) * sizeof(float));
        });
    };
    copy(); // fault the pages in before timing anything
    const double copySeconds = bestSeconds(args.repeat, copy);
    const double copyRate = static_cast<double>(n) / copySeconds;

    std::printf("bench quantize: %zu float32 elements%s, %u thread(s), kernel %s, %s, best of %d\n",
                n, args.specials ? " (1 in 97 special)" : "", pool.threadCount(),
                toString(Quantizer(QuantConfig{}, kernel).kernel()),
                args.noStats ? "values only" : "with counters and histogram", args.repeat);
    std::printf("%-14s %-14s %12s %12s %12s\n", "format", "rounding", "G elem/s", "x copy",
                args.amaxScaled ? "x 3 passes" : "x element");
    std::printf("%-14s %-14s %12.3f %12.3f %12s\n", "(copy)", "-", copyRate / 1e9, 1.0, "-");
    QuantStats stats;
    BlockStats blockStats;
    std::vector<BlockInfo> blocks;
    for (const std::string& name : args.formats) {
        const BlockFormat* block = findBlockFormat(name);
        for (Rounding rounding : kAllRoundings) {
            QuantizeOptions options;
            options.pool = &pool;
            options.seed = 7;
            // A block format: its element format saturates (block_quantizer.h), measured too so
            // that the block cost reads as a ratio (x element).
            const QuantConfig config =
                block != nullptr ? QuantConfig{block->element, rounding, Overflow::Saturate}
                                 : QuantConfig::forFormat(parseFormat(name), rounding);
            const Quantizer q(config, kernel);
            auto elementCast = [&] {
                stats.reset();
                q.quantize(in, out, args.noStats ? nullptr : &stats, options);
            };
            if (block == nullptr && args.amaxScaled) {
                printScaledCast(q, in, out, name, rounding, args, options, copyRate);
                continue;
            }
            if (block == nullptr) {
                const double rate = static_cast<double>(n) / bestSeconds(args.repeat, elementCast);
                std::printf("%-14s %-14s %12.3f %12.3f %12s\n", name.c_str(),
                            std::string(toString(rounding)).c_str(), rate / 1e9, rate / copyRate,
                            "-");
                continue;
            }
            auto blockCast = [&] {
                stats.reset();
                blockStats = BlockStats{};
                quantizeBlocks(q, block->scheme, in, out, {}, args.noStats ? nullptr : &stats,
                               args.noStats ? nullptr : &blockStats, options, blocks,
                               BlockRecords::Scratch); // as the engine casts
            };
            // The two casts alternate, each the best of its passes, so that a stretch of a
            // slower machine weighs on both sides of the ratio.
            double s = 1e300, blockSeconds = 1e300;
            for (int r = 0; r < args.repeat; ++r) {
                s = std::min(s, bestSeconds(1, elementCast));
                blockSeconds = std::min(blockSeconds, bestSeconds(1, blockCast));
            }
            const double rate = static_cast<double>(n) / s;
            const double blockRate = static_cast<double>(n) / blockSeconds;
            std::printf("%-14s %-14s %12.3f %12.3f %12.3f\n", name.c_str(),
                        std::string(toString(rounding)).c_str(), blockRate / 1e9,
                        blockRate / copyRate, blockRate / rate);
        }
    }
    return 0;
}

} // namespace

Command addBenchCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Benchmarks of the core");
    cmd->require_subcommand(1);
    auto* quantize = cmd->add_subcommand(
        "quantize", "Quantise-with-counting throughput per format and rounding vs a plain copy");
    auto args = std::make_shared<BenchArgs>();
    quantize->add_option("--size", args->size, "Elements per buffer")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    quantize->add_option("--threads", args->threads, "Threads (0: all cores)")
        ->check(wholeNumberBetween(0, static_cast<long long>(kMaxThreads)))
        ->capture_default_str();
    quantize->add_option("--kernel", args->kernel, "auto | generic | avx2 | avx512")
        ->capture_default_str();
    quantize->add_option("--repeat", args->repeat, "Timed passes; the best is reported")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    quantize->add_option("--formats", args->formats, "Formats to measure")->delimiter(',');
    quantize->add_option("--device", args->device, "cpu | auto | cuda | cuda:N")
        ->capture_default_str();
    quantize->add_flag("--no-stats", args->noStats,
                       "Quantise only, without counters and histogram (what counting costs)");
    quantize->add_flag("--amax-scaled", args->amaxScaled,
                       "Element formats cast with a per-tensor amax scale: the one pass against "
                       "the three passes (scale, cast, unscale) it replaced, as a ratio");
    quantize->add_flag("--specials", args->specials,
                       "Every 97th input a special value (float32 subnormal, +-0, +-Inf, NaN, "
                       "huge, tiny)");
    // The subcommand that parsed sets the action (CLI11 runs its callback after parsing).
    auto action = std::make_shared<std::function<int()>>();
    quantize->callback([args, action] { *action = [args] { return runQuantizeBench(*args); }; });
    addBenchTrainSubcommand(cmd, *action);
    addBenchGptSubcommand(cmd, *action);
    return {cmd, [action] { return (*action)(); }};
}

} // namespace plab::cli
