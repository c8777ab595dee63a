// A fixture of test_layering_catches_upward: util may include nothing above it, so the
// layering check must refuse this file.
#pragma once

#include "train/trainer.h"
#include "util/thread_pool.h"
