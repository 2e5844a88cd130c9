#pragma once
/// \file pool.h
/// Host-only launchers of the CUDA executor's pooling and reduction kernels (src/kernels/pool/pool.cu):
/// 2-D MaxPool / AveragePool over NCHW, GlobalAveragePool, Softmax. float32 or float16 data,
/// float32 arithmetic; semantics of ws::ref::{max_pool_nd, average_pool_nd, global_average_pool,
/// softmax}. Enqueue only: no allocation, no synchronisation, capturable.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"
#include "warpstream/status.h"

namespace ws::kernels {

struct Pool2dParams {
  int64_t planes = 0;  ///< N × C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t k_h = 1, k_w = 1, s_h = 1, s_w = 1, d_h = 1, d_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;  ///< AveragePool only
};
Status max_pool_2d(ElemType t, const void* x, void* y, const Pool2dParams& p, cudaStream_t stream);
/// MaxPool-12 with its Indices output: indices[i] (int64, one per output) = the flat N·C·H·W index of the maximum
/// (storage_order 0: h·W + w within the plane, 1: h + w·H; plus plane·H·W), -1 for a window entirely in padding.
Status max_pool_2d_indices(ElemType t, const void* x, void* y, int64_t* indices, int storage_order, const Pool2dParams& p,
                           cudaStream_t stream);
Status average_pool_2d(ElemType t, const void* x, void* y, const Pool2dParams& p, cudaStream_t stream);
/// y[p] = mean(x[p*spatial .. (p+1)*spatial)), p < planes. One warp per plane.
Status global_average_pool(ElemType t, const void* x, void* y, int64_t planes, int64_t spatial, cudaStream_t stream);
/// Softmax over axis_len for each (outer, inner) position; one warp per position.
Status softmax(ElemType t, const void* x, void* y, int64_t outer, int64_t axis_len, int64_t inner, cudaStream_t stream);

}  // namespace ws::kernels
