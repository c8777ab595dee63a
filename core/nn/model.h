// Model: a sequence of layers with all parameters in one contiguous buffer, grouped into
// "stages" (a weight layer and the activation / pooling layers after it) that statistics and
// per-layer precision overrides refer to. Builders for the MLP and the small CNN.
#pragma once

#include "nn/activation.h"
#include "nn/layer.h"

#include <memory>
#include <string>
#include <vector>

namespace plab {

struct ModelSpec {
    std::string type = "mlp";             // "mlp", "cnn" or "gpt" (gpt/gpt_model.h)
    std::vector<int> hidden = {256, 256}; // MLP hidden widths
    ActivationKind activation = ActivationKind::ReLU;
    InitKind init = InitKind::He;
    float initScale = 1.0f; // multiplies the He std-dev when init is Small
    int convChannels1 = 8, convChannels2 = 16, convKernel = 5; // CNN
    int context = 64, width = 128, heads = 4, blocks = 2;      // GPT (vocabulary: bytes)
    bool operator==(const ModelSpec&) const = default;
};

class Model {
public:
    // Throws std::invalid_argument for an unknown type or an impossible shape.
    Model(const ModelSpec& spec, FeatureShape input, int classes);

    const std::vector<std::unique_ptr<Layer>>& layers() const { return m_layers; }
    Layer& layer(std::size_t i) { return *m_layers[i]; }
    std::size_t parameterCount() const { return m_parameterCount; }
    std::size_t parameterOffset(std::size_t layer) const { return m_offsets[layer]; }
    int stageCount() const { return static_cast<int>(m_stageWeightLayer.size()); }
    int stageOf(std::size_t layer) const { return m_stageOf[layer]; }
    // The stage's weight layer, and whether a layer is the last of its stage.
    std::size_t stageWeightLayer(int stage) const {
        return m_stageWeightLayer[static_cast<std::size_t>(stage)];
    }
    bool endsStage(std::size_t layer) const;
    std::string stageName(int stage) const;
    FeatureShape inputShape() const { return m_input; }
    int classes() const { return m_classes; }

    void initParameters(float* params, std::uint64_t seed, InitKind init, float scale) const;

private:
    void add(std::unique_ptr<Layer> layer);

    FeatureShape m_input;
    int m_classes;
    std::vector<std::unique_ptr<Layer>> m_layers;
    std::vector<std::size_t> m_offsets;
    std::vector<int> m_stageOf;
    std::vector<std::size_t> m_stageWeightLayer;
    std::size_t m_parameterCount = 0;
};

} // namespace plab
