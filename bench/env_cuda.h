#pragma once
/// \file env_cuda.h
/// CUDA-side versions for the environment record: CUDA runtime and driver API versions, cuDNN and
/// cuBLAS(Lt) versions as loaded at run time (not the headers'), plus compile-time header versions for
/// comparison. Only in CUDA builds (compiled into warpstream_bench_cuda); host-only header.

#include "bench/report.h"

namespace ws::bench {

/// Sets cuda_runtime, cuda_driver, cudnn, cudnn_headers, cublas, cublaslt, nvcc (build) and
/// cuda_module_loading (the CUDA_MODULE_LOADING environment variable); a value that cannot be read
/// says "unavailable: <why>".
void record_cuda_versions(EnvRecord& env);

}  // namespace ws::bench
