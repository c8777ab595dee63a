// The CUDA training engine (TensorOps on one device); see cuda_ops.cu.
#pragma once

#include "engine/tensor_ops.h"

#include <memory>

namespace plab {

// Throws std::runtime_error naming the device when it cannot be set up.
std::unique_ptr<TensorOps> makeCudaOps(int device);

} // namespace plab
