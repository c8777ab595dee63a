// How a row-major GemmCall maps onto cuBLAS's column-major sgemm: which operand goes first,
// whether each is transposed, and its leading dimension. Plain C++ with no cuBLAS types, so the
// host tests check it (tests/engine/test_cublas_layout.cpp) on machines without CUDA.
#pragma once

#include "engine/gemm_call.h"

#include <algorithm>

namespace plab::cuda {

// One operand as cuBLAS reads it: op(X) where X is stored column-major with leading dimension
// ld, and rows is how many rows the stored X has (cuBLAS requires ld >= max(1, rows)).
struct CublasOperand {
    bool transpose = false;
    int ld = 1;
    int rows = 1;
};

// cuBLAS computes column-major C' (n, m) = op(first) (n, k) * op(second) (k, m), which is the
// row-major C (m, n) = A B: first is B^T, second is A^T, ldc = n.
struct CublasGemmLayout {
    CublasOperand first, second;
    int ldc = 1;
};

// A matrix whose element (r, c) of op(X) (R rows, C columns) sits at r * rowStride + c *
// colStride, one of the strides being 1. A unit row stride is column-major storage of op(X)
// itself (no transpose, ld = colStride, R rows stored); otherwise the stored matrix is X = op(X)^T
// (transpose, ld = rowStride, C rows stored). When both strides are 1 one of R, C is 1 and the
// leading dimension is never stepped over, but cuBLAS still checks it against the stored rows
// (status 7, CUBLAS_STATUS_INVALID_VALUE, for a linear layer with one input or output feature):
// raise it to that bound, which addresses the same elements.
inline CublasOperand cublasOperandOf(int rows, int cols, std::size_t rowStride,
                                     std::size_t colStride) {
    CublasOperand o;
    o.transpose = rowStride != 1;
    o.rows = o.transpose ? cols : rows;
    const std::size_t ld = o.transpose ? rowStride : colStride;
    o.ld = static_cast<int>(std::max<std::size_t>({ld, static_cast<std::size_t>(o.rows), 1}));
    return o;
}

inline CublasGemmLayout cublasLayoutOf(const GemmCall& g) {
    CublasGemmLayout l;
    // op(first) = B^T (n, k): element (n, k) = b[k * bk + n * bn].
    l.first = cublasOperandOf(g.n, g.k, g.bn, g.bk);
    // op(second) = A^T (k, m): element (k, m) = a[m * am + k * ak].
    l.second = cublasOperandOf(g.k, g.m, g.ak, g.am);
    l.ldc = std::max(g.n, 1);
    return l;
}

} // namespace plab::cuda
