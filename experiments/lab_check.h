#pragma once
// The lab's one error check: a CUDA call that fails prints where and why and ends the experiment (exit status 1).
// Experiments are single files built alone (nvcc -Isrc -Iinclude experiments/<name>.cu) or by CMake (exp_<name>).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
