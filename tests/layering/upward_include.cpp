// Compiled with plab_numerics' include folders by test_layering_build_refuses_upward: the trainer's
// config sits floors above the numerics, so the build must stop here, naming the rule.
#include "train/train_config.h"
