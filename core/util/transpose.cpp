// 8 x 8 tiles transposed in vector registers (three rounds of two-vector shuffles, each trading
// one bit of the row number for one of the column number), the ragged edges element by element.
// Eigen's element-by-element assignment of a transposed map was ~4% of an NVFP4 MLP step.
#include "util/transpose.h"

#include "util/vector_clones.h"

#include <cstring>
#include <utility>

namespace plab {
namespace {

#if defined(__GNUC__)
using F8 = float __attribute__((vector_size(32)));

// Lane L of the result: from b when its bit y is set, else from a; at L with bit y set to c.
template <int y, int c, std::size_t... L>
__attribute__((always_inline)) inline F8 exchangeBit(F8 a, F8 b, std::index_sequence<L...>) {
    return __builtin_shufflevector(
        a, b, (((L >> y) & 1) * 8 + ((L & ~(std::size_t{1} << y)) | (std::size_t{c} << y)))...);
}
// Exchanges bit r of the vector index with bit r of the lane index.
template <int r>
__attribute__((always_inline)) inline void exchangeRound(F8 (&v)[8]) {
    constexpr std::size_t bit = std::size_t{1} << r;
    for (std::size_t a = 0; a < 8; ++a) {
        if ((a & bit) != 0)
            continue;
        const F8 first = v[a], second = v[a | bit];
        v[a] = exchangeBit<r, 0>(first, second, std::make_index_sequence<8>{});
        v[a | bit] = exchangeBit<r, 1>(first, second, std::make_index_sequence<8>{});
    }
}
#endif

} // namespace

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
            exchangeRound<0>(v);
            exchangeRound<1>(v);
            exchangeRound<2>(v);
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
