#pragma once
/// \file ltx_block_kernels.h
/// The GPU LTX-Video block's own kernels for what the shared transformer family (src/kernels/transformer/
/// transformer.h: norm+modulation, gated residual(+norm2), which the block also uses) does not cover in its layout:
/// q/k RMSNorm+RoPE and SDPA on row-strided slices of the fused QKV / KV GEMM outputs (the shared kernels want dense
/// [rows, dim] tensors), a bf16 key bias (what cuDNN takes), and the fp8 activation quantization / follow-up scaling
/// (diffusers LTXVideoTransformerBlock, see /work/shared/research/ltx-video-and-streaming.md sections 1.3-1.5).
/// Host-only declarations; device pointers; every launcher only enqueues on `stream` (no allocation, no sync,
/// CUDA-graph capturable) and returns the launch status naming the kernel.
/// Math as the CPU reference (src/reference/ltx.h) computes it: fp32 arithmetic, one bf16 rounding per output.
/// Layouts: activations row-major bf16 [rows, cols] with an explicit row stride `ld` in elements (a slice of a fused
/// QKV GEMM output [rows, 3D] is addressed in place).

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/status.h"

namespace ws::flow::ltx {

/// In place on x (bf16 rows of `dim` elements, row stride `ld`): x = rms(x) * weight (RMSNorm with affine over the
/// whole inner dim, "across heads"), then, when cos/sin are given, LTX's interleaved RoPE:
/// out[2i] = x[2i]*cos[2i] - x[2i+1]*sin[2i], out[2i+1] = x[2i+1]*cos[2i+1] + x[2i]*sin[2i+1] (fp32 tables [S, dim],
/// row r uses table row r % tokens). dim even. One 256-thread block per row.
Status qk_norm_rope(void* x, int64_t ld, const void* weight, const float* cos, const float* sin, int rows, int tokens,
                    int dim, float eps, cudaStream_t stream);

/// Fallback SDPA (non-causal; softmax(q k^T * scale + bias) v, fp32 online softmax). q: [B, Sq, ld_q] bf16 with head h
/// at columns h*Dh .. h*Dh+Dh-1 (the [B,S,H*Dh] layout, no permute), k/v likewise with ld_k/ld_v and Skv rows,
/// o: [B, Sq, ld_o]. bias: bf16 [B, Skv] additive (broadcast over heads and queries) or null. head_dim <= 128.
/// Thread mapping: one warp per (query row, head, batch); keys in tiles of 32, lane j scores key j of the tile,
/// then the warp accumulates p*V with lane d owning output dims d, d+32, ...
Status sdpa_fallback(const void* q, int64_t ld_q, const void* k, int64_t ld_k, const void* v, int64_t ld_v, void* o,
                     int64_t ld_o, const void* bias, int batch, int heads, int head_dim, int sq, int skv, float scale,
                     cudaStream_t stream);

/// Per-row (per-token) symmetric quantization to fp8 e4m3: scale[r] = max(absmax(x[r,:]) / 448, tiny),
/// q[r,c] = e4m3(x[r,c] / scale[r]) (round to nearest, saturating). x: bf16 [rows, cols] (row stride ld), q dense.
Status quantize_rows_e4m3(const void* x, int64_t ld, void* q, float* scale, int rows, int cols, cudaStream_t stream);

/// Per-row (per-token) symmetric quantization to int8: scale[r] = max(absmax(x[r,:]) / 127, tiny),
/// q[r,c] = clamp(rint(x[r,c] / scale[r]), -127, 127). x: bf16 [rows, cols] (row stride ld), q dense.
Status quantize_rows_s8(const void* x, int64_t ld, void* q, float* scale, int rows, int cols, cudaStream_t stream);

/// y[r, c] = y[r, c] * col_scale[c] * row_scale[r] + bias[c], then GELU-tanh when `gelu` (bf16 [rows, cols] in place;
/// bias bf16 or null). The follow-up scaling of an fp8 GEMM when cuBLASLt lacks per-channel scale modes.
Status scale_bias_act(void* y, const float* row_scale, const float* col_scale, const void* bias, bool gelu, int rows,
                      int cols, cudaStream_t stream);

}  // namespace ws::flow::ltx
