// One plain FP32 matrix product as the engines hand it to a GEMM (cuBLAS, a kernel, Eigen).
#pragma once

#include <cstddef>

namespace plab {

// C (M, N) row-major = or += sum_k A(m, k) B(k, n), A(m, k) = a[m*am + k*ak], B(k, n) =
// b[k*bk + n*bn]: the three products of a linear layer are this with different strides (each
// operand has one unit stride: it is row-major or transposed).
struct GemmCall {
    float* c;
    const float* a;
    const float* b;
    int m, n, k;
    std::size_t am, ak, bk, bn;
    bool accumulate;
};

} // namespace plab
