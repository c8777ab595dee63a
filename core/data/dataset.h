// Dataset: labelled samples as normalised float32 feature vectors (one image = C*H*W values),
// held in memory; and the sources: IDX files (MNIST family) or the built-in synthetic set.
#pragma once

#include "nn/feature_shape.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace plab {

// Bad or missing data files; what() names the file and what was wrong.
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Dataset {
    std::string name;
    FeatureShape shape;
    int classes = 0;
    std::vector<float> features;      // (count, shape.size()), normalised
    std::vector<std::uint8_t> labels; // (count)

    std::size_t count() const { return labels.size(); }
    const float* sample(std::size_t i) const {
        return features.data() + i * static_cast<std::size_t>(shape.size());
    }
};

struct TextCorpus; // data/text_corpus.h

// What a run trains on: labelled images (train, test), or for the GPT a text corpus (train and
// validation bytes; the image sets are then empty).
struct DataSplit {
    Dataset train;
    Dataset test;
    std::shared_ptr<const TextCorpus> text;
};

// Reads train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-... from dir and
// normalises pixels to zero mean, unit variance (statistics of the training set).
DataSplit loadIdxDirectory(const std::string& dir);

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// A 10-class, 28x28 synthetic task generated from the seed alone: each class is an arm of a
// spiral in a 2-D latent plane, drawn as a smooth nonlinear image, so that a linear model does
// poorly and a few layers are needed. Deterministic for a given seed.
DataSplit makeSyntheticData(std::uint64_t seed, int trainCount, int testCount);

} // namespace plab
