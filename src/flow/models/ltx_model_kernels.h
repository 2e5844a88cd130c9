#pragma once
/// \file ltx_model_kernels.h
/// The small model-level kernels of the GPU LTX-Video transformer (ltx_model.h) that the shared transformer kernels
/// (src/kernels/transformer/transformer.h) do not cover. diffusers 0.42.1 semantics
/// (/work/shared/research/ltx-video-and-streaming.md section 1.2). All enqueue only (no sync, no allocation).

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/status.h"

namespace ws::flow::ltx {

/// diffusers Timesteps(num_channels=C, flip_sin_to_cos=True, downscale_freq_shift=0), then cast to bf16:
///   half = C/2, f_i = exp(-ln(10000) * i / half), out[r] = [cos(t_r f_0..), sin(t_r f_0..)] (cos first), fp32 math.
/// t: float32 [rows]; out: bf16 [rows, C]. C even, rows >= 1.
Status timestep_sinusoid(const float* t, void* out, int64_t rows, int channels, cudaStream_t stream);

/// y = x * sigmoid(x) elementwise (fp32 math, rounded to bf16, as torch's bf16 SiLU). x, y: bf16 [n]; y may equal x.
Status silu_bf16(const void* x, void* y, int64_t n, cudaStream_t stream);

/// diffusers' 2-D mask -> additive bias in the hidden dtype: m = bf16(mask); bias = bf16(bf16(1 - m) * -10000)
/// (so 0 -> -9984, the bf16 rounding of -10000). mask: float32 [n]; bias: bf16 [n].
Status mask_to_bias_bf16(const float* mask, void* bias, int64_t n, cudaStream_t stream);

}  // namespace ws::flow::ltx
