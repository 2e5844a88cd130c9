// Lab: what process state makes a frame slower after the build timed its tactics in the same process?
// Device runs 100-101: ResNet-50 fp16 (1 lane, CUDA graph, device frame) ran at 330 us GPU p50 in a process that timed
// its tactics, 310 us in one that read the same timing cache; the same choices, not a clock transient, and still slow
// after rebuilding from the cache in the same process. This program separates the candidates in one process:
//   1. build engine A from an existing cache; time A (t0)                       -> the clean baseline
//   0. action `write` (a process of its own, first): times every tactic, writes the cache, exits
//   2. the action (argv[3]): none | malloc (1 GiB cudaMalloc + memset + free) | fresh (build engine B with no cache:
//      every tactic timed, then B destroyed) | fresh_cudnn / fresh_ws (the same with one tactic source)
//   3. time A again (t1): A's graph and arena predate the action -> a slow t1 means context-wide state, not layout
//   4. build engine C from the same cache; time C and A (t2, t2a)
//   5. restore the limits printed before the action (stack size, malloc heap, device cache config; not the printf FIFO
//      or the L2 persisting size, which did not differ in run 102); time A (t3)
//   6. dump every kernel node's function attributes (max dynamic smem, carveout: per function, process-wide, read at
//      each launch) before / after the action, restore them (t4), then set each function's cache config to none (t5);
//   7. launch A's steps once more through the libraries (one capture of its enqueue; t6)
//   8. the reset search (r lines; not yet run on a GPU): after each candidate action (the persisting L2 lines reset, a
//      local-memory resize, the empty graph uploaded / re-instantiated / on a new stream, 200 ms idle, a new engine D
//      built from the cache and destroyed), the 58-empty-kernel graph alone, then A: which action, if any, brings the
//      fast launch mode back (docs/lanes-plan.md, sixteenth session)
// It prints cudaDeviceGetLimit / cudaDeviceGetCacheConfig / cudaMemGetInfo before and after the action.
// Timing: the host waits for each frame (as a lane); CUDA events around each replay; medians of N frames, alternated in
// rounds so a drift shows. Not a test: no pass/fail.
// Build: cmake --build build-dev --target exp_process_state_00
// Run:   warpstream bench ... --timing-cache C (writes C), then exp_process_state_00 resnet50.onnx C fresh [N=2000]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

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
  for (const auto& t : p.engine->tactics()) timed += !t.from_cache && !t.same_problem && t.time_us > 0;  // as bench counts
  std::printf("%s: built, %zu kernels, %zu tactics timed in this build\n", what, p.engine->kernel_count(), timed);
  return true;
}

// The SM clock as the kernels see it: one thread on a second stream counts %clock64 ticks over `ns` nanoseconds of
// %globaltimer while the frames run beside it (NVML reported 1980 MHz in both states, runs 101 and 103; this reads what
// the SMs run at). A PTX kernel loaded through the driver, so that this host-side lab needs no .cu.
// Median GPU µs (CUDA events around `enqueue` on stream s) of n runs, the host waiting for each.
template <class F>
float median_event_us(cudaStream_t s, int n, F&& enqueue) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> us;
  for (int i = 0; i < n; ++i) {
    cudaEventRecord(a, s);
    enqueue();
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

const char kClockProbePtx[] = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry clock_probe(.param .u64 out, .param .u64 ns) {
  .reg .u64 %rd<10>;
  .reg .pred %p;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [ns];
  mov.u64 %rd3, %globaltimer;
  mov.u64 %rd4, %clock64;
SPIN:
  mov.u64 %rd5, %globaltimer;
  sub.u64 %rd6, %rd5, %rd3;
  setp.lt.u64 %p, %rd6, %rd2;
  @%p bra SPIN;
  mov.u64 %rd7, %clock64;
  sub.u64 %rd8, %rd7, %rd4;
  cvta.to.global.u64 %rd9, %rd1;
  st.global.u64 [%rd9], %rd8;
  st.global.u64 [%rd9+8], %rd6;
  ret;
}
.visible .entry empty_kernel() {
  ret;
}
)";

struct ClockProbe {
  CUfunction fn = nullptr, empty = nullptr;
  cudaGraphExec_t empty_graph = nullptr;  // 58 empty kernels (132 blocks x 128 threads), as many nodes as ResNet-50's frame
  cudaStream_t s2 = nullptr;
  unsigned long long* out = nullptr;  // [ticks, ns]
  bool ok = false;
  void init() {
    CUmodule m = nullptr;
    if (cuModuleLoadData(&m, kClockProbePtx) != CUDA_SUCCESS || cuModuleGetFunction(&fn, m, "clock_probe") != CUDA_SUCCESS) {
      std::printf("clock probe: the PTX did not load; no clock readings\n");
      return;
    }
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    ok = cudaMalloc(&out, 16) == cudaSuccess;
    // The launch path alone: a graph of 58 dependent empty kernels. If the slow state is in how the GPU launches kernels
    // (and not in what A's kernels read), this graph slows with it.
    if (cuModuleGetFunction(&empty, m, "empty_kernel") == CUDA_SUCCESS) empty_graph = capture_empty(s2);
  }
  // A new instantiation of the 58-empty-kernel graph, captured on `st` (nullptr when the capture fails).
  cudaGraphExec_t capture_empty(cudaStream_t st) {
    cudaGraphExec_t exec = nullptr;
    cudaGraph_t g = nullptr;
    cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < 58; ++i) cuLaunchKernel(empty, 132, 1, 1, 128, 1, 1, 0, reinterpret_cast<CUstream>(st), nullptr, nullptr);
    if (cudaStreamEndCapture(st, &g) == cudaSuccess && g) {
      if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) exec = nullptr;
      cudaGraphDestroy(g);
    }
    return exec;
  }
  float empty_us(int n) {  // median GPU µs of n replays of the empty graph (host waits for each)
    if (!empty_graph) return 0;
    return median_event_us(s2, n, [&] { cudaGraphLaunch(empty_graph, s2); });
  }
  void start(unsigned long long ns) {
    if (!ok) return;
    void* args[] = {&out, &ns};
    cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(s2), args, nullptr);
  }
  double mhz() {  // after start(): waits for the probe
    if (!ok) return 0;
    unsigned long long h[2] = {0, 0};
    cudaStreamSynchronize(s2);
    cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost);
    return h[1] ? 1000.0 * double(h[0]) / double(h[1]) : 0;
  }
};
ClockProbe g_probe;
double g_last_mhz = 0, g_idle_mhz = 0;

// Median GPU µs of n frames of p (host waits for each frame). Also reads the SM clock: g_last_mhz during the first
// ~2 ms of the frames (the probe beside them), g_idle_mhz right after them with nothing else running.
float time_plan(Plan& p, cudaStream_t s, int n) {
  g_probe.start(2000000);
  const float median = median_event_us(s, n, [&] { (void)p.ctx->enqueue(s); });
  g_last_mhz = g_probe.mhz();
  g_probe.start(200000);
  g_idle_mhz = g_probe.mhz();
  if (g_probe.ok)
    std::printf("      [SM clock %.0f MHz beside the frames, %.0f MHz alone after them; 58 empty kernels as a graph %.2f us]\n",
                g_last_mhz, g_idle_mhz, g_probe.empty_us(300));
  return median;
}


// Every kernel node of one captured enqueue of `p`: its function (driver handle) and the function-wide attributes a
// library may change at any time (cuFuncSetAttribute / cuFuncSetCacheConfig are per function, process-wide, and read at
// each launch, also a graph replay's), plus the node's dynamic shared memory.
// The kernel's name (cuFuncGetName: CUDA 12.3+), "?" before that.
const char* func_name(CUfunction f) {
  const char* name = nullptr;
#if CUDA_VERSION >= 12030
  if (cuFuncGetName(&name, f) != CUDA_SUCCESS) name = nullptr;
#else
  (void)f;
#endif
  return name ? name : "?";
}

struct FuncState {
  int max_dyn_smem = 0, carveout = 0, static_smem = 0, local = 0, regs = 0, cache_ca = 0, node_smem = 0;
  bool operator!=(const FuncState& o) const {
    return max_dyn_smem != o.max_dyn_smem || carveout != o.carveout || node_smem != o.node_smem;
  }
};
using FuncMap = std::vector<std::pair<CUfunction, FuncState>>;

FuncMap dump_funcs(Plan& p, cudaStream_t s) {
  FuncMap out;
  cudaGraph_t g = nullptr;
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return out;
  (void)p.ctx->enqueue(s);
  if (cudaStreamEndCapture(s, &g) != cudaSuccess || !g) { std::printf("dump: capture failed\n"); return out; }
  size_t n = 0;
  cuGraphGetNodes(reinterpret_cast<CUgraph>(g), nullptr, &n);
  std::vector<CUgraphNode> nodes(n);
  cuGraphGetNodes(reinterpret_cast<CUgraph>(g), nodes.data(), &n);
  size_t skipped = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType t;
    cuGraphNodeGetType(node, &t);
    if (t != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    CUDA_KERNEL_NODE_PARAMS kp{};
    if (cuGraphKernelNodeGetParams(node, &kp) != CUDA_SUCCESS) { ++skipped; continue; }
#if CUDA_VERSION >= 12000
    if (!kp.func && kp.kern) cuKernelGetFunction(&kp.func, kp.kern);  // a node launched from a CUkernel (library handle)
#endif
    if (!kp.func) { ++skipped; continue; }
    FuncState f;
    cuFuncGetAttribute(&f.max_dyn_smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kp.func);
    cuFuncGetAttribute(&f.carveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, kp.func);
    cuFuncGetAttribute(&f.static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kp.func);
    cuFuncGetAttribute(&f.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kp.func);
    cuFuncGetAttribute(&f.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kp.func);
    cuFuncGetAttribute(&f.cache_ca, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, kp.func);
    f.node_smem = static_cast<int>(kp.sharedMemBytes);
    out.emplace_back(kp.func, f);
  }
  cudaGraphDestroy(g);
  if (skipped) std::printf("dump: %zu kernel nodes without a readable function skipped\n", skipped);
  return out;
}

// The same functions' attributes read again (no capture: capturing would launch the steps through cuDNN again, which
// sets the attributes its chosen algorithms want, so a dump by capture would repair what it means to observe).
FuncMap reread(const FuncMap& m) {
  FuncMap out = m;
  for (auto& [fn, f] : out) {
    cuFuncGetAttribute(&f.max_dyn_smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn);
    cuFuncGetAttribute(&f.carveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, fn);
  }
  return out;
}

void print_funcs(const char* when, const FuncMap& m) {
  std::printf("functions %s: %zu kernel nodes\n", when, m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const FuncState& f = m[i].second;
    std::printf("  %2zu max_dyn_smem %6d carveout %4d static_smem %6d node_smem %6d local %4d regs %3d ca %d  %.90s\n", i,
                f.max_dyn_smem, f.carveout, f.static_smem, f.node_smem, f.local, f.regs, f.cache_ca, func_name(m[i].first));
  }
}

// Prints the nodes whose function attributes differ from `before`; returns how many.
int diff_funcs(const char* when, const FuncMap& before, const FuncMap& now) {
  int d = 0;
  for (size_t i = 0; i < std::min(before.size(), now.size()); ++i) {
    const FuncState &a = before[i].second, &b = now[i].second;
    if (before[i].first != now[i].first || a != b) {
      std::printf("  diff %s node %2zu: max_dyn_smem %d -> %d, carveout %d -> %d, node_smem %d -> %d%s  %.80s\n", when, i,
                  a.max_dyn_smem, b.max_dyn_smem, a.carveout, b.carveout, a.node_smem, b.node_smem,
                  before[i].first != now[i].first ? " (another function)" : "", func_name(now[i].first));
      ++d;
    }
  }
  std::printf("functions %s: %d of %zu kernel nodes differ from before the action\n", when, d, now.size());
  return d;
}

// Sets each function's settable attributes back to `before` (max dynamic smem, carveout) and its cache config to
// "prefer none" (cuFuncSetCacheConfig has no getter: the legacy per-function preference a library may have set).
void restore_funcs(const FuncMap& before, bool cache_config) {
  for (const auto& [fn, f] : before) {
    cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f.max_dyn_smem);
    cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f.carveout);
    if (cache_config) cuFuncSetCacheConfig(fn, CU_FUNC_CACHE_PREFER_NONE);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.onnx TIMING_CACHE.json write|none|malloc|fresh|fresh_cudnn|fresh_ws [N=2000]\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1], cache = argv[2], action = argv[3];
  const long n_arg = argc > 4 ? std::strtol(argv[4], nullptr, 10) : 2000;
  if (n_arg < 100 || n_arg > 1000000) {  // the samples are kept: bounded memory, and a typo is not a silent default
    std::fprintf(stderr, "N must be 100..1000000 frames, got '%s'\n", argv[4]);
    return 2;
  }
  const int n = static_cast<int>(n_arg);
  static const char* const kActions[] = {"write", "none", "malloc", "fresh", "fresh_cudnn", "fresh_ws"};
  if (std::none_of(std::begin(kActions), std::end(kActions), [&](const char* k) { return action == k; })) {
    std::fprintf(stderr, "unknown action '%s' (write, none, malloc, fresh, fresh_cudnn or fresh_ws)\n", action.c_str());
    return 2;
  }
  auto g = ws::ir::import_onnx(model);
  if (!g) { std::printf("import: %s\n", g.status().to_string().c_str()); return 1; }
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  g_probe.init();
  ws::CudaBuildOptions o;
  o.precision = ws::Precision::kFloat16;
  o.timing_cache_path = cache;
  Plan a;
  if (action == "write") {  // this process times every tactic and writes the cache for the processes that read it
    if (!make_plan(*g, o, s, a, "write (tactics timed, cache written)")) return 1;
    return 0;
  }
  if (!make_plan(*g, o, s, a, "A (cache)")) return 1;
  const FuncMap funcs0 = dump_funcs(a, s);  // A's kernel functions (one capture of its enqueue), before anything else
  time_plan(a, s, 500);  // warm
  const float t0 = time_plan(a, s, n);
  std::printf("t0  A before the action            %7.1f us\n", t0);
  const Limits before = read_limits();
  print_limits("before", before);
  print_funcs("before", funcs0);

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
  }  // "none": nothing (the action was checked against kActions above)
  cudaDeviceSynchronize();
  const Limits after = read_limits();
  print_limits("after", after);
  diff_funcs("after the action", funcs0, reread(funcs0));

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
  diff_funcs("after C's build", funcs0, reread(funcs0));

  // Put the limits back as they were before the action, then time again.
  cudaDeviceSetLimit(cudaLimitStackSize, before.stack);
  cudaDeviceSetLimit(cudaLimitMallocHeapSize, before.heap);
  cudaDeviceSetCacheConfig(before.cache);
  cudaDeviceSynchronize();
  print_limits("restored", read_limits());
  const float t3 = time_plan(a, s, n), t3c = time_plan(c, s, n);
  std::printf("t3  A / C after restoring limits   %7.1f / %7.1f us  (%+.1f / %+.1f)\n", t3, t3c, t3 - t0, t3c - t0);
  // Put every kernel function's attributes back as they were before the action, then the legacy cache config.
  restore_funcs(funcs0, false);
  diff_funcs("restored", funcs0, reread(funcs0));
  const float t4 = time_plan(a, s, n), t4c = time_plan(c, s, n);
  std::printf("t4  A / C after restoring attrs    %7.1f / %7.1f us  (%+.1f / %+.1f)\n", t4, t4c, t4 - t0, t4c - t0);
  restore_funcs(funcs0, true);
  const float t5 = time_plan(a, s, n), t5c = time_plan(c, s, n);
  std::printf("t5  A / C after cache config none  %7.1f / %7.1f us  (%+.1f / %+.1f)\n", t5, t5c, t5 - t0, t5c - t0);
  // Launch A's steps once more through the libraries (a capture: cuDNN sets what its chosen algorithms want), time again.
  diff_funcs("after a re-capture", funcs0, reread(dump_funcs(a, s)));
  const float t6 = time_plan(a, s, n), t6c = time_plan(c, s, n);
  std::printf("t6  A / C after A's steps re-launched %5.1f / %7.1f us  (%+.1f / %+.1f)\n", t6, t6c, t6 - t0, t6c - t0);

  // The reset search (sixteenth session's question, not yet run on a GPU): in the slow mode (the empty graph at ~63 µs
  // instead of ~53 on an H100), does any one action return the fast one? Each candidate, then the empty graph alone
  // (before any engine runs again: the probe follows the engine timed just before it, run 107), then A.
  if (g_probe.empty_graph) {
    auto after = [&](const char* what) {
      const float e = g_probe.empty_us(300);
      time_plan(a, s, 500);
      const float ta_r = time_plan(a, s, n);
      std::printf("r   %-46s empty graph %6.2f us, then A %7.1f us (%+.1f)\n", what, e, ta_r, ta_r - t0);
    };
    after("(nothing: the state before the search)");
    cudaCtxResetPersistingL2Cache();
    after("cudaCtxResetPersistingL2Cache");
    size_t stack = 0;
    cudaDeviceGetLimit(&stack, cudaLimitStackSize);
    cudaDeviceSetLimit(cudaLimitStackSize, stack * 4);  // the driver resizes the context's local memory
    cudaDeviceSetLimit(cudaLimitStackSize, stack);
    after("cudaLimitStackSize x4 and back");
    cudaGraphUpload(g_probe.empty_graph, g_probe.s2);
    cudaStreamSynchronize(g_probe.s2);
    after("the empty graph uploaded again");
    if (cudaGraphExec_t fresh = g_probe.capture_empty(g_probe.s2)) {
      cudaGraphExecDestroy(g_probe.empty_graph);
      g_probe.empty_graph = fresh;
      after("the empty graph captured and instantiated again");
    }
    cudaStream_t s3 = nullptr;
    cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking);
    std::swap(g_probe.s2, s3);  // the probe on a stream created now
    after("the probe on a new stream");
    std::swap(g_probe.s2, s3);
    cudaStreamDestroy(s3);
    cudaDeviceSynchronize();
    usleep(200000);
    after("200 ms idle");
    {
      Plan d;
      if (make_plan(*g, o, s, d, "D (cache, in the reset search)")) after("engine D built from the cache (kept)");
    }
    after("engine D destroyed");
  }
  const cudaError_t err = cudaGetLastError();
  std::printf("last CUDA error: %s\n", cudaGetErrorString(err));
  cudaStreamDestroy(s);
  return 0;
}
