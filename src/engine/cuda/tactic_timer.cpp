// The tactic timer (BuildDevice in cuda_ops.h): build-time scratch buffers and event timing of candidate
// kernels, stream launches or one captured CUDA graph.
#include "engine/cuda/cuda_ops.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ws::cudaexec {

BuildDevice::~BuildDevice() {
  if (cudnn) cudnnDestroy(cudnn);
  if (lt) cublasLtDestroy(lt);
}

Result<void*> BuildDevice::get(int slot, size_t bytes) {
  cuda::DeviceBuffer& b = scratch[slot];
  if (b.bytes() < bytes) {
    b.reset();
    WS_ASSIGN_OR_RETURN(b, cuda::DeviceBuffer::allocate(bytes));
    WS_RETURN_IF_ERROR(::ws::cuda::fill_device(b.get(), 0, bytes));
  }
  return b.get();
}

namespace {
bool trace_tactics() {
  static const bool on = [] {
    const char* v = std::getenv("WS_TRACE_TACTICS");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}
}  // namespace

Result<float> BuildDevice::time_us(const std::function<Status(cudaStream_t)>& fn, int reps, bool capture, const std::string& label) {
  if (trace_tactics()) {
    std::fprintf(stderr, "[tactic] timing %s\n", label.empty() ? "(unnamed)" : label.c_str());
    std::fflush(stderr);
    Result<float> r = time_us_impl(fn, reps, capture);
    const cudaError_t e = cudaStreamSynchronize(stream.get());
    std::fprintf(stderr, "[tactic] %s: %s%s\n", label.empty() ? "(unnamed)" : label.c_str(),
                 r.is_ok() ? "ran" : r.status().to_string().c_str(), e == cudaSuccess ? "" : " (stream fault)");
    std::fflush(stderr);
    return r;
  }
  return time_us_impl(fn, reps, capture);
}

Result<float> BuildDevice::time_us_impl(const std::function<Status(cudaStream_t)>& fn, int reps, bool capture) {
  if (reps <= 0) reps = timing_reps;
  for (int i = 0; i < timing_warmups; ++i) WS_RETURN_IF_ERROR(fn(stream.get()));
  // Timed as the lanes run it: `reps` back-to-back copies captured into one CUDA graph and replayed (per-node
  // launch cost ~0.5 µs on the GPU, no host launch gaps), so a two-kernel tactic is not charged host launch
  // latency that graph replay never pays. Falls back to stream launches if the call cannot be captured.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (capture && cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    Status st = Status::ok();
    for (int i = 0; i < reps && st.is_ok(); ++i) st = fn(stream.get());
    const cudaError_t e = cudaStreamEndCapture(stream.get(), &graph);
    if (!st.is_ok() || e != cudaSuccess || !graph || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) exec = nullptr;
  }
  (void)cudaGetLastError();
  Status st = Status::ok();
  if (exec) {
    st = cudaGraphLaunch(exec, stream.get()) == cudaSuccess ? Status::ok() : internal_error("graph launch failed");  // warm upload
    if (st.is_ok()) {
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream.get()));
      if (cudaGraphLaunch(exec, stream.get()) != cudaSuccess) st = internal_error("graph launch failed");
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream.get()));
    }
  } else {
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream.get()));
    for (int i = 0; i < reps && st.is_ok(); ++i) st = fn(stream.get());
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream.get()));
  }
  const cudaError_t sync = cudaEventSynchronize(stop.get());
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  WS_RETURN_IF_ERROR(st);
  if (sync != cudaSuccess) return Status(StatusCode::kCuda, std::string("tactic timing: ") + cudaGetErrorString(sync));
  WS_ASSIGN_OR_RETURN(float ms, cuda::elapsed_ms(start, stop));
  return ms * 1000.0f / static_cast<float>(reps);
}

}  // namespace ws::cudaexec
