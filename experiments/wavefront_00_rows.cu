// Can the network's first layer run while the frame is still crossing PCIe? (docs/lanes-plan.md, lever (a))
// Question behind it: a lane's 1080p RGB8 frame sits in mapped host memory; the preprocess (bilinear 1080p -> 224,
// normalise) is bound by PCIe (~60 µs for the 2.58 MB of rows it samples, device runs 56 and 78) and the GPU does
// little else meanwhile; the network starts only when the whole preprocess has finished. If the preprocess produced
// its rows in order and published each row with a flag, the stem could consume rows as they arrive (a wavefront)
// and later layers could follow. Two things decide whether that lever is worth building in the runtime:
//   1. the arrival curve: with G blocks each taking rows dy = b, b + G, ... in order, do rows become ready
//      progressively over the ~50 µs (PCIe stays saturated with only G rows in flight), or all at the end (today's
//      one block per row: every row shares the link, so every row finishes late)?
//   2. the overlap: preprocess -> stem, with the stem's blocks launched early through PDL (the preprocess triggers
//      its dependents at block start) and each stem block waiting only for the input rows it reads, against the
//      same two kernels in sequence (the stem in griddepcontrol.wait) — GPU time of the pair from CUDA events.
// What it computes: preprocess: RGB8 [1080, 1920, 3] -> bilinear half-pixel -> x/255 -> (x - mean)/std -> fp16 NCHW
// [3, 224, 224]; stem: 3x3 stride 2 pad 1 conv 3 -> 32 channels, bias, ReLU6, fp16 NCHW [32, 112, 112] (EfficientNet-
// Lite0's stem; the same arithmetic as the runtime's direct_stem3x3_kernel). A third node bumps the frame epoch.
// Thread mapping: preprocess: 256 threads per block, a block stages its row's two source rows in shared memory with
// 16-byte loads, then one thread per destination pixel; rows dy = blockIdx.x + k·gridDim.x. Stem: one thread per output
// pixel, 8 output channels per block (blockIdx.y), 128 consecutive pixels per block tile; in the wavefront form
// thread 0 waits (ld.acquire.gpu) for the tile's input rows' flags to reach this frame's epoch, then bar.sync.
// Flags and epoch: flag[dy] is stored (st.release.gpu, after a __threadfence) as epoch + 1 once row dy is written; the
// epoch word is bumped by the graph's last node, so nothing is reset between frames. Deadlock-free: the stem grid
// launches only after every preprocess block has started (PDL trigger at block start), and stem blocks wait only on
// preprocess blocks; a wait gives up after ~2^24 polls and flags the run as failed (no hang).
// Check: every variant's stem output equals the sequential variant's bit for bit (same arithmetic, only the
// synchronisation differs), and no wait timed out.
// Time: median / p99 of 300 graph replays (CUDA events around each replay), 2 interleaved rounds.
// Build and run alone: nvcc -std=c++20 -O3 -arch=sm_90 -Isrc -Iinclude experiments/wavefront_00_rows.cu -o /tmp/wf && /tmp/wf
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/pdl.cuh"
#include "lab_check.h"

namespace {

constexpr int kSrcW = 1920, kSrcH = 1080, kDst = 224, kOut = 112, kCo = 32, kStemCo = 8;
constexpr int kPreThreads = 256, kStemThreads = 128;
constexpr int kRowBytes = 3 * kSrcW;  // 5760: a multiple of 16
constexpr int kReplays = 300;
constexpr unsigned kMaxPolls = 1u << 24;

struct Pre {
  float sx, sy, maxx, maxy, inv255;
  float mean[3], istd[3];
};

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void coord(int d, float scale, float maxc, int n, int& c0, int& c1, float& f) {
  float s = __fsub_rn(__fmul_rn(__fadd_rn(float(d), 0.5f), scale), 0.5f);
  s = fminf(fmaxf(s, 0.0f), maxc);
  c0 = int(floorf(s));
  c1 = min(c0 + 1, n - 1);
  f = __fsub_rn(s, float(c0));
}

// rows dy = blockIdx.x, blockIdx.x + gridDim.x, ...; kFlags: publish each row, and let the stem launch at once.
template <bool kFlags>
__global__ void __launch_bounds__(kPreThreads) pre_kernel(const uint8_t* __restrict__ rgb, __half* x, Pre p, uint32_t* flags,
                                                          const uint32_t* epoch, unsigned long long* t_row) {
  extern __shared__ __align__(16) uint8_t rows[];
  uint32_t target = 0;
  if constexpr (kFlags) {
    ws::kernels::device::pdl_allow_dependents();
    target = *epoch + 1;  // written by the previous replay's last node (a kernel boundary ago)
  }
  for (int dy = blockIdx.x; dy < kDst; dy += gridDim.x) {
    int y0, y1;
    float fy;
    coord(dy, p.sy, p.maxy, kSrcH, y0, y1, fy);
    __syncthreads();  // the previous row's readers are done with the staging buffer
    const uint4* s0 = reinterpret_cast<const uint4*>(rgb + int64_t(y0) * kRowBytes);
    const uint4* s1 = reinterpret_cast<const uint4*>(rgb + int64_t(y1) * kRowBytes);
    uint4* d = reinterpret_cast<uint4*>(rows);
    for (int v = threadIdx.x; v < kRowBytes / 16; v += blockDim.x) {
      const uint4 a = s0[v], b = s1[v];
      d[v] = a;
      d[kRowBytes / 16 + v] = b;
    }
    __syncthreads();
    const uint8_t* r0 = rows;
    const uint8_t* r1 = rows + kRowBytes;
    for (int dx = threadIdx.x; dx < kDst; dx += blockDim.x) {
      int x0, x1;
      float fx;
      coord(dx, p.sx, p.maxx, kSrcW, x0, x1, fx);
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const float p00 = r0[x0 * 3 + c], p01 = r0[x1 * 3 + c], p10 = r1[x0 * 3 + c], p11 = r1[x1 * 3 + c];
        const float top = __fadd_rn(p00, __fmul_rn(__fsub_rn(p01, p00), fx));
        const float bot = __fadd_rn(p10, __fmul_rn(__fsub_rn(p11, p10), fx));
        const float v = __fadd_rn(top, __fmul_rn(__fsub_rn(bot, top), fy));
        x[(c * kDst + dy) * kDst + dx] = __float2half_rn(__fmul_rn(__fsub_rn(__fmul_rn(v, p.inv255), p.mean[c]), p.istd[c]));
      }
    }
    __syncthreads();  // every thread's stores of row dy precede thread 0's release
    if (threadIdx.x == 0) {
      if constexpr (kFlags) {
        __threadfence();
        st_release(flags + dy, target);
      }
      t_row[dy] = globaltimer();
    }
  }
}

// One stem output pixel (oy, ox), 8 channels from co0: 27 taps loaded once (plain loads: in the wavefront form the
// input is written by a kernel still running, so never through the read-only path).
__device__ __forceinline__ void stem_pixel(const __half* x, const __half* __restrict__ w, const float* __restrict__ bias, __half* y, int oy,
                                           int ox, int co0) {
  float xv[27];
#pragma unroll
  for (int c = 0; c < 3; ++c)
#pragma unroll
    for (int ky = 0; ky < 3; ++ky)
#pragma unroll
      for (int kx = 0; kx < 3; ++kx) {
        const int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
        const bool in = unsigned(iy) < unsigned(kDst) && unsigned(ix) < unsigned(kDst);
        xv[(c * 3 + ky) * 3 + kx] = in ? __half2float(x[(c * kDst + iy) * kDst + ix]) : 0.0f;
      }
#pragma unroll
  for (int q = 0; q < kStemCo; ++q) {
    const int co = co0 + q;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 27; ++j) acc = fmaf(xv[j], __half2float(w[co * 27 + j]), acc);
    acc = fminf(fmaxf(acc + bias[co], 0.0f), 6.0f);
    y[(co * kOut + oy) * kOut + ox] = __float2half_rn(acc);
  }
}

template <bool kFlags>
__global__ void __launch_bounds__(kStemThreads) stem_kernel(const __half* x, const __half* __restrict__ w, const float* __restrict__ bias, __half* y,
                                                            const uint32_t* flags, const uint32_t* epoch, unsigned long long* t_end,
                                                            int* timed_out) {
  uint32_t target = 0;
  if constexpr (kFlags) {
    target = *epoch + 1;
  } else {
    ws::kernels::device::pdl_wait();
  }
  const int co0 = blockIdx.y * kStemCo;
  constexpr int pixels = kOut * kOut;
  for (int base = blockIdx.x * kStemThreads; base < pixels; base += gridDim.x * kStemThreads) {
    if constexpr (kFlags) {
      if (threadIdx.x == 0) {
        const int last = min(base + kStemThreads - 1, pixels - 1);
        const int r_lo = max(0, 2 * (base / kOut) - 1), r_hi = min(kDst - 1, 2 * (last / kOut) + 1);
        for (int r = r_lo; r <= r_hi; ++r) {
          unsigned polls = 0;
          while (int(ld_acquire(flags + r) - target) < 0) {
            if (++polls == kMaxPolls) {
              atomicExch(timed_out, 1);
              break;
            }
            __nanosleep(64);
          }
        }
      }
      __syncthreads();
    }
    const int i = base + threadIdx.x;
    if (i < pixels) stem_pixel(x, w, bias, y, i / kOut, i % kOut, co0);
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(t_end, globaltimer());
}

__global__ void bump_kernel(uint32_t* epoch) { *epoch += 1; }

struct Variant {
  const char* name;
  int pre_blocks;
  bool flags;
  bool device_src;
};

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 9) {
    std::printf("needs compute capability 9.0 (PDL); this is %d.%d\n", prop.major, prop.minor);
    return 0;
  }
  const unsigned seed = 20261206u;
  std::printf("# %s, %d SMs; seed %u; frame %dx%d RGB8 -> %dx%d fp16 NCHW -> stem 3x3 s2 -> %dx%dx%d\n", prop.name, prop.multiProcessorCount,
              seed, kSrcW, kSrcH, kDst, kDst, kCo, kOut, kOut);
  std::mt19937 rng(seed);
  uint8_t* frame_host = nullptr;  // mapped pinned
  CHECK(cudaHostAlloc(&frame_host, size_t(kRowBytes) * kSrcH, cudaHostAllocMapped));
  for (size_t i = 0; i < size_t(kRowBytes) * kSrcH; ++i) frame_host[i] = uint8_t(rng() >> 24);
  uint8_t *frame_mapped = nullptr, *frame_dev = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&frame_mapped), frame_host, 0));
  CHECK(cudaMalloc(&frame_dev, size_t(kRowBytes) * kSrcH));
  CHECK(cudaMemcpy(frame_dev, frame_host, size_t(kRowBytes) * kSrcH, cudaMemcpyHostToDevice));
  std::vector<__half> wh(kCo * 27);
  std::vector<float> bh(kCo);
  std::uniform_real_distribution<float> uw(-0.3f, 0.3f);
  for (auto& v : wh) v = __float2half(uw(rng));
  for (auto& v : bh) v = uw(rng);
  __half *x, *y, *w;
  float* bias;
  uint32_t *flags, *epoch;
  unsigned long long *t_row, *t_end;
  int* timed_out;
  CHECK(cudaMalloc(&x, 3 * kDst * kDst * sizeof(__half)));
  CHECK(cudaMalloc(&y, kCo * kOut * kOut * sizeof(__half)));
  CHECK(cudaMalloc(&w, wh.size() * sizeof(__half)));
  CHECK(cudaMalloc(&bias, bh.size() * sizeof(float)));
  CHECK(cudaMalloc(&flags, kDst * sizeof(uint32_t)));
  CHECK(cudaMalloc(&epoch, sizeof(uint32_t)));
  CHECK(cudaMalloc(&t_row, kDst * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&t_end, sizeof(unsigned long long)));
  CHECK(cudaMalloc(&timed_out, sizeof(int)));
  CHECK(cudaMemcpy(w, wh.data(), wh.size() * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(bias, bh.data(), bh.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(flags, 0, kDst * sizeof(uint32_t)));
  CHECK(cudaMemset(epoch, 0, sizeof(uint32_t)));
  CHECK(cudaMemset(timed_out, 0, sizeof(int)));
  const Pre p{float(kSrcW) / float(kDst), float(kSrcH) / float(kDst), float(kSrcW - 1), float(kSrcH - 1), 1.0f / 255.0f,
              {0.485f, 0.456f, 0.406f}, {1 / 0.229f, 1 / 0.224f, 1 / 0.225f}};
  const size_t pre_smem = 2 * kRowBytes;
  CHECK(cudaFuncSetAttribute(pre_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(pre_smem)));
  CHECK(cudaFuncSetAttribute(pre_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(pre_smem)));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const dim3 stem_grid((kOut * kOut + kStemThreads - 1) / kStemThreads, kCo / kStemCo);

  const Variant variants[] = {
      {"today: 224 blocks -> stem", 224, false, false},      {"ordered 16 -> stem", 16, false, false},
      {"ordered 32 -> stem", 32, false, false},              {"ordered 64 -> stem", 64, false, false},
      {"wavefront 16", 16, true, false},                     {"wavefront 32", 32, true, false},
      {"wavefront 64", 64, true, false},                     {"wavefront 132", 132, true, false},
      {"wavefront 224", 224, true, false},                   {"device src: 224 blocks -> stem", 224, false, true},
      {"device src: wavefront 32", 32, true, true},          {"device src: wavefront 224", 224, true, true},
  };
  std::vector<__half> y_ref(kCo * kOut * kOut), y_got(y_ref.size());
  bool have_ref = false;
  int failures = 0;
  std::printf("%-32s %9s %9s %9s   %s\n", "variant", "p50 us", "p99 us", "min us", "arrival (us after the first row: rows 0/56/112/168/223; stem end)");
  for (int round = 0; round < 2; ++round)
    for (const Variant& v : variants) {
      const uint8_t* src = v.device_src ? frame_dev : frame_mapped;
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CHECK(cudaMemset(y, 0xff, y_ref.size() * sizeof(__half)));  // poisoned: NaN fp16
      CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      if (v.flags) {
        pre_kernel<true><<<v.pre_blocks, kPreThreads, pre_smem, st>>>(src, x, p, flags, epoch, t_row);
        CHECK(cudaGetLastError());
        CHECK(ws::kernels::launch_kernel_cluster(true, 1, stem_kernel<true>, stem_grid, dim3(kStemThreads), 0, st, x, w, bias, y, flags,
                                                 epoch, t_end, timed_out));
      } else {
        pre_kernel<false><<<v.pre_blocks, kPreThreads, pre_smem, st>>>(src, x, p, flags, epoch, t_row);
        CHECK(cudaGetLastError());
        CHECK(ws::kernels::launch_kernel_cluster(true, 1, stem_kernel<false>, stem_grid, dim3(kStemThreads), 0, st, x, w, bias, y, flags,
                                                 epoch, t_end, timed_out));
      }
      bump_kernel<<<1, 1, 0, st>>>(epoch);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamEndCapture(st, &g));
      CHECK(cudaGraphInstantiate(&ge, g, 0));
      std::vector<float> us;
      std::vector<unsigned long long> rows(kDst);
      unsigned long long tend = 0;
      for (int r = 0; r < kReplays + 1; ++r) {
        CHECK(cudaMemsetAsync(t_end, 0, sizeof(unsigned long long), st));
        CHECK(cudaEventRecord(e0, st));
        CHECK(cudaGraphLaunch(ge, st));
        CHECK(cudaEventRecord(e1, st));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) us.push_back(ms * 1000.0f);
        if (r == kReplays / 2) {
          CHECK(cudaMemcpy(rows.data(), t_row, kDst * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(&tend, t_end, sizeof(tend), cudaMemcpyDeviceToHost));
        }
      }
      CHECK(cudaMemcpy(y_got.data(), y, y_got.size() * sizeof(__half), cudaMemcpyDeviceToHost));
      int to = 0;
      CHECK(cudaMemcpy(&to, timed_out, sizeof(int), cudaMemcpyDeviceToHost));
      bool ok = to == 0;
      if (!have_ref) {
        y_ref = y_got;
        have_ref = true;
        for (const __half& h : y_ref) ok = ok && !__hisnan(h);
      } else if (std::memcmp(y_ref.data(), y_got.data(), y_ref.size() * sizeof(__half)) != 0) {
        ok = false;
      }
      failures += !ok;
      std::sort(us.begin(), us.end());
      const unsigned long long t0 = *std::min_element(rows.begin(), rows.end());
      auto rel = [&](unsigned long long t) { return double(t - t0) / 1000.0; };
      std::printf("r%d %-29s %9.2f %9.2f %9.2f   %6.1f %6.1f %6.1f %6.1f %6.1f; stem end %6.1f  %s\n", round, v.name, us[us.size() / 2],
                  us[size_t(us.size() * 0.99)], us.front(), rel(rows[0]), rel(rows[56]), rel(rows[112]), rel(rows[168]), rel(rows[223]),
                  tend > t0 ? rel(tend) : -1.0, ok ? "check ok" : (to ? "CHECK FAILED: a wait timed out" : "CHECK FAILED: output differs"));
      CHECK(cudaGraphExecDestroy(ge));
      CHECK(cudaGraphDestroy(g));
    }
  std::printf("# %d variant run(s) failed the check\n", failures);
  return failures ? 1 : 0;
}
