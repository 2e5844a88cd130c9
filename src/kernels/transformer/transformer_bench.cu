// Benchmark of the transformer kernels at one LTX block shape (transformer_bench.h): pseudo-random bf16 inputs
// (a hash of the index, never zeros), each kernel launched alone between two events, warm-up 3 launches, then
// `iters` timed launches -> median and p99. Not a test: nothing here passes or fails on a time.
// Thread mapping of the fill kernel: one thread per element, grid-stride.
// Run: warpstream transformer-kernels [--seq 6144 --dim 2048 --heads 32 --text 128 --iters 20].
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/transformer/transformer.h"
#include "kernels/transformer/transformer_bench.h"

namespace ws::kernels {
namespace {

__device__ __forceinline__ float hash_uniform(uint64_t i, uint32_t salt) {
  uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ static_cast<uint32_t>(i >> 32) * 0x85EBCA77u ^ salt;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return float(h) * (2.0f / 4294967296.0f) - 1.0f;  // [-1, 1)
}

__global__ void fill_bf16(__nv_bfloat16* p, int64_t n, uint32_t salt, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16_rn(hash_uniform(uint64_t(i), salt) * scale);
}
__global__ void fill_f32(float* p, int64_t n, uint32_t salt, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = hash_uniform(uint64_t(i), salt) * scale;
}
__global__ void fill_mask_bias(float* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = (i % 7 == 3) ? -10000.0f : 0.0f;
}

}  // namespace

Result<std::vector<KernelTiming>> bench_transformer_kernels(const TransformerBenchShape& sh) {
  if (sh.batch < 1 || sh.seq < 1 || sh.text < 1 || sh.dim < 1 || sh.heads < 1 || sh.ff < 1 || sh.iters < 1 ||
      sh.dim % sh.heads != 0)
    return invalid_argument("bench_transformer_kernels: sizes must be >= 1 and dim a multiple of heads");
  const int64_t B = sh.batch, S = sh.seq, T = sh.text, D = sh.dim, H = sh.heads, F = sh.ff, Dh = D / H;
  const int64_t act = B * S * D;
  std::vector<cuda::DeviceBuffer> owned;
  auto alloc = [&](size_t bytes) -> Result<void*> {
    auto r = cuda::DeviceBuffer::allocate(bytes);
    if (!r) return r.status();
    owned.push_back(std::move(r.value()));
    return owned.back().get();
  };
  std::vector<void*> p;
  // x, y, n, q, k, v, o (act each), ff (B·S·F), tk, tv (B·T·D), table (6D), temb (B·6D), weight (D)
  const size_t sizes[] = {size_t(act) * 2, size_t(act) * 2, size_t(act) * 2, size_t(act) * 2, size_t(act) * 2,
                          size_t(act) * 2, size_t(act) * 2, size_t(B * S * F) * 2, size_t(B * T * D) * 2,
                          size_t(B * T * D) * 2, size_t(6 * D) * 2, size_t(B * 6 * D) * 2, size_t(D) * 2,
                          size_t(S * D) * 4, size_t(S * D) * 4, size_t(B * T) * 4};
  uint32_t salt = 1;
  for (size_t bytes : sizes) {
    auto r = alloc(bytes);
    if (!r) return r.status();
    p.push_back(r.value());
  }
  auto bf = [&](int i) { return static_cast<__nv_bfloat16*>(p[size_t(i)]); };
  auto f32 = [&](int i) { return static_cast<float*>(p[size_t(i)]); };
  for (int i = 0; i <= 12; ++i) fill_bf16<<<1024, 256, 0, nullptr>>>(bf(i), int64_t(sizes[i] / 2), salt++, i == 10 || i == 11 ? 0.3f : 1.0f);
  fill_f32<<<1024, 256, 0, nullptr>>>(f32(13), S * D, salt++, 1.0f);
  fill_f32<<<1024, 256, 0, nullptr>>>(f32(14), S * D, salt++, 1.0f);
  fill_mask_bias<<<64, 256, 0, nullptr>>>(f32(15), B * T);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());

  AdaLnTable m;
  m.table = bf(10);
  m.temb = bf(11);
  m.temb_row_stride = 6 * D;
  m.temb_chunk_stride = D;
  m.tokens_per_temb_row = S;

  auto ev0 = cuda::Event::create();
  auto ev1 = cuda::Event::create();
  if (!ev0) return ev0.status();
  if (!ev1) return ev1.status();
  std::vector<KernelTiming> out;
  auto time = [&](const std::string& name, double bytes, double flops, const std::function<Status()>& launch) -> Status {
    for (int i = 0; i < 3; ++i)
      if (Status s = launch(); !s) return s;
    std::vector<float> ms;
    for (int i = 0; i < sh.iters; ++i) {
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev0->get(), nullptr));
      if (Status s = launch(); !s) return s;
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev1->get(), nullptr));
      WS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(ev1->get()));
      float t = 0;
      WS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&t, ev0->get(), ev1->get()));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    KernelTiming k;
    k.name = name;
    k.median_us = 1e3 * ms[ms.size() / 2];
    k.p99_us = 1e3 * ms[std::min(ms.size() - 1, size_t(double(ms.size()) * 0.99))];
    k.bytes = bytes;
    k.flops = flops;
    out.push_back(k);
    return Status::ok();
  };
  const double a2 = double(act) * 2;
  if (Status s = time("norm1 rms_norm_modulate", 2 * a2, 0, [&] {
    return rms_norm_modulate(bf(0), bf(2), B * S, D, 1e-6f, m, kShiftMsa, kScaleMsa, nullptr);
  }); !s)
    return s;
  if (Status s = time("qk_rmsnorm_rope (q+k)", 4 * a2 + 2.0 * S * D * 4, 0, [&] {
    return qk_rmsnorm_rope(bf(3), bf(3), bf(12), bf(4), bf(4), bf(12), B * S, S, D, 1e-5f, f32(13), f32(14), 0, nullptr);
  }); !s)
    return s;
  if (Status s = time("gated_residual_add (attn1, gate_msa)", 3 * a2, 0, [&] {
    return gated_residual_add(bf(0), bf(1), nullptr, B * S, D, &m, kGateMsa, nullptr);
  }); !s)
    return s;
  if (Status s = time("residual add + norm2 (attn2)", 4 * a2, 0, [&] {
    return gated_residual_add(bf(0), bf(1), nullptr, B * S, D, nullptr, 0, nullptr, bf(2), 1e-6f, &m, kShiftMlp, kScaleMlp);
  }); !s)
    return s;
  if (Status s = time("bias_gelu_tanh (FF inner)", 2.0 * double(B * S * F) * 2, 0, [&] {
    return bias_gelu_tanh(bf(7), bf(7), bf(12), B * S, F, nullptr);
  }); !s)
    return s;
  const double self_flops = 4.0 * double(B * H) * double(S) * double(S) * double(Dh);
  const double cross_flops = 4.0 * double(B * H) * double(S) * double(T) * double(Dh);
  SdpaDims self{B, S, S, H, Dh}, cross{B, S, T, H, Dh};
  const float scale = 1.0f / std::sqrt(float(Dh));
  for (SdpaKernel kind : {SdpaKernel::kMma, SdpaKernel::kSimt}) {
    if (!sdpa_supported(kind, self)) continue;
    const std::string n = std::string("sdpa ") + sdpa_kernel_name(kind);
    if (kind == SdpaKernel::kMma || sh.simt_self_attention)
      if (Status s = time(n + " self S x S", 4 * a2, self_flops, [&] {
            return sdpa(kind, self, bf(3), bf(4), bf(5), nullptr, scale, bf(6), nullptr);
          }); !s)
        return s;
    if (Status s = time(n + " cross S x T masked", 2 * a2 + 2.0 * double(B * T * D) * 2, cross_flops, [&] {
          return sdpa(kind, cross, bf(3), bf(8), bf(9), f32(15), scale, bf(6), nullptr);
        }); !s)
      return s;
  }
  return out;
}

}  // namespace ws::kernels
