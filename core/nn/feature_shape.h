// The shape of one sample as a layer takes it: channels x height x width (1 x 1 x n for flat
// features). Layers define their input by it; data sets produce samples of it.
#pragma once

namespace plab {

struct FeatureShape {
    int channels = 1;
    int height = 1;
    int width = 1;
    int size() const { return channels * height * width; }
};

} // namespace plab
