// layer_boundary_00: what one layer boundary costs on the GPU, as a kernel boundary in a CUDA graph (with and without
// programmatic dependent launch) and as a grid-wide barrier inside one persistent kernel — the ceiling of
// docs/lanes-plan.md lever (b) (a persistent kernel for EfficientNet-Lite0's late stages).
// Computes: N dependent layers over a float tensor of n elements (ping-pong buffers); layer l writes
//   y[i] = fmaf(0.5, x[i], fmaf(0.25, x[(i + n/2 + 1) % n], 1))
// so each layer reads what other blocks wrote in the layer before (a real grid-wide dependency). Forms:
//   graph      N kernel nodes captured into one graph, plain launches (stream order);
//   graph+pdl-early  the same, griddepcontrol.launch_dependents right after griddepcontrol.wait (the successor is
//              scheduled while this kernel works, and cannot cascade further: it triggers only once its own wait returns);
//   graph+pdl  the same with the programmatic-serialization attribute: griddepcontrol.wait at kernel start,
//              griddepcontrol.launch_dependents after the loop (our kernels' contract, src/kernels/pdl.cuh);
//   persistent one kernel (cooperative launch attribute, so every block is resident) looping over the N layers with a
//              sense-reversing grid barrier (one atomic per block, thread 0 spins on a generation word) between them,
//              captured into a graph as well; at 132 blocks (one per SM) and at the occupancy limit; the barrier with
//              volatile + __threadfence, and ("persistent-ar") with PTX acquire/release operations.
// Thread mapping: 256 threads per block, grid-stride over i; graph forms use min(ceil(n/256), 4 * SMs) blocks.
// Sizes: n = 25,088 (14x14x128, a late EfficientNet stage) and 200,704 (112x112x16, the first stage).
// Check: every form's output after N layers equals a CPU loop with the same fmaf calls, bit for bit (the output is
// poisoned with NaN before each form).
// Time: GPU time of one graph replay (events), median and p99 of REPS replays after 20 warm-ups, per N in
// {1, 8, 16, 32, 64}; per-layer cost = least-squares slope of the median over N.
//   nvcc -std=c++20 -O3 -arch=sm_90 -Isrc -Iinclude experiments/layer_boundary_00.cu -o /tmp/lb && /tmp/lb [REPS=200] [all]
//   (all: also the persistent forms, closed by run 94: the acquire/release barrier costs 2.0 us per layer)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lab_check.h"

namespace {

__device__ __forceinline__ void layer(const float* __restrict__ x, float* __restrict__ y, int n, int i0, int stride) {
  const int half = n / 2 + 1;
  for (int i = i0; i < n; i += stride) {
    int j = i + half;
    if (j >= n) j -= n;
    y[i] = fmaf(0.5f, x[i], fmaf(0.25f, __ldcg(x + j), 1.0f));
  }
}

__global__ void __launch_bounds__(256) layer_kernel(const float* x, float* y, int n, int pdl) {
#if __CUDA_ARCH__ >= 900
  if (pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (pdl == 2) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // early: right after the wait
#endif
  layer(x, y, n, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
#if __CUDA_ARCH__ >= 900
  if (pdl == 1) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Sense-reversing grid barrier: `count` back to 0 and `gen` + 1 per barrier; every block must be resident.
__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned* gen) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned g = *reinterpret_cast<volatile unsigned*>(gen);
    __threadfence();
    if (atomicAdd(count, 1u) == gridDim.x - 1) {
      *reinterpret_cast<volatile unsigned*>(count) = 0u;
      __threadfence();
      atomicAdd(gen, 1u);
    } else {
      while (*reinterpret_cast<volatile unsigned*>(gen) == g) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// The same barrier with PTX acquire/release instead of volatile + __threadfence (fence.sc): thread 0 arrives with one
// acq_rel atomic (cumulative over the block's stores, ordered before it by the barrier), the last arrival resets the
// count and publishes the next generation with st.release, the others poll it with ld.acquire.
__device__ __forceinline__ void grid_barrier_acq_rel(unsigned* count, unsigned* gen) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned g, old;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(g) : "l"(gen) : "memory");
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(count) : "memory");
    if (old == gridDim.x - 1) {
      asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(count) : "memory");
      asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(gen), "r"(g + 1) : "memory");
    } else {
      unsigned v;
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(gen) : "memory");
      } while (v == g);
    }
  }
  __syncthreads();
}

template <bool kAcqRel>
__global__ void __launch_bounds__(256) persistent_kernel(float* a, float* b, int n, int layers, unsigned* bar) {
  const int i0 = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  for (int l = 0; l < layers; ++l) {
    layer((l & 1) ? b : a, (l & 1) ? a : b, n, i0, stride);
    if (l + 1 < layers) {
      if constexpr (kAcqRel) grid_barrier_acq_rel(bar, bar + 1);
      else grid_barrier(bar, bar + 1);
    }
  }
}

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = (v.size() - 1) * q / 100.0;
  const size_t lo = static_cast<size_t>(h);
  return lo + 1 < v.size() ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v.back();
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  const bool all_forms = argc > 2 && std::strcmp(argv[2], "all") == 0;  // also the persistent-kernel forms
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  int occ = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, persistent_kernel<false>, 256, 0));
  std::printf("# %s, %d SMs; persistent_kernel occupancy %d blocks/SM at 256 threads; %d replays per row after 20 warm-ups\n", prop.name,
              sms, occ, reps);
  std::printf("%-22s %8s %4s %10s %10s\n", "form", "n", "N", "p50 us", "p99 us");
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  unsigned* bar = nullptr;
  CHECK(cudaMalloc(&bar, 2 * sizeof(unsigned)));
  CHECK(cudaMemset(bar, 0, 2 * sizeof(unsigned)));
  const int sizes[] = {25088, 200704};
  const int layer_counts[] = {1, 8, 16, 32, 64};
  int failed = 0;
  for (int n : sizes) {
    float *a = nullptr, *b = nullptr;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    std::vector<float> init(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) init[static_cast<size_t>(i)] = float((i * 37) % 101) / 101.0f - 0.5f;
    const int graph_blocks = std::min((n + 255) / 256, 4 * sms);
    struct Form {
      const char* name;
      int kind;  // 0 graph, 1 graph+pdl, 2 persistent (fence barrier), 3 persistent (acquire/release barrier), 4 graph+pdl, trigger early
      int blocks;
    };
    const int max_occ = std::min(occ * sms, std::max(sms, (n + 255) / 256));
    const Form forms[] = {{"graph", 0, graph_blocks},
                          {"graph+pdl", 1, graph_blocks},
                          {"graph+pdl-early", 4, graph_blocks},
                          {"persistent 1/SM", 2, sms},
                          {"persistent max-occ", 2, max_occ},
                          {"persistent-ar 1/SM", 3, sms},
                          {"persistent-ar max-occ", 3, max_occ}};
    for (const Form& f : forms) {
      if (f.kind >= 2 && f.kind <= 3 && !all_forms) continue;
      std::vector<double> xs, ys;
      for (int layers : layer_counts) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        // One launch of `kernel` on f.blocks x 256 threads, with the form's attribute (cooperative / PDL / none).
        auto launch = [&](cudaLaunchAttributeID id, bool on, auto kernel, auto... args) {
          cudaLaunchConfig_t cfg = {};
          cfg.gridDim = dim3(unsigned(f.blocks));
          cfg.blockDim = dim3(256);
          cfg.stream = s;
          cudaLaunchAttribute at[1];
          at[0].id = id;
          if (id == cudaLaunchAttributeCooperative) at[0].val.cooperative = 1;
          else at[0].val.programmaticStreamSerializationAllowed = 1;
          cfg.attrs = at;
          cfg.numAttrs = on ? 1 : 0;
          CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
        };
        if (f.kind >= 2) {
          if (f.kind == 3) launch(cudaLaunchAttributeCooperative, true, persistent_kernel<true>, a, b, n, layers, bar);
          else launch(cudaLaunchAttributeCooperative, true, persistent_kernel<false>, a, b, n, layers, bar);
        } else {
          for (int l = 0; l < layers; ++l) {
            const float* x = (l & 1) ? b : a;
            float* y = (l & 1) ? a : b;
            const int pdl = f.kind == 1 ? 1 : f.kind == 4 ? 2 : 0;
            launch(cudaLaunchAttributeProgrammaticStreamSerialization, pdl != 0, layer_kernel, x, y, n, pdl);
          }
        }
        CHECK(cudaStreamEndCapture(s, &g));
        CHECK(cudaGraphInstantiate(&ge, g, 0));
        // Check: from the initial values, `layers` layers, against the CPU (output poisoned first).
        // (on the graph's own non-blocking stream: the legacy stream's copy would not be ordered before it)
        CHECK(cudaMemcpyAsync(a, init.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
        CHECK(cudaMemsetAsync(b, 0xff, n * sizeof(float), s));
        CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaStreamSynchronize(s));
        std::vector<float> got(static_cast<size_t>(n)), x = init, y(static_cast<size_t>(n));
        CHECK(cudaMemcpy(got.data(), (layers & 1) ? b : a, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (int l = 0; l < layers; ++l) {
          for (int i = 0; i < n; ++i) {
            int j = i + n / 2 + 1;
            if (j >= n) j -= n;
            y[static_cast<size_t>(i)] = std::fma(0.5f, x[static_cast<size_t>(i)], std::fma(0.25f, x[static_cast<size_t>(j)], 1.0f));
          }
          std::swap(x, y);
        }
        size_t bad = 0;
        for (int i = 0; i < n; ++i) bad += std::memcmp(&got[static_cast<size_t>(i)], &x[static_cast<size_t>(i)], 4) != 0;
        if (bad) {
          ++failed;
          std::printf("CHECK FAILED: %s n %d N %d: %zu of %d differ (first: got %g want %g)\n", f.name, n, layers, bad, n, got[0], x[0]);
        }
        for (int i = 0; i < 20; ++i) CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaStreamSynchronize(s));
        std::vector<double> t;
        for (int r = 0; r < reps; ++r) {
          CHECK(cudaEventRecord(e0, s));
          CHECK(cudaGraphLaunch(ge, s));
          CHECK(cudaEventRecord(e1, s));
          CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, e0, e1));
          t.push_back(ms * 1e3);
        }
        const double p50 = pct(t, 50), p99 = pct(t, 99);
        std::printf("%-22s %8d %4d %10.2f %10.2f\n", f.name, n, layers, p50, p99);
        xs.push_back(layers);
        ys.push_back(p50);
        CHECK(cudaGraphExecDestroy(ge));
        CHECK(cudaGraphDestroy(g));
      }
      double mx = 0, my = 0;
      for (size_t i = 0; i < xs.size(); ++i) mx += xs[i], my += ys[i];
      mx /= double(xs.size());
      my /= double(xs.size());
      double sxy = 0, sxx = 0;
      for (size_t i = 0; i < xs.size(); ++i) sxy += (xs[i] - mx) * (ys[i] - my), sxx += (xs[i] - mx) * (xs[i] - mx);
      std::printf("fit %-18s n %7d (%d blocks): %.3f us per layer + %.2f us\n", f.name, n, f.blocks, sxy / sxx, my - sxy / sxx * mx);
    }
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
  }
  std::printf("# %d check(s) failed\n", failed);
  return failed ? 1 : 0;
}
