// Dataset sources: IDX directories (Fashion-MNIST and friends) and the synthetic spiral task.
#include "data/dataset.h"

#include "data/idx_reader.h"
#include "util/huge_pages.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

namespace plab {
namespace {

std::string findFile(const std::string& dir, const std::string& stem) {
    namespace fs = std::filesystem;
    std::error_code folder;
    const fs::file_type type = fs::status(dir, folder).type();
    if (type == fs::file_type::not_found || (type != fs::file_type::directory && !folder))
        throw DataError(dir +
                        (type == fs::file_type::not_found ? ": no such folder" : ": not a folder") +
                        " (expected a folder holding the four MNIST-style IDX files)");
    for (const char* suffix : {"", ".gz"}) {
        const fs::path p = fs::path(dir) / (stem + suffix);
        std::error_code ec; // a folder we may not read: say so, not the library's own text
        if (fs::is_directory(p, ec))
            throw DataError(p.string() + ": a folder where the IDX file " + stem + " was expected");
        if (fs::exists(p, ec))
            return p.string();
        if (ec)
            throw DataError(dir + ": cannot be read (" + ec.message() + ")");
    }
    throw DataError(dir + ": missing " + stem + " (or " + stem +
                    ".gz); expected the four MNIST-style IDX files");
}

// A dataset as read: its pixels still bytes (standardiseFeatures turns them into features).
struct LoadedPair {
    Dataset d;
    std::vector<std::uint8_t> pixels;
};

LoadedPair loadPair(const std::string& dir, const std::string& images, const std::string& labels) {
    const std::string imagePath = findFile(dir, images);
    const std::string labelPath = findFile(dir, labels);
    IdxArray img = readIdx(imagePath);
    const IdxArray lab = readIdx(labelPath);
    if (img.dims.size() != 3)
        throw DataError(imagePath + ": expected 3 dimensions (count, rows, columns), got " +
                        std::to_string(img.dims.size()));
    if (lab.dims.size() != 1)
        throw DataError(labelPath + ": expected 1 dimension (count), got " +
                        std::to_string(lab.dims.size()));
    if (img.dims[0] != lab.dims[0])
        throw DataError(imagePath + " holds " + std::to_string(img.dims[0]) + " images but " +
                        labelPath + " holds " + std::to_string(lab.dims[0]) + " labels");
    Dataset d;
    d.name = dir;
    d.shape = {1, static_cast<int>(img.dims[1]), static_cast<int>(img.dims[2])};
    d.labels = lab.data;
    int maxLabel = 0;
    for (std::uint8_t l : d.labels)
        maxLabel = std::max(maxLabel, int{l});
    d.classes = maxLabel + 1;
    return {std::move(d), std::move(img.data)};
}

// Mean and standard deviation from the sums of n values and of their squares (in double).
struct Moments {
    double mean, stdDev;
};
Moments momentsOf(double sum, double sumSq, std::size_t count) {
    const double n = static_cast<double>(count);
    const double mean = sum / n;
    return {mean, std::sqrt(std::max(sumSq / n - mean * mean, 1e-12))};
}

// Standardised by the training features' mean and standard deviation (summed in double, in
// order).
void normalise(DataSplit& split) {
    double sum = 0.0, sumSq = 0.0;
    for (float v : split.train.features) {
        sum += v;
        sumSq += static_cast<double>(v) * v;
    }
    const auto [mean, stdDev] = momentsOf(sum, sumSq, split.train.features.size());
    for (Dataset* d : {&split.train, &split.test})
        for (float& v : d->features)
            v = static_cast<float>((v - mean) / stdDev);
}

// Features: pixel / 255 (in float), then normalise's arithmetic. A feature depends on its pixel's
// byte alone, so each of the 256 is worked out once, by the same arithmetic as feature by feature
// (the same bits), and the tensors are filled by lookup: Fashion-MNIST's 188 MB of features are
// written once instead of zeroed, written, read and written again (a one-step run 1.60 s to
// 1.28 s; the huge pages, util/huge_pages.h, take it to 0.52 s).
void standardiseFeatures(LoadedPair& train, LoadedPair& test) {
    std::array<double, 256> scaled{};
    for (std::size_t b = 0; b < scaled.size(); ++b)
        scaled[b] = static_cast<float>(b) / 255.0f;
    double sum = 0.0, sumSq = 0.0;
    for (std::uint8_t b : train.pixels) {
        const double v = scaled[b];
        sum += v;
        sumSq += v * v;
    }
    const auto [mean, stdDev] = momentsOf(sum, sumSq, train.pixels.size());
    std::array<float, 256> feature{};
    for (std::size_t b = 0; b < feature.size(); ++b)
        feature[b] = static_cast<float>((scaled[b] - mean) / stdDev);
    for (LoadedPair* pair : {&train, &test}) {
        const std::vector<std::uint8_t>& pixels = pair->pixels;
        std::vector<float>& f = pair->d.features;
        f.reserve(pixels.size());
        adviseHugePages(f.data(), pixels.size() * sizeof(float));
        f.resize(pixels.size());
        for (std::size_t i = 0; i < pixels.size(); ++i)
            f[i] = feature[pixels[i]];
        pair->pixels = {};
    }
}

} // namespace

DataSplit loadIdxDirectory(const std::string& dir) {
    LoadedPair train = loadPair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte");
    LoadedPair test = loadPair(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
    standardiseFeatures(train, test);
    DataSplit split;
    split.train = std::move(train.d);
    split.test = std::move(test.d);
    if (split.train.shape.height != split.test.shape.height ||
        split.train.shape.width != split.test.shape.width)
        throw DataError(dir + ": training and test images differ in size");
    split.test.classes = split.train.classes = std::max(split.train.classes, split.test.classes);
    // Classes are 0..K-1, each one seen in training: a stray label (200 in a 10-class set) would
    // otherwise grow the model to 201 outputs without a word.
    std::vector<std::size_t> seen(static_cast<std::size_t>(split.train.classes), 0);
    for (std::uint8_t l : split.train.labels)
        ++seen[l];
    for (int k = 0; k < split.train.classes; ++k)
        if (seen[static_cast<std::size_t>(k)] == 0) {
            const bool inTest = std::find(split.test.labels.begin(), split.test.labels.end(),
                                          split.train.classes - 1) != split.test.labels.end();
            throw DataError(dir + ": labels go up to " + std::to_string(split.train.classes - 1) +
                            (inTest ? " (in the test labels)" : "") + " but class " +
                            std::to_string(k) +
                            " never occurs in the training labels; expected classes 0..K-1, "
                            "each present");
        }
    return split;
}

DataSplit makeSyntheticData(std::uint64_t seed, int trainCount, int testCount) {
    constexpr int kClasses = 10, kSide = 28, kPixels = kSide * kSide;
    std::mt19937_64 rng(seed);
    // The fixed "camera": each pixel responds to the latent point through its own smooth wave.
    std::normal_distribution<float> freq(0.0f, 0.6f);
    std::uniform_real_distribution<float> phase(0.0f, 2.0f * std::numbers::pi_v<float>);
    std::vector<float> fx(kPixels), fy(kPixels), ph(kPixels);
    for (int p = 0; p < kPixels; ++p) {
        fx[p] = freq(rng);
        fy[p] = freq(rng);
        ph[p] = phase(rng);
    }
    auto generate = [&](int count, std::uint64_t stream) {
        std::mt19937_64 g(seed ^ (0x9E3779B97F4A7C15ull * stream));
        std::uniform_real_distribution<float> unit(0.0f, 1.0f);
        std::normal_distribution<float> latentNoise(0.0f, 0.07f), pixelNoise(0.0f, 0.15f);
        Dataset d;
        d.name = "synthetic";
        d.shape = {1, kSide, kSide};
        d.classes = kClasses;
        d.labels.resize(static_cast<std::size_t>(count));
        d.features.resize(static_cast<std::size_t>(count) * kPixels);
        for (int i = 0; i < count; ++i) {
            const int c = static_cast<int>(g() % kClasses);
            const float t = unit(g);
            const float angle =
                2.0f * std::numbers::pi_v<float> * static_cast<float>(c) / kClasses + 5.0f * t;
            const float radius = 0.2f + 2.0f * t;
            const float x = radius * std::cos(angle) + latentNoise(g);
            const float y = radius * std::sin(angle) + latentNoise(g);
            float* out = d.features.data() + static_cast<std::size_t>(i) * kPixels;
            for (int p = 0; p < kPixels; ++p)
                out[p] = std::sin(fx[p] * x + fy[p] * y + ph[p]) + pixelNoise(g);
            d.labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(c);
        }
        return d;
    };
    DataSplit split{generate(trainCount, 1), generate(testCount, 2), nullptr};
    normalise(split);
    return split;
}

} // namespace plab
