// cuBLAS, loaded at run time (dlopen) on first use. This toolkit ships cuBLAS only as a shared
// library; linking it would stop the binaries starting on machines without CUDA and give the
// package a dependency Debian does not have. Without it the engine uses its own GEMM kernel.
#pragma once

#include "engine/gemm_call.h"

#include <string>

namespace plab::cuda {

class CublasLibrary {
public:
    // The process-wide library, or null when it cannot be loaded or PLAB_NO_CUBLAS is set
    // (tests use that to check the engine's own kernel on a machine that has cuBLAS).
    static const CublasLibrary* instance();
    // Why instance() is null (the loader's message, a missing entry point, or PLAB_NO_CUBLAS);
    // empty when it is not. Shown in the engine's name, so a quiet fallback is visible.
    static const std::string& unavailableReason();

    // A handle bound to a stream (cudaStream_t); null on failure, with the reason in *why.
    void* createHandle(void* stream, std::string* why) const;
    void destroyHandle(void* handle) const;
    // The row-major product in FP32 with FP32 accumulation (the default math mode: no TF32).
    // Returns cuBLAS's status (0 = success).
    int sgemm(void* handle, const GemmCall& call) const;
    const std::string& path() const { return m_path; }

private:
    CublasLibrary() = default;
    std::string m_path;
    void* m_create = nullptr;
    void* m_destroy = nullptr;
    void* m_setStream = nullptr;
    void* m_sgemm = nullptr;
};

} // namespace plab::cuda
