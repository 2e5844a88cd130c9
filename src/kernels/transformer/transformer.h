#pragma once
/// \file transformer.h
/// Host-only launchers of WarpStream's transformer kernels (src/kernels/transformer/*.cu) for the LTX-Video
/// block (diffusers' LTXVideoTransformerBlock; the math is in shared/research/ltx-video-and-streaming.md 1.3–1.5):
/// RMSNorm / LayerNorm with the AdaLN modulation x·(1+scale)+shift fused in, the gated residual add (optionally
/// fused with the next norm + modulation), q/k RMSNorm across heads fused with LTX's interleaved RoPE, GELU-tanh
/// (+ bias), and an SDPA fallback (flash-style online softmax) for what cuDNN refuses.
///
/// Conventions (every function):
/// - Activations are bf16 (`__nv_bfloat16`), row-major [rows, dim] with rows = B·S tokens (row t = token t % S
///   of sample t / S); arithmetic and accumulation in float32; each output element is rounded to bf16 once
///   (round to nearest even). Intermediates are NOT rounded to bf16 the way PyTorch rounds between its ops
///   (e.g. after the norm, after 1+scale): results are the fp32 formula rounded once, so they differ from
///   diffusers' bf16 module by a few bf16 ulps at most.
/// - All pointers are device pointers. Launchers enqueue on `stream`, allocate nothing, synchronise nothing and
///   are capturable in a CUDA graph. In-place use is allowed where a function says so (same pointer, no
///   partial overlap).
/// - Errors (Status): kInvalidArgument for non-positive or inconsistent sizes, null required pointers, more
///   than 2^31−1 rows / grid blocks; kUnsupported for a shape the kernel does not cover (said per function);
///   kCuda for a failed launch (cudaGetLastError after the launch).
/// - Vectorised paths (16-byte loads, 8 bf16) are taken when dim % 8 == 0 and every row pointer is 16-byte
///   aligned; otherwise a generic path (any dim) runs — same results up to fp32 summation order.
/// Test: tests/gpu/transformer_kernels_test.cpp (ws_gpu_tests --gtest_filter='TransformerKernels*').

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/status.h"

namespace ws::kernels {

/// The AdaLN modulation source of one block (or the output head): the chunk c value of channel d for x row t is
///   ada(t, c, d) = table[c][d] + temb[(t / tokens_per_temb_row) · temb_row_stride + c · temb_chunk_stride + d]
/// - Block (diffusers `scale_shift_table[6,D] + temb.reshape(B,S',6,D)`): table [6, D], temb [B·S', 6D],
///   temb_row_stride = 6D, temb_chunk_stride = D; chunks kShiftMsa..kGateMlp.
/// - Output head (`scale_shift_table[2,D] + embedded_timestep[:,:,None]`): table [2, D], temb [B·S', D],
///   temb_row_stride = D, temb_chunk_stride = 0 (one vector shared by shift and scale); shift chunk 0, scale 1.
/// - tokens_per_temb_row: S for a per-sample temb (timestep (B,); one temb row per sample, broadcast over its
///   S tokens), 1 for a per-token temb (timestep (B,S)).
/// table: bf16 or float32 (table_fp32) or nullptr (zeros); temb: bf16 or nullptr (zeros).
struct AdaLnTable {
  const void* table = nullptr;
  bool table_fp32 = false;
  const __nv_bfloat16* temb = nullptr;
  int64_t temb_row_stride = 0;
  int64_t temb_chunk_stride = 0;
  int64_t tokens_per_temb_row = 1;
};
/// Chunk order of diffusers' 6-way split (`ada.unbind(2)`).
inline constexpr int kShiftMsa = 0, kScaleMsa = 1, kGateMsa = 2, kShiftMlp = 3, kScaleMlp = 4, kGateMlp = 5;
/// Output head chunks (model-level scale_shift_table[2, D]).
inline constexpr int kShiftOut = 0, kScaleOut = 1;
/// Largest chunk index accepted (table rows are not passed; the caller guarantees chunk < table rows).
inline constexpr int kMaxAdaChunk = 5;

enum class NormKind {
  kRmsNorm,    ///< x · rsqrt(mean(x²) + eps)
  kLayerNorm,  ///< (x − mean) · rsqrt(var + eps), biased variance, no affine (the model's norm_out)
};

/// y[t][d] = Norm(x[t])[d] · (weight ? weight[d] : 1) · (1 + ada(t, scale_chunk, d)) + ada(t, shift_chunk, d)
/// (mod == nullptr: no modulation, y = Norm(x)·weight). x, y: bf16 [rows, dim]; y may equal x.
/// weight: bf16 [dim] or nullptr. One block per row (≤ 256 threads; the row stays in registers when
/// dim % 8 == 0 and dim ≤ 8192). Errors: rows/dim < 1, eps < 0, chunk outside 0..kMaxAdaChunk,
/// tokens_per_temb_row < 1 (with temb).
Status norm_modulate(NormKind kind, const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t dim, float eps,
                     const __nv_bfloat16* weight, const AdaLnTable* mod, int shift_chunk, int scale_chunk,
                     cudaStream_t stream);

/// Block norm1/norm2: RMSNorm (no affine) + modulation, e.g. (mod, kShiftMsa, kScaleMsa).
inline Status rms_norm_modulate(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t dim, float eps,
                                const AdaLnTable& mod, int shift_chunk, int scale_chunk, cudaStream_t stream) {
  return norm_modulate(NormKind::kRmsNorm, x, y, rows, dim, eps, nullptr, &mod, shift_chunk, scale_chunk, stream);
}
/// Plain RMSNorm, optional affine weight (bf16 [dim] or nullptr).
inline Status rms_norm(const __nv_bfloat16* x, __nv_bfloat16* y, const __nv_bfloat16* weight, int64_t rows,
                       int64_t dim, float eps, cudaStream_t stream) {
  return norm_modulate(NormKind::kRmsNorm, x, y, rows, dim, eps, weight, nullptr, 0, 0, stream);
}
/// Output head: LayerNorm (no affine) + modulation with (mod, kShiftOut, kScaleOut).
inline Status layer_norm_modulate(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t dim, float eps,
                                  const AdaLnTable& mod, int shift_chunk, int scale_chunk, cudaStream_t stream) {
  return norm_modulate(NormKind::kLayerNorm, x, y, rows, dim, eps, nullptr, &mod, shift_chunk, scale_chunk, stream);
}

/// Gated residual add, in place on the residual stream x (bf16 [rows, dim]):
///   x[t][d] += (y[t][d] + (y_bias ? y_bias[d] : 0)) · (gate ? ada(t, gate_chunk, d) : 1)
/// y: bf16 [rows, dim] (the attention / FF output); y_bias: bf16 [dim] or nullptr (a bias the GEMM epilogue did
/// not add). gate == nullptr: plain residual add (attn2). Per-token gate: gate->tokens_per_temb_row = 1.
/// When `norm_out` is not null the same pass then writes
///   norm_out[t] = RMSNorm(x_new[t]; eps) · (1 + ada(t, scale_chunk, d)) + ada(t, shift_chunk, d)
/// (norm2 after attn2: `mod` = the block's table, chunks kShiftMlp/kScaleMlp; mod nullptr = no modulation),
/// computed from the bf16-rounded new x (what a separate norm pass would read). norm_out must not alias x or y.
/// Errors as norm_modulate; gate_chunk checked only when gate != nullptr.
Status gated_residual_add(__nv_bfloat16* x, const __nv_bfloat16* y, const __nv_bfloat16* y_bias, int64_t rows,
                          int64_t dim, const AdaLnTable* gate, int gate_chunk, cudaStream_t stream,
                          __nv_bfloat16* norm_out = nullptr, float eps = 1e-6f, const AdaLnTable* mod = nullptr,
                          int shift_chunk = kShiftMlp, int scale_chunk = kScaleMlp);

/// q/k RMSNorm across heads (over the full inner dim; torch.nn.RMSNorm, eps 1e-5, affine weight) fused with
/// LTX's interleaved RoPE over the full inner dim (applied before the head split):
///   n = x[t] · rsqrt(mean(x[t]²) + eps) · weight
///   y[t][2i]   = n[2i]·cos[.][2i]     − n[2i+1]·sin[.][2i]
///   y[t][2i+1] = n[2i+1]·cos[.][2i+1] + n[2i]·sin[.][2i+1]
/// with cos/sin float32 tables indexed [(t / seq) · rope_batch_stride + (t % seq) · dim + d]: rope_batch_stride = 0
/// for one [seq, dim] table broadcast over the batch, seq·dim for [B, seq, dim] (per-sample coords).
/// cos/sin == nullptr: no rotation (plain affine RMSNorm). Tensor 0 = (x0, y0, w0); tensor 1 = (x1, y1, w1) is
/// optional (x1 == nullptr: one tensor) — q and k of attn1 in one launch (same rows, dim, tables).
/// Each y may equal its x (in place). x, y: bf16 [rows, dim], rows = batch · seq; w: bf16 [dim] or nullptr.
/// Errors: dim odd, rows % seq != 0, sizes < 1, eps < 0.
Status qk_rmsnorm_rope(const __nv_bfloat16* x0, __nv_bfloat16* y0, const __nv_bfloat16* w0, const __nv_bfloat16* x1,
                       __nv_bfloat16* y1, const __nv_bfloat16* w1, int64_t rows, int64_t seq, int64_t dim, float eps,
                       const float* cos, const float* sin, int64_t rope_batch_stride, cudaStream_t stream);

/// y[t][d] = gelu_tanh(x[t][d] + (bias ? bias[d] : 0)), gelu_tanh(v) = 0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))
/// (torch GELU(approximate="tanh")). x, y: bf16 [rows, dim] (y may equal x); bias: bf16 [dim] or nullptr.
/// For where the GEMM epilogue cannot apply it. Errors: rows/dim < 1.
Status bias_gelu_tanh(const __nv_bfloat16* x, __nv_bfloat16* y, const __nv_bfloat16* bias, int64_t rows, int64_t dim,
                      cudaStream_t stream);

/// Standalone GELU-tanh over `count` contiguous elements (bias_gelu_tanh without a bias). y may equal x.
inline Status gelu_tanh(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t count, cudaStream_t stream) {
  return bias_gelu_tanh(x, y, nullptr, 1, count, stream);
}

/// Scaled dot-product attention (non-causal) in the projections' layout, no permute:
///   q: [B, Sq, H·Dh], k/v: [B, Skv, H·Dh], o: [B, Sq, H·Dh], all bf16, row stride H·Dh elements;
///   o[b,s,h] = softmax_j(scale · q[b,s,h]·k[b,j,h] + key_bias[b][j]) · v[b,j,h]
/// key_bias: float32 [B, Skv] additive (diffusers' (1 − mask)·−10000 for attn2) or nullptr. scale: usually
/// 1/sqrt(Dh). Softmax and accumulation in float32 (online softmax over key tiles; a query whose every key is
/// −inf gets 0). o must not alias q/k/v.
struct SdpaDims {
  int64_t batch = 1, seq_q = 1, seq_kv = 1, heads = 1, head_dim = 64;
};
/// Kernel variants (both: head_dim a multiple of 8, ≤ 128; smaller head dims are zero-padded to 16/32/64/128):
/// - kSimt: one thread per query row, K/V tiles in shared memory, CUDA-core FMA; any compute capability.
/// - kMma: tensor cores (mma.sync m16n8k16 bf16, fp32 accumulate; FlashAttention-2 register layout: 4 warps ×
///   16 query rows, 64-key tiles); P is rounded to bf16 for the P·V product (the row sum uses the same
///   rounded P). Needs compute capability ≥ 8.0 (checked at launch: kUnsupported).
/// Errors: head_dim outside that set (kUnsupported), sizes < 1, more than 65535 heads or batches, pointers not
/// 16-byte aligned (kUnsupported), o aliasing q/k/v, non-finite scale.
enum class SdpaKernel { kSimt, kMma };
const char* sdpa_kernel_name(SdpaKernel k);
bool sdpa_supported(SdpaKernel k, const SdpaDims& d);
Status sdpa(SdpaKernel k, const SdpaDims& d, const __nv_bfloat16* q, const __nv_bfloat16* kmat,
            const __nv_bfloat16* v, const float* key_bias, float scale, __nv_bfloat16* o, cudaStream_t stream);

}  // namespace ws::kernels
