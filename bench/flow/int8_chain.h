#pragma once
/// \file int8_chain.h
/// A chain of square INT8 layers used to exercise and time the streamer (VRAMFlow stage 04):
///   acc[M,D] (int32) = x[M,D] (int8) x W_i[D,D]^T  (W_i stored [out, in], K-contiguous: ws::kernels::gemm_s8_mma)
///   x_next[M,D] (int8) = clamp(acc >> shift, -128, 127)   (arithmetic shift: floor division by 2^shift)
/// Integer all the way, so a streamed chain must equal the resident chain bit for bit. Host-only header.

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/status.h"

namespace ws::flow {

/// x_next[i] = clamp(acc[i] >> shift, -128, 127), i < count. Enqueue only.
Status requantize_s32_to_s8(const int32_t* acc, int8_t* x_next, int64_t count, int shift, cudaStream_t stream);

/// One chain layer: GEMM on the tensor cores (gemm_s8_mma, 128x128 tile, int32 out) into `acc`, then
/// requantize into `x_next`. x and x_next must not alias. Enqueue only; no allocation.
Status chain_layer(const int8_t* x, const int8_t* w, int32_t* acc, int8_t* x_next, int m, int d, int shift,
                   cudaStream_t stream);

/// Right shift that keeps a layer's outputs mostly inside int8 for inputs uniform in [-8, 7]:
/// round(log2(21 * sqrt(d) / 32)), at least 0.
int chain_shift_for(int d);

}  // namespace ws::flow
