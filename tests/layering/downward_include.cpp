// Compiled with plab_train's include folders by test_layering_build_allows_downward: the guards
// stop only upward includes; a trainer may include the numerics and the record below it.
#include "numerics/format_spec.h"
#include "record/run_record.h"
#include "train/train_config.h"
