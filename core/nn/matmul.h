// Matrix products for the layers: Eigen (handing the work to OpenBLAS where the build found it),
// with optional emulation of low-precision accumulation: the running sum is rounded to a format
// every `every` products, as hardware with a narrow accumulator would.
#pragma once

#include <Eigen/Core>

namespace plab {

class Quantizer;
class ThreadPool;
struct QuantConfig;

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

// How matrix products accumulate. quantizer == nullptr: plain FP32.
//   every:        the running sum is rounded to the format after every `every` products (0: once
//                 at the end), the products in between summed in FP32;
//   promoteEvery: chunks of that many products are summed in the format, rounded after every
//                 addition, and each chunk's sum is added to an FP32 total (DeepSeek-V3's
//                 promotion of a narrow Tensor Core accumulator). Takes precedence over every.
//   pool:         the threads the emulation may spread over (null: the calling thread); the
//                 results do not depend on how many there are. Plain products thread through
//                 OpenBLAS instead.
struct Accumulation {
    const Quantizer* quantizer = nullptr;
    int every = 0;
    int promoteEvery = 0;
    ThreadPool* pool = nullptr;
};

// True for nearest-even rounding to a format with FP32's exponent field (8 bits, bias 127,
// subnormals, Inf/NaN; e.g. e8m13): then rounding is adding to the bits and masking the dropped
// mantissa bits (the carry runs into the exponent), which vector loops and GPU threads do
// cheaply; the promoted products take that path, other formats go through the Quantizer.
bool hasFp32Range(const QuantConfig& config);

// C = A * B (beta == 0) or C += A * B (beta == 1); A is (M, K), B is (K, N), either given
// transposed through Eigen's .transpose() views by the callers below.
void matmulNT(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc); // C (M,N) = A (M,K) * B(N,K)^T
void matmulNN(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc); // C (M,N) = A (M,K) * B(K,N)
void matmulTN(MatrixMap c, ConstMatrixMap a, ConstMatrixMap b, bool accumulate,
              const Accumulation& acc); // C (M,N) = A (K,M)^T * B(K,N)

// Plain FP32 C (M, N) = alpha op(A) op(B) + beta C on row-major arrays with leading dimensions
// (strided views: an attention head's columns): one BLAS sgemm call where the build has OpenBLAS
// (beta 0 writes C without clearing it first, as Eigen's products do), Eigen's product otherwise.
// opA (M, K) is A transposed when transA (A then stored K x M), likewise B.
void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

} // namespace plab
