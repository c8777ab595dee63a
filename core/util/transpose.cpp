// 8 x 8 tiles transposed in vector registers (util/lane_exchange.h: three rounds of two-vector
// shuffles), the ragged edges element by element.
// Eigen's element-by-element assignment of a transposed map was ~4% of an NVFP4 MLP step.
#include "util/transpose.h"

#include "util/lane_exchange.h"
#include "util/vector_clones.h"

#include <cstring>

namespace plab {
#if defined(__GNUC__)
namespace {
using F8 = float __attribute__((vector_size(32)));
} // namespace
#endif

PLAB_VECTOR_CLONES
void transposeMatrix(float* out, const float* in, std::size_t rows, std::size_t cols) {
    std::size_t r0 = 0;
#if defined(__GNUC__)
    for (; r0 + 8 <= rows; r0 += 8) {
        std::size_t c0 = 0;
        for (; c0 + 8 <= cols; c0 += 8) {
            F8 v[8]; // v[j]: row r0 + j, columns c0..c0+7
            for (std::size_t j = 0; j < 8; ++j)
                std::memcpy(&v[j], in + (r0 + j) * cols + c0, sizeof(F8));
            lane_exchange::exchangeRounds(v);
            for (std::size_t j = 0; j < 8; ++j) // v[j]: column c0 + j, rows r0..r0+7
                std::memcpy(out + (c0 + j) * rows + r0, &v[j], sizeof(F8));
        }
        for (std::size_t r = r0; r < r0 + 8; ++r)
            for (std::size_t c = c0; c < cols; ++c)
                out[c * rows + r] = in[r * cols + c];
    }
#endif
    for (std::size_t r = r0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
            out[c * rows + r] = in[r * cols + c];
}

} // namespace plab
