// Out-of-place transpose of a row-major float matrix: the CPU engine's layout changes (the NVFP4
// recipe casts weight-gradient inputs along the batch, so it transposes them there and back).
#pragma once

#include <cstddef>

namespace plab {

// out (cols, rows) = in (rows, cols) transposed, both row-major; out and in must not overlap.
void transposeMatrix(float* out, const float* in, std::size_t rows, std::size_t cols);

} // namespace plab
