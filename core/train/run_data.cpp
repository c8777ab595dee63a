#include "train/run_data.h"

#include "data/text_corpus.h"

namespace plab {
namespace {

bool isTextSource(const std::string& source) {
    return source == "fortunes" || source.starts_with("text:");
}

} // namespace

std::shared_ptr<const DataSplit> loadRunData(const TrainConfig& config) {
    const std::string& source = config.dataSource;
    if (config.model.type == "gpt") {
        auto split = std::make_shared<DataSplit>();
        const int context = config.model.context;
        if (source == "synthetic")
            split->text = std::make_shared<const TextCorpus>(
                makeSyntheticText(config.seed, kSyntheticTextBytes, context));
        else if (source == "fortunes")
            split->text = std::make_shared<const TextCorpus>(loadFortunes(context));
        else if (source.starts_with("text:"))
            split->text =
                std::make_shared<const TextCorpus>(loadTextFile(source.substr(5), context));
        else
            throw ConfigError("config.data.source: \"" + source +
                              "\" is not text (the gpt model expected synthetic, fortunes or "
                              "text:FILE)");
        return split;
    }
    if (isTextSource(source))
        throw ConfigError("config.data.source: \"" + source +
                          "\" is text, which only the gpt "
                          "model reads (the " +
                          config.model.type +
                          " expected synthetic, fashion-mnist or an IDX directory)");
    if (source == "synthetic")
        return std::make_shared<const DataSplit>(
            makeSyntheticData(config.seed, config.syntheticTrain, config.syntheticTest));
    const std::string dir = source == "fashion-mnist" ? kFashionMnistDir : source;
    return std::make_shared<const DataSplit>(loadIdxDirectory(dir));
}

std::string runDataKey(const TrainConfig& config) {
    std::string key = config.model.type == "gpt" ? "text/" : "images/";
    if (config.model.type == "gpt")
        key += std::to_string(config.model.context) + "/";
    key += config.dataSource;
    if (config.dataSource == "synthetic") {
        for (const auto n : {static_cast<std::uint64_t>(config.seed),
                             static_cast<std::uint64_t>(config.syntheticTrain),
                             static_cast<std::uint64_t>(config.syntheticTest)}) {
            key += '/';
            key += std::to_string(n);
        }
    }
    return key;
}

std::string describeData(const DataSplit& data) {
    if (data.text)
        return data.text->name + " (" + std::to_string(data.text->train.size()) + " train / " +
               std::to_string(data.text->validation.size()) + " validation bytes)";
    return data.train.name + " (" + std::to_string(data.train.count()) + " train / " +
           std::to_string(data.test.count()) + " test)";
}

} // namespace plab
