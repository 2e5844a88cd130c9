// CUDA runtime / driver / cuDNN / cuBLAS versions for the environment record (CUDA builds only).
#include "bench/env_cuda.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdlib>
#include <string>

namespace ws::bench {
namespace {
std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

void record_cuda_versions(EnvRecord& env) {
  int v = 0;
  cudaError_t e = cudaRuntimeGetVersion(&v);
  if (e == cudaSuccess) env.set("cuda_runtime", cuda_version_string(v));
  else env.unavailable("cuda_runtime", cudaGetErrorString(e));
  e = cudaDriverGetVersion(&v);
  if (e == cudaSuccess) env.set("cuda_driver", cuda_version_string(v));
  else env.unavailable("cuda_driver", cudaGetErrorString(e));
  // cudnnGetVersion: major*10000 + minor*100 + patch (cuDNN 9).
  size_t dn = cudnnGetVersion();
  env.set("cudnn", std::to_string(dn / 10000) + "." + std::to_string((dn % 10000) / 100) + "." + std::to_string(dn % 100));
  env.set("cudnn_headers", std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
                                std::to_string(CUDNN_PATCHLEVEL));
  // cublasLtGetVersion: major*10000 + minor*100 + patch (the library that is loaded; cuBLAS ships with it).
  size_t lt = cublasLtGetVersion();
  const std::string lts = std::to_string(lt / 10000) + "." + std::to_string((lt % 10000) / 100) + "." + std::to_string(lt % 100);
  env.set("cublaslt", lts);
  env.set("cublas", lts + " (same release as cuBLASLt)");
  env.set("cuda_headers", cuda_version_string(CUDART_VERSION));
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  env.set("cuda_module_loading", loading ? loading : "unset (driver default: LAZY)");
}

}  // namespace ws::bench
