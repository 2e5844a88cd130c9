// launch_probe: the GPU's per-node launch cost inside a CUDA Graph, as `warpstream bench` records it at the start and
// end of every run (bench/launch_probe.h says why).
// Computes: nothing (empty kernels); a graph of N dependent kernel nodes (captured on a non-blocking stream), replayed
// with CUDA events around each cudaGraphLaunch; the median replay over N.
// Thread mapping: each node is 132 blocks x 128 threads (one block per H100 SM, as a real layer's grid) that return at
// once.
// Test: nothing to verify (no outputs); every CUDA call checked; the bench rows of device runs print it
// (`launch_probe_us_per_node_*` in the JSON report). Time: ~N x 1 µs per replay, 200 replays: ~12 ms per call.
#include "bench/launch_probe.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"

namespace ws::bench {
namespace {

__global__ void launch_probe_empty_kernel() {}

struct ProbeResources {  // released on every return
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  ~ProbeResources() {
    if (stream) cudaStreamSynchronize(stream);  // nothing of the probe in flight when its objects go
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (start) cudaEventDestroy(start);
    if (end) cudaEventDestroy(end);
    if (stream) cudaStreamDestroy(stream);
    (void)cudaGetLastError();  // a failed probe leaves no error behind for the caller's next check (the bench carries on)
  }
};

}  // namespace

Result<double> launch_probe_us_per_node(int nodes, int reps) {
  if (nodes < 1 || nodes > 1024 || reps < 1 || reps > 100000) {
    return invalid_argument("launch probe: nodes " + std::to_string(nodes) + " (1..1024), reps " + std::to_string(reps) +
                            " (1..100000)");
  }
  ProbeResources r;
  WS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  WS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.start));
  WS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.end));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < nodes; ++i) launch_probe_empty_kernel<<<132, 128, 0, r.stream>>>();
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t ended = cudaStreamEndCapture(r.stream, &r.graph);
  WS_CUDA_RETURN_IF_ERROR(launched);
  WS_CUDA_RETURN_IF_ERROR(ended);
  WS_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&r.exec, r.graph, 0));
  std::vector<float> us;
  us.reserve(static_cast<size_t>(reps));
  for (int i = 0; i < 20 + reps; ++i) {
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(r.start, r.stream));
    WS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(r.exec, r.stream));
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(r.end, r.stream));
    WS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(r.end));
    float ms = 0;
    WS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, r.start, r.end));
    if (i >= 20) us.push_back(ms * 1000.0f);
  }
  std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
  return static_cast<double>(us[us.size() / 2]) / nodes;
}

}  // namespace ws::bench
