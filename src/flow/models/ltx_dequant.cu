// Streamed 8-bit LTX block image -> bf16 block image (ltx_dequant.h has the math and the segment table).
// Thread mapping: gridDim.y = segment; each thread handles groups of 16 elements (one 16-byte code load, two
// 16-byte bf16 stores; two groups in flight) in a grid-stride loop over the segment when the row length is a
// multiple of 16 (every LTX linear), else groups of 8 (8-byte load, one 16-byte store); the per-row scale is re-read
// per group (a group never crosses a row). Segments whose row length is not a multiple of 8 take the scalar loop. Memory-bound: ~1.5 x the 8-bit bytes of HBM traffic.
// Test: tests/gpu/ltx_model_test.cpp (LtxModelGpu.StreamedFp8EqualsDequantisedResident: the bf16 image made on the
// host by the same formula must give a bit-identical forward). Timing: `warpstream ltx --stream-weights fp8 --timeline`.
#include "flow/models/ltx_dequant.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace ws::flow::ltx {
namespace {

__device__ __forceinline__ float code_to_float(uint8_t b, int kind) {
  if (kind == LtxDequantSegment::kFp8E4M3Row) {
    __nv_fp8_e4m3 v;
    v.__x = b;
    return static_cast<float>(v);
  }
  return static_cast<float>(static_cast<int8_t>(b));
}

__global__ void dequant_block_image_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst,
                                           LtxDequantTable table) {
  const LtxDequantSegment sg = table.seg[blockIdx.y];
  const int64_t n = sg.rows * sg.cols;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (sg.kind == LtxDequantSegment::kCopyBf16) {
    if (n % 8 == 0) {
      const uint4* s = reinterpret_cast<const uint4*>(src + sg.src);
      uint4* d = reinterpret_cast<uint4*>(dst + sg.dst);
      for (int64_t g = tid; g < n / 8; g += stride) d[g] = s[g];
    } else {
      const uint16_t* s = reinterpret_cast<const uint16_t*>(src + sg.src);
      uint16_t* d = reinterpret_cast<uint16_t*>(dst + sg.dst);
      for (int64_t i = tid; i < n; i += stride) d[i] = s[i];
    }
    return;
  }
  const uint8_t* q = src + sg.src;
  const float* scale = reinterpret_cast<const float*>(src + sg.scale);
  __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(dst + sg.dst);
  if (sg.cols % 16 == 0) {
    // 16 codes per group: one 16-byte code load, two 16-byte bf16 stores, one scale per group (a row holds whole
    // groups); two groups in flight per thread per iteration for memory-level parallelism.
    const int64_t groups = n / 16;
    const uint4* q16 = reinterpret_cast<const uint4*>(q);
    uint4* o16 = reinterpret_cast<uint4*>(out);
    auto one = [&](int64_t g, uint4 raw) {
      const float s = scale[(g * 16) / sg.cols];
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&raw);
      __align__(16) __nv_bfloat16 v[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) v[j] = __float2bfloat16_rn(__fmul_rn(code_to_float(b[j], sg.kind), s));
      o16[2 * g] = reinterpret_cast<const uint4*>(v)[0];
      o16[2 * g + 1] = reinterpret_cast<const uint4*>(v)[1];
    };
    int64_t g = tid;
    for (; g + stride < groups; g += 2 * stride) {
      const uint4 r0 = q16[g];
      const uint4 r1 = q16[g + stride];
      one(g, r0);
      one(g + stride, r1);
    }
    if (g < groups) one(g, q16[g]);
  } else if (sg.cols % 8 == 0) {
    for (int64_t g = tid; g < n / 8; g += stride) {
      const int64_t e = g * 8;
      const float s = scale[e / sg.cols];
      const uint2 raw = reinterpret_cast<const uint2*>(q)[g];
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&raw);
      __align__(16) __nv_bfloat16 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __float2bfloat16_rn(__fmul_rn(code_to_float(b[j], sg.kind), s));
      reinterpret_cast<uint4*>(out)[g] = *reinterpret_cast<const uint4*>(v);
    }
  } else {
    for (int64_t i = tid; i < n; i += stride)
      out[i] = __float2bfloat16_rn(__fmul_rn(code_to_float(q[i], sg.kind), scale[i / sg.cols]));
  }
}

}  // namespace

Status dequant_block_image(const void* src, void* dst, const LtxDequantTable& table, cudaStream_t stream) {
  if (table.count < 1 || table.count > kLtxDequantMaxSegments)
    return invalid_argument("dequant_block_image: " + std::to_string(table.count) + " segments (1.." +
                            std::to_string(kLtxDequantMaxSegments) + ")");
  if (src == nullptr || dst == nullptr) return invalid_argument("dequant_block_image: null image pointer");
  for (int i = 0; i < table.count; ++i) {
    const LtxDequantSegment& s = table.seg[i];
    if (s.src % 16 != 0 || s.dst % 16 != 0 || s.rows < 0 || s.cols < 0)
      return invalid_argument("dequant_block_image: segment " + std::to_string(i) +
                              " has an offset that is not 16-byte aligned or a negative size");
  }
  constexpr int kThreads = 256;
  // Per segment 8 blocks per SM of the H200's 132 (one segment per linear under per-linear staging: the whole GPU
  // on one weight), grid-stride; a whole-block image (up to 16 segments) takes 264 blocks per segment.
  dim3 grid(table.count == 1 ? 1056 : 264, static_cast<unsigned>(table.count));
  dequant_block_image_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(src),
                                                           static_cast<uint8_t*>(dst), table);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(StatusCode::kCuda, std::string("dequant_block_image launch: ") + cudaGetErrorString(e));
  return Status::ok();
}

}  // namespace ws::flow::ltx
