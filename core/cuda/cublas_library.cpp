// CublasLibrary: dlopen/dlsym of the four cuBLAS entry points the engine uses.
#include "cuda/cublas_library.h"

#include "cuda/cublas_layout.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace plab::cuda {
namespace {

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SgemmFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const float*, const float*, int, const float*, int,
                                   const float*, float*, int);

std::string& unavailable() {
    static std::string reason;
    return reason;
}

} // namespace

const std::string& CublasLibrary::unavailableReason() {
    instance();
    return unavailable();
}

const CublasLibrary* CublasLibrary::instance() {
    static const CublasLibrary* const library = []() -> const CublasLibrary* {
        if (std::getenv("PLAB_NO_CUBLAS") != nullptr) {
            unavailable() = "PLAB_NO_CUBLAS is set";
            return nullptr;
        }
        // The soname this toolkit links against first, then the toolkit's own folder (often not
        // on the loader's path).
        std::string why;
        for (const char* name : {"libcublas.so." PLAB_CUBLAS_MAJOR, "libcublas.so",
                                 "/usr/local/cuda/lib64/libcublas.so." PLAB_CUBLAS_MAJOR}) {
            void* so = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (so == nullptr) {
                if (why.empty()) // the first name's failure says the most
                    why = dlerror();
                continue;
            }
            auto* l = new CublasLibrary; // lives as long as the process, like the library
            l->m_path = name;
            l->m_create = dlsym(so, "cublasCreate_v2");
            l->m_destroy = dlsym(so, "cublasDestroy_v2");
            l->m_setStream = dlsym(so, "cublasSetStream_v2");
            l->m_sgemm = dlsym(so, "cublasSgemm_v2");
            if (l->m_create && l->m_destroy && l->m_setStream && l->m_sgemm)
                return l;
            why = std::string(name) + " lacks one of cublasCreate_v2, cublasDestroy_v2, "
                                      "cublasSetStream_v2, cublasSgemm_v2";
            delete l;
            dlclose(so);
        }
        unavailable() = "cuBLAS not loaded: " + why;
        return nullptr;
    }();
    return library;
}

void* CublasLibrary::createHandle(void* stream, std::string* why) const {
    cublasHandle_t h = nullptr;
    if (const cublasStatus_t st = reinterpret_cast<CreateFn>(m_create)(&h);
        st != CUBLAS_STATUS_SUCCESS) {
        *why = "cublasCreate failed (status " + std::to_string(static_cast<int>(st)) + ")";
        return nullptr;
    }
    if (const cublasStatus_t st =
            reinterpret_cast<SetStreamFn>(m_setStream)(h, static_cast<cudaStream_t>(stream));
        st != CUBLAS_STATUS_SUCCESS) {
        *why = "cublasSetStream failed (status " + std::to_string(static_cast<int>(st)) + ")";
        reinterpret_cast<DestroyFn>(m_destroy)(h);
        return nullptr;
    }
    return h;
}

void CublasLibrary::destroyHandle(void* handle) const {
    if (handle != nullptr)
        reinterpret_cast<DestroyFn>(m_destroy)(static_cast<cublasHandle_t>(handle));
}

int CublasLibrary::sgemm(void* handle, const GemmCall& g) const {
    const CublasGemmLayout l = cublasLayoutOf(g);
    const auto op = [](const CublasOperand& o) { return o.transpose ? CUBLAS_OP_T : CUBLAS_OP_N; };
    const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
    return static_cast<int>(reinterpret_cast<SgemmFn>(m_sgemm)(
        static_cast<cublasHandle_t>(handle), op(l.first), op(l.second), g.n, g.m, g.k, &alpha, g.b,
        l.first.ld, g.a, l.second.ld, &beta, g.c, l.ldc));
}

} // namespace plab::cuda
