// Lab: what process state makes a frame slower after the build timed its tactics in the same process?
// Device runs 100-101: ResNet-50 fp16 (1 lane, CUDA graph, device frame) ran at 330 us GPU p50 in a process that timed
// its tactics, 310 us in one that read the same timing cache; the same choices, not a clock transient, and still slow
// after rebuilding from the cache in the same process. This program separates the candidates in one process:
//   1. build engine A from an existing cache; time A (t0)                       -> the clean baseline
//   2. the action (argv[3]): none | malloc (1 GiB cudaMalloc + memset + free) | fresh (build engine B with no cache:
//      every tactic timed, then B destroyed) | fresh_cudnn / fresh_ws (the same with one tactic source)
//   3. time A again (t1): A's graph and arena predate the action -> a slow t1 means context-wide state, not layout
//   4. build engine C from the same cache; time C and A (t2, t2a)
//   5. restore the limits printed before the action (stack size, malloc heap, printf FIFO, cache config); time A (t3)
// It prints cudaDeviceGetLimit / cudaDeviceGetCacheConfig / cudaMemGetInfo before and after the action.
// Timing: the host waits for each frame (as a lane); CUDA events around each replay; medians of N frames, alternated in
// rounds so a drift shows. Not a test: no pass/fail.
// Build: cmake --build build-dev --target exp_process_state_00
// Run:   warpstream bench ... --timing-cache C (writes C), then exp_process_state_00 resnet50.onnx C fresh [N=2000]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "warpstream/cuda_engine.h"
#include "warpstream/graph.h"

namespace {

struct Limits {
  size_t stack = 0, heap = 0, fifo = 0, l2persist = 0;
  cudaFuncCache cache = cudaFuncCachePreferNone;
  size_t free_b = 0, total_b = 0;
};

Limits read_limits() {
  Limits l;
  cudaDeviceGetLimit(&l.stack, cudaLimitStackSize);
  cudaDeviceGetLimit(&l.heap, cudaLimitMallocHeapSize);
  cudaDeviceGetLimit(&l.fifo, cudaLimitPrintfFifoSize);
  cudaDeviceGetLimit(&l.l2persist, cudaLimitPersistingL2CacheSize);
  cudaDeviceGetCacheConfig(&l.cache);
  cudaMemGetInfo(&l.free_b, &l.total_b);
  return l;
}

void print_limits(const char* when, const Limits& l) {
  std::printf("limits %-8s stack %zu B/thread, malloc heap %zu B, printf fifo %zu B, L2 persisting %zu B, cache config %d, "
              "free %.1f MiB of %.1f\n", when, l.stack, l.heap, l.fifo, l.l2persist, static_cast<int>(l.cache),
              l.free_b / 1048576.0, l.total_b / 1048576.0);
}

struct Plan {
  std::unique_ptr<ws::CudaEngine> engine;
  std::unique_ptr<ws::ExecutionContext> ctx;
};

bool make_plan(const ws::ir::Graph& g, const ws::CudaBuildOptions& o, cudaStream_t s, Plan& p, const char* what) {
  auto e = ws::CudaEngine::build(g, o);
  if (!e) { std::printf("%s: build failed: %s\n", what, e.status().to_string().c_str()); return false; }
  p.engine = std::move(*e);
  auto c = p.engine->create_context();
  if (!c) { std::printf("%s: context failed: %s\n", what, c.status().to_string().c_str()); return false; }
  p.ctx = std::move(*c);
  for (size_t i = 0; i < p.engine->num_inputs(); ++i) cudaMemset(p.ctx->input(i), 0x3c, p.engine->input_desc(i).bytes);
  for (int k = 0; k < 3; ++k)
    if (auto st = p.ctx->enqueue(s); !st.is_ok()) { std::printf("%s: enqueue: %s\n", what, st.to_string().c_str()); return false; }
  cudaStreamSynchronize(s);
  size_t timed = 0;
  for (const auto& t : p.engine->tactics()) timed += t.from_cache ? 0 : 1;
  std::printf("%s: built, %zu kernels, %zu tactics timed in this build\n", what, p.engine->kernel_count(), timed);
  return true;
}

// Median GPU µs of n frames of p (host waits for each frame).
float time_plan(Plan& p, cudaStream_t s, int n) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> us;
  for (int i = 0; i < n; ++i) {
    cudaEventRecord(a, s);
    (void)p.ctx->enqueue(s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    us.push_back(ms * 1000.0f);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::nth_element(us.begin(), us.begin() + n / 2, us.end());
  return us[static_cast<size_t>(n / 2)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.onnx TIMING_CACHE.json none|malloc|fresh|fresh_cudnn|fresh_ws [N=2000]\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1], cache = argv[2], action = argv[3];
  const int n = argc > 4 ? std::max(100, std::atoi(argv[4])) : 2000;
  auto g = ws::ir::import_onnx(model);
  if (!g) { std::printf("import: %s\n", g.status().to_string().c_str()); return 1; }
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  ws::CudaBuildOptions o;
  o.precision = ws::Precision::kFloat16;
  o.timing_cache_path = cache;
  Plan a;
  if (!make_plan(*g, o, s, a, "A (cache)")) return 1;
  time_plan(a, s, 500);  // warm
  const float t0 = time_plan(a, s, n);
  std::printf("t0  A before the action            %7.1f us\n", t0);
  const Limits before = read_limits();
  print_limits("before", before);

  if (action == "malloc") {
    void* p = nullptr;
    cudaMalloc(&p, size_t{1} << 30);
    cudaMemset(p, 0, size_t{1} << 30);
    cudaDeviceSynchronize();
    cudaFree(p);
  } else if (action.rfind("fresh", 0) == 0) {
    ws::CudaBuildOptions f = o;
    f.timing_cache_path.clear();
    if (action == "fresh_cudnn") f.tactic_sources = ws::kTacticCudnn | ws::kTacticCublasLt;
    if (action == "fresh_ws") f.tactic_sources = ws::kTacticWarpStream | ws::kTacticCublasLt;
    Plan b;
    make_plan(*g, f, s, b, "B (fresh)");
  } else if (action != "none") {
    std::printf("unknown action %s\n", action.c_str());
    return 2;
  }
  cudaDeviceSynchronize();
  const Limits after = read_limits();
  print_limits("after", after);

  time_plan(a, s, 500);
  const float t1 = time_plan(a, s, n);
  std::printf("t1  A after %-12s           %7.1f us  (%+.1f)\n", action.c_str(), t1, t1 - t0);
  Plan c;
  if (!make_plan(*g, o, s, c, "C (cache, after the action)")) return 1;
  time_plan(c, s, 500);
  float tc = 0, ta = 0;
  for (int r = 0; r < 3; ++r) {  // alternated rounds
    const float x = time_plan(c, s, n / 2), y = time_plan(a, s, n / 2);
    std::printf("    round %d: C %7.1f  A %7.1f us\n", r, x, y);
    tc += x / 3;
    ta += y / 3;
  }
  std::printf("t2  C built after the action       %7.1f us  (%+.1f)\n", tc, tc - t0);
  std::printf("t2a A again                        %7.1f us  (%+.1f)\n", ta, ta - t0);

  // Put the limits back as they were before the action, then time again.
  cudaDeviceSetLimit(cudaLimitStackSize, before.stack);
  cudaDeviceSetLimit(cudaLimitMallocHeapSize, before.heap);
  cudaDeviceSetCacheConfig(before.cache);
  cudaDeviceSynchronize();
  print_limits("restored", read_limits());
  const float t3 = time_plan(a, s, n), t3c = time_plan(c, s, n);
  std::printf("t3  A / C after restoring limits   %7.1f / %7.1f us  (%+.1f / %+.1f)\n", t3, t3c, t3 - t0, t3c - t0);
  const cudaError_t err = cudaGetLastError();
  std::printf("last CUDA error: %s\n", cudaGetErrorString(err));
  cudaStreamDestroy(s);
  return 0;
}
