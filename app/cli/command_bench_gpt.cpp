// `bench gpt`: the tiny GPT trained in FP32 on text, as ../shared/peers/gpt_torch.py trains it,
// printing what the peer prints (tokens/s, final train loss, validation loss in nats and bits per
// byte) so that tests/bench/gpt_vs_torch.sh can put the two side by side from one run. Also the
// byte bigram model's validation bits/byte, the baseline a model must beat.
#include "cli_commands.h"

#include "util/thread_pool.h"

#include "data/text_corpus.h"
#include "train/gpt_run.h"
#include "train/presets.h"
#include "train/train_config.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace plab::cli {
namespace {

struct GptBenchArgs {
    std::string data = "synthetic";
    std::string preset = "fp32";
    int steps = 1000;
    int threads = 1;
    std::uint64_t seed = 1;
};

TextCorpus loadCorpus(const std::string& data, int context, std::uint64_t seed) {
    if (data == "synthetic")
        return makeSyntheticText(seed, 1 << 21, context);
    if (data == "fortunes")
        return loadFortunes(context);
    if (data.starts_with("text:"))
        return loadTextFile(data.substr(5), context);
    throw std::invalid_argument("bench gpt: --data \"" + data +
                                "\": expected synthetic, fortunes or text:FILE");
}

int runGptBench(const GptBenchArgs& args) {
    GptRunSettings settings;
    settings.seed = args.seed;
    settings.threads = args.threads;
    if (args.preset != "fp32") {
        TrainConfig precision = configFromJson(findPreset(args.preset).json);
        precision.seed = args.seed;
        settings.precision = precision;
    }
    const TextCorpus corpus = loadCorpus(args.data, settings.spec.context, args.seed);
    GptRun run(settings, corpus);
    // With a recipe: the flushed shares over the whole run, printed below. FP32 counts nothing,
    // as its peer: its tokens/s are the plain training's.
    run.setCounting(settings.precision.has_value());
    if (!run.notice().empty())
        std::fprintf(stderr, "bench gpt: %s\n", run.notice().c_str());
    const auto t0 = std::chrono::steady_clock::now();
    double loss = 0.0;
    for (int i = 0; i < args.steps; ++i) {
        const GptStepResult r = run.step();
        loss = r.loss;
        if (r.diverged)
            throw std::runtime_error("bench gpt: gradients overflowed at step " +
                                     std::to_string(i + 1) + " with loss scale " +
                                     std::to_string(r.scale));
        if (!std::isfinite(loss))
            throw std::runtime_error("bench gpt: loss not finite at step " + std::to_string(i + 1));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double validation = run.validationLoss();
    const double tokens = static_cast<double>(args.steps) * settings.batch * settings.spec.context;
    std::printf("gpt precision-lab %s: %zu params, %d steps, %d thread(s): %.0f tokens/s, "
                "train loss %.4f, val loss %.4f nats/byte = %.3f bits/byte, %zu bytes of text "
                "(%s; byte bigram model %.3f bits/byte)\n",
                args.preset.c_str(), run.parameters().size(), args.steps, args.threads,
                tokens / seconds, loss, validation, validation / std::log(2.0),
                corpus.train.size() + corpus.validation.size(), corpus.name.c_str(),
                bigramBitsPerByte(corpus));
    // Outlier channels in each stage's input (LayerNorm output) on the last validation batch.
    std::printf("channel amax (largest / median) and outlier channels (amax > 6x the median) of "
                "each stage's input:\n");
    for (int stage = 0; stage < run.model().stageCount(); ++stage) {
        std::vector<float> amax = run.model().channelAmax(stage);
        const double share = transformer::outlierChannelShare(amax);
        std::sort(amax.begin(), amax.end());
        std::printf("  %-18s %6.1fx  %5.1f%%\n", run.model().stageName(stage).c_str(),
                    amax.empty() ? 0.0 : amax.back() / std::max(1e-30f, amax[amax.size() / 2]),
                    100.0 * share);
    }
    // What it writes after the validation text's first line, unprintable bytes as '?'.
    const std::string v(corpus.validation.begin(), corpus.validation.end());
    const std::string prompt = v.substr(0, std::min<std::size_t>(v.find('\n') + 1, 64));
    std::string written = run.sample(prompt.empty() ? std::string("\n") : prompt, 160, args.seed);
    for (char& ch : written)
        if ((static_cast<unsigned char>(ch) < 32 && ch != '\n') ||
            static_cast<unsigned char>(ch) > 126)
            ch = '?';
    std::printf("sample after \"%s\":\n%s\n",
                prompt.substr(0, prompt.size() - (prompt.ends_with('\n') ? 1 : 0)).c_str(),
                written.c_str());
    if (const GptRecipeCasts* casts = run.casts()) {
        std::printf("loss scale %g, %lld step(s) skipped; flushed share of nonzero values over the "
                    "run (weights, activations, activation gradients, weight gradients):\n",
                    run.lossScale(), static_cast<long long>(run.skippedSteps()));
        for (int stage = 0; stage < run.model().stageCount(); ++stage) {
            std::printf("  %-18s", run.model().stageName(stage).c_str());
            for (std::size_t o = 0; o < GptRecipeCasts::kOperandRoles; ++o)
                std::printf(" %9.4f%%",
                            100.0 * casts->stats(stage, static_cast<TensorRole>(o)).flushedShare());
            std::printf("\n");
        }
    }
    return 0;
}

} // namespace

void addBenchGptSubcommand(CLI::App* bench, std::function<int()>& action) {
    auto* cmd = bench->add_subcommand(
        "gpt", "Train the tiny GPT in FP32 as the PyTorch peer does; tokens/s and bits/byte");
    auto args = std::make_shared<GptBenchArgs>();
    cmd->add_option("--data", args->data, "synthetic, fortunes or text:FILE")
        ->capture_default_str();
    cmd->add_option("--preset", args->preset,
                    "A preset's precision recipe and scaling (see `presets`); the GPT's own "
                    "optimiser and schedule")
        ->capture_default_str();
    cmd->add_option("--steps", args->steps, "Training steps (batch 32 x 64 bytes)")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    cmd->add_option("--threads", args->threads, "Threads for the matrix products")
        ->check(wholeNumberBetween(1, static_cast<long long>(kMaxThreads)))
        ->capture_default_str();
    cmd->add_option("--seed", args->seed, "Initialisation, batches and synthetic text")
        ->check(unsigned64()) // -1 wrapped to 2^64 - 1
        ->capture_default_str();
    cmd->callback([args, &action] { action = [args] { return runGptBench(*args); }; });
}

} // namespace plab::cli
