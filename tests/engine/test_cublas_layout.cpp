// The cuBLAS operand layout (core/cuda/cublas_layout.h) on the host: every GemmCall the engine
// makes (each operand row-major or transposed, every size from 1 up, including the one-feature
// linear layers whose strides are both 1) goes through an emulation of cublasSgemm's column-major
// contract, argument checks included, and must give the row-major product. Plain C++: no CUDA,
// no Qt, so it runs in every CI build.
#include "cuda/cublas_layout.h"

#include <cstdio>
#include <vector>

namespace {

using plab::GemmCall;
using plab::cuda::CublasGemmLayout;

// cublasSgemm(transa, transb, m, n, k, alpha = 1, A, lda, B, ldb, beta, C, ldc) as documented:
// C (m, n) column-major = op(A) (m, k) op(B) (k, n) [+ C]. Returns 7 (CUBLAS_STATUS_INVALID_VALUE)
// where cuBLAS rejects the leading dimensions, 0 otherwise.
int emulatedSgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
                  int ldb, bool accumulate, float* c, int ldc) {
    const auto atLeast = [](int x) { return x > 1 ? x : 1; };
    if (lda < atLeast(ta ? k : m) || ldb < atLeast(tb ? n : k) || ldc < atLeast(m))
        return 7;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int p = 0; p < k; ++p) {
                const float av = ta ? a[p + i * lda] : a[i + p * lda];
                const float bv = tb ? b[j + p * ldb] : b[p + j * ldb];
                sum += av * bv;
            }
            float& out = c[i + j * ldc];
            out = accumulate ? out + sum : sum;
        }
    return 0;
}

int failures = 0, checks = 0;

void expect(bool ok, const char* what, int m, int n, int k, bool aT, bool bT) {
    ++checks;
    if (!ok) {
        ++failures;
        std::printf("FAIL %s: m %d n %d k %d, A %s, B %s\n", what, m, n, k,
                    aT ? "transposed" : "row-major", bT ? "transposed" : "row-major");
    }
}

void checkProduct(int m, int n, int k, bool aTransposed, bool bTransposed, bool accumulate) {
    // Small integers: every sum is exact, so the order of summation cannot matter.
    std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = static_cast<float>(static_cast<int>(i * 5 % 13) - 6);
    GemmCall g{};
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = a.data();
    g.b = b.data();
    // A (m, k): row-major a[m*k + k] or its transpose stored row-major a[k*m + m].
    g.am = aTransposed ? 1 : static_cast<std::size_t>(k);
    g.ak = aTransposed ? static_cast<std::size_t>(m) : 1;
    g.bk = bTransposed ? 1 : static_cast<std::size_t>(n);
    g.bn = bTransposed ? static_cast<std::size_t>(k) : 1;
    g.accumulate = accumulate;

    std::vector<float> expected(static_cast<std::size_t>(m) * n, 3.0f);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int p = 0; p < k; ++p)
                sum += a[i * g.am + p * g.ak] * b[p * g.bk + j * g.bn];
            float& out = expected[static_cast<std::size_t>(i) * n + j];
            out = accumulate ? out + sum : sum;
        }

    std::vector<float> c(expected.size(), 3.0f);
    g.c = c.data();
    const CublasGemmLayout l = plab::cuda::cublasLayoutOf(g);
    const int status = emulatedSgemm(l.first.transpose, l.second.transpose, n, m, k, g.b,
                                     l.first.ld, g.a, l.second.ld, accumulate, g.c, l.ldc);
    expect(status == 0, "cuBLAS would reject the leading dimensions", m, n, k, aTransposed,
           bTransposed);
    if (status == 0)
        expect(c == expected, "product differs from the row-major definition", m, n, k, aTransposed,
               bTransposed);
}

} // namespace

int main() {
    for (int m : {1, 2, 3, 17})
        for (int n : {1, 2, 5})
            for (int k : {1, 3, 4})
                for (bool aT : {false, true})
                    for (bool bT : {false, true})
                        for (bool acc : {false, true})
                            checkProduct(m, n, k, aT, bT, acc);
    std::printf("cuBLAS layout: %d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
