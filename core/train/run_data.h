// The data a run's config asks for, in one place for the CLI, the GUI and the Compare dialog:
// images (the synthetic set, Fashion-MNIST, an IDX directory) for the MLP and the CNN; text (the
// synthetic text, Debian's fortunes, text:FILE) for the GPT.
#pragma once

#include "data/dataset.h"
#include "train/train_config.h"

#include <memory>
#include <string>

namespace plab {

// Bytes of the built-in synthetic text the GPT trains on by default.
inline constexpr std::size_t kSyntheticTextBytes = std::size_t{1} << 21;

// Throws DataError naming the file or directory that cannot be read, and ConfigError
// ("config.data.source: ...") for a source the model cannot read (text for an image model,
// images for the GPT).
std::shared_ptr<const DataSplit> loadRunData(const TrainConfig& config);

// What loadRunData's result depends on: configs with the same key get equal data (the seed
// counts only for the generated sources), so runs over seeds on a file share one copy.
std::string runDataKey(const TrainConfig& config);

// One line for the user: "fashion-mnist (60000 train / 10000 test)" or "fortunes text (... train
// / ... validation bytes)".
std::string describeData(const DataSplit& data);

} // namespace plab
