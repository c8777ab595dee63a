// Model construction: layers appended in order; a weight layer opens a new stage.
#include "nn/model.h"

#include "nn/conv2d.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/max_pool2d.h"

#include <stdexcept>

namespace plab {

Model::Model(const ModelSpec& spec, FeatureShape input, int classes)
    : m_input(input), m_classes(classes) {
    FeatureShape shape = input;
    auto current = [&] { return m_layers.empty() ? input : m_layers.back()->outputShape(); };
    if (spec.type == "mlp") {
        if (shape.channels * shape.height * shape.width <= 0)
            throw std::invalid_argument("model: empty input");
        // Samples are stored flat, so the first linear layer reads (C, H, W) images directly.
        for (int width : spec.hidden) {
            if (width < 1 || width > 65536)
                throw std::invalid_argument("model.hidden: width " + std::to_string(width) +
                                            " out of range 1..65536");
            add(std::make_unique<Linear>(current().size(), width));
            add(std::make_unique<Activation>(spec.activation, current()));
        }
        add(std::make_unique<Linear>(current().size(), classes));
    } else if (spec.type == "cnn") {
        if (shape.height < 4 || shape.width < 4)
            throw std::invalid_argument("model: the cnn needs images of at least 4x4 pixels");
        for (int channels : {spec.convChannels1, spec.convChannels2}) {
            if (channels < 1 || channels > 1024)
                throw std::invalid_argument("model.conv_channels: " + std::to_string(channels) +
                                            " out of range 1..1024");
            add(std::make_unique<Conv2d>(current(), channels, spec.convKernel));
            add(std::make_unique<Activation>(spec.activation, current()));
            add(std::make_unique<MaxPool2d>(current()));
        }
        add(std::make_unique<Flatten>(current()));
        add(std::make_unique<Linear>(current().size(), classes));
    } else {
        throw std::invalid_argument("model.type \"" + spec.type + "\": expected mlp or cnn");
    }
}

void Model::add(std::unique_ptr<Layer> layer) {
    if (layer->hasWeights())
        m_stageWeightLayer.push_back(m_layers.size());
    m_stageOf.push_back(std::max(0, static_cast<int>(m_stageWeightLayer.size()) - 1));
    m_offsets.push_back(m_parameterCount);
    m_parameterCount += layer->parameterCount();
    m_layers.push_back(std::move(layer));
}

bool Model::endsStage(std::size_t layer) const {
    if (m_stageWeightLayer.empty() || layer < m_stageWeightLayer.front())
        return false; // input preparation (e.g. the MLP's flatten) belongs to no stage
    return layer + 1 == m_layers.size() || m_layers[layer + 1]->hasWeights();
}

std::string Model::stageName(int stage) const {
    std::string name = "L"; // appends: GCC 12 warns falsely (-Wrestrict) on "L" + std::string
    name += std::to_string(stage);
    name += ' ';
    name += m_layers[stageWeightLayer(stage)]->describe();
    return name;
}

void Model::initParameters(float* params, std::uint64_t seed, InitKind init, float scale) const {
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < m_layers.size(); ++i)
        m_layers[i]->initParameters(params + m_offsets[i], rng, init, scale);
}

} // namespace plab
