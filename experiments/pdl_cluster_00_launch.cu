// Does a kernel launched with a thread-block-cluster attribute still get programmatic dependent launch's early start?
// Question behind it (docs/cuda-executor.md, device runs 81–85): both our cluster kernels (the NHWC split-K implicit GEMM
// and the pointwise conv's cluster split-K) are faster than their alternatives when timed alone, and slower inside the
// frame's CUDA graph, where every other kernel of ours overlaps its launch with its predecessor's tail through PDL.
// What it computes: a CUDA graph of 50 dependent pairs [A -> B], A and B tiny kernels (128 blocks of 128 threads, ~1 µs
// of arithmetic each, a griddepcontrol.launch_dependents after it, griddepcontrol.wait before its first global access),
// captured from a stream with the programmatic-stream-serialization attribute on every launch (the lanes' graphs are
// captured the same way). Variants change only how B (or A) is launched:
//   plain        A, B plain launches with PDL
//   B cluster1   B with a cluster dimension (1, 1, 1)
//   B cluster4   B with cluster (1, 1, 4) over a grid z of 4 (32 blocks per z: the same 128 blocks)
//   A cluster4   A with cluster (1, 1, 4), B plain
//   no PDL       neither with the attribute (a full launch gap per edge)
//   ... and the same with clusters of 8 and 16 (non-portable), and with A holding 100 KB of dynamic shared memory per
//   block (at most 2 blocks per SM: the co-residency a 16-block cluster of B needs is then scarce while A runs).
// Thread mapping: one thread per element of a 128·128-float buffer; each kernel reads and writes its own element.
// Time: median of 20 replays of the graph (CUDA events) / 50 pairs, µs per pair. Check: the buffer holds 100 increments
// of every element after each replay (a kernel that ran before its predecessor finished would lose increments).
// Build and run alone: nvcc -std=c++20 -O3 -arch=sm_90 -Isrc -Iinclude experiments/pdl_cluster_00_launch.cu -o /tmp/pdlc && /tmp/pdlc
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels/pdl.cuh"
#include "lab_check.h"

namespace {

constexpr int kBlocks = 128, kThreads = 128, kPairs = 50, kReplays = 20, kSpin = 400;
constexpr int kHeavySmem = 100 * 1024;  // a predecessor that holds most of an SM's shared memory (our fused MBConv kernels)

// Each block handles 128 consecutive elements, whatever the grid's shape (grid.x · grid.z = 128 blocks).
__global__ void step_kernel(float* buf) {
  const int block = blockIdx.z * gridDim.x + blockIdx.x;
  float v = threadIdx.x * 1e-3f;
  for (int i = 0; i < kSpin; ++i) v = v * 0.999f + 1e-3f;  // ~1 µs of dependent arithmetic, no memory
  ws::kernels::device::pdl_allow_dependents();
  ws::kernels::device::pdl_wait();
  float* p = buf + block * kThreads + threadIdx.x;
  *p = *p + 1.0f + (v > 1e30f ? 1.0f : 0.0f);
}

// The runtime's own launcher (kernels/pdl.cuh): cluster_z 0 or 1 is a plain launch, as in the runtime. "B cluster1"
// asks for a (1, 1, 1) cluster explicitly, which launch_kernel_cluster never does.
cudaError_t launch(cudaStream_t st, float* buf, bool pdl, int cluster_z, int smem = 0) {
  const dim3 grid = cluster_z > 1 ? dim3(kBlocks / cluster_z, 1, cluster_z) : dim3(kBlocks);
  if (cluster_z != 1)
    return ws::kernels::launch_kernel_cluster(pdl, static_cast<unsigned>(std::max(cluster_z, 1)), step_kernel, grid, dim3(kThreads),
                                              static_cast<size_t>(smem), st, buf);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = st;
  cudaLaunchAttribute attr[2] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim = {1, 1, 1};
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 2 : 1;
  return cudaLaunchKernelEx(&cfg, step_kernel, buf);
}

struct Variant {
  const char* name;
  bool pdl;
  int a_cluster, b_cluster;  // 0: no cluster attribute
  int a_smem = 0;            // A's dynamic shared memory per block (bytes)
};

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 9) {
    std::printf("needs compute capability 9.0 (clusters, PDL); this is %d.%d\n", prop.major, prop.minor);
    return 0;
  }
  float* buf = nullptr;
  CHECK(cudaMalloc(&buf, kBlocks * kThreads * sizeof(float)));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kHeavySmem));
  CHECK(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  const Variant variants[] = {{"plain (PDL)", true, 0, 0},          {"B cluster1 (PDL)", true, 0, 1},
                              {"B cluster4 (PDL)", true, 0, 4},       {"B cluster8 (PDL)", true, 0, 8},
                              {"B cluster16 (PDL)", true, 0, 16},     {"A cluster4 (PDL)", true, 4, 0},
                              {"both cluster4 (PDL)", true, 4, 4},    {"no PDL", false, 0, 0},
                              {"B cluster4, no PDL", false, 0, 4},    {"B cluster16, no PDL", false, 0, 16},
                              {"heavy A, plain (PDL)", true, 0, 0, kHeavySmem}, {"heavy A, B cluster16 (PDL)", true, 0, 16, kHeavySmem},
                              {"heavy A, B cluster4 (PDL)", true, 0, 4, kHeavySmem}, {"heavy A, no PDL", false, 0, 0, kHeavySmem},
                              {"heavy A, B cluster16, no PDL", false, 0, 16, kHeavySmem}};
  std::printf("# %s, %d SMs; us per [A -> B] pair: median of %d graph replays / %d pairs\n", prop.name, prop.multiProcessorCount, kReplays, kPairs);
  int wrong = 0;
  for (int round = 0; round < 2; ++round)
    for (const Variant& v : variants) {
      CHECK(cudaMemset(buf, 0, kBlocks * kThreads * sizeof(float)));
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kPairs; ++i) {
        CHECK(launch(st, buf, v.pdl, v.a_cluster, v.a_smem));
        CHECK(launch(st, buf, v.pdl, v.b_cluster));
      }
      CHECK(cudaStreamEndCapture(st, &g));
      CHECK(cudaGraphInstantiate(&ge, g, 0));
      std::vector<float> us;
      for (int r = 0; r < kReplays + 1; ++r) {
        CHECK(cudaEventRecord(e0, st));
        CHECK(cudaGraphLaunch(ge, st));
        CHECK(cudaEventRecord(e1, st));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) us.push_back(ms * 1000.0f / kPairs);  // replay 0: upload and warm-up
      }
      std::vector<float> h(kBlocks * kThreads);
      CHECK(cudaMemcpy(h.data(), buf, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
      const float want = float((kReplays + 1) * 2 * kPairs);
      int bad = 0;
      for (float x : h) bad += x != want;
      wrong += bad;
      std::sort(us.begin(), us.end());
      std::printf("round %d  %-30s %7.3f us/pair (min %.3f, max %.3f)  %s\n", round, v.name, us[us.size() / 2], us.front(), us.back(),
                  bad ? "CHECK FAILED: lost increments" : "check ok");
      CHECK(cudaGraphExecDestroy(ge));
      CHECK(cudaGraphDestroy(g));
    }
  std::printf("# %d element(s) wrong\n", wrong);
  return wrong ? 1 : 0;
}
