// A fixture of test_layering_catches_upward: util may include nothing above it, so the
// layering check must refuse this file.
#pragma once

#include "util/thread_pool.h"
#include "train/trainer.h"
