// int8_chain.cu — the INT8 layer chain of the streaming benchmark and tests (see int8_chain.h).
// requantize_s32_to_s8: one thread per 4 outputs (int4 load, char4 store), grid-stride; scalar tail.
// Test: tests/gpu/flow_streamer_test.cpp (streamed == resident, bit for bit). Time: `warpstream overlap`.
#include "bench/flow/int8_chain.h"

#include <cmath>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"

namespace ws::flow {
namespace {

__device__ __forceinline__ signed char sat8(int v) { return static_cast<signed char>(max(-128, min(127, v))); }

__global__ void requantize_kernel(const int32_t* __restrict__ acc, int8_t* __restrict__ out, int64_t count, int shift) {
  const int64_t n4 = count / 4;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    int4 a = reinterpret_cast<const int4*>(acc)[i];
    char4 o = make_char4(sat8(a.x >> shift), sat8(a.y >> shift), sat8(a.z >> shift), sat8(a.w >> shift));
    reinterpret_cast<char4*>(out)[i] = o;
  }
  for (int64_t i = n4 * 4 + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = sat8(acc[i] >> shift);
}

}  // namespace

Status requantize_s32_to_s8(const int32_t* acc, int8_t* x_next, int64_t count, int shift, cudaStream_t stream) {
  if (count <= 0) return Status::ok();
  if ((reinterpret_cast<uintptr_t>(acc) & 15) || (reinterpret_cast<uintptr_t>(x_next) & 3))
    return invalid_argument("requantize_s32_to_s8: acc must be 16-byte and x_next 4-byte aligned");
  const int threads = 256;
  int64_t blocks = (count / 4 + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > 4096) blocks = 4096;
  requantize_kernel<<<static_cast<int>(blocks), threads, 0, stream>>>(acc, x_next, count, shift);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status chain_layer(const int8_t* x, const int8_t* w, int32_t* acc, int8_t* x_next, int m, int d, int shift,
                   cudaStream_t stream) {
  WS_RETURN_IF_ERROR(ws::kernels::gemm_s8_mma(ws::kernels::MmaTile::k128x128, ws::DType::kInt32, x, w, acc,
                                              m, d, d, ws::kernels::GemmEpilogue{}, stream));
  return requantize_s32_to_s8(acc, x_next, int64_t(m) * d, shift, stream);
}

int chain_shift_for(int d) {
  double s = std::round(std::log2(21.0 * std::sqrt(double(d)) / 32.0));
  return s < 0 ? 0 : static_cast<int>(s);
}

}  // namespace ws::flow
