// Weight streaming scheduler; see streamer.h for the ordering contract.
#include "flow/streamer.h"

#include <algorithm>
#include <string>
#include <utility>

namespace ws::flow {

Streamer::Streamer(Streamer&& o) noexcept
    : plan_(std::move(o.plan_)), layers_(std::move(o.layers_)), ring_(std::move(o.ring_)), copy_(std::move(o.copy_)),
      compute_(std::move(o.compute_)), fork_(std::move(o.fork_)), copy_join_(std::move(o.copy_join_)),
      compute_join_(std::move(o.compute_join_)), copy_done_(std::move(o.copy_done_)),
      compute_done_(std::move(o.compute_done_)), t_copy0_(std::move(o.t_copy0_)), t_copy1_(std::move(o.t_copy1_)),
      t_comp0_(std::move(o.t_comp0_)), t_comp1_(std::move(o.t_comp1_)), t_fork_(std::move(o.t_fork_)),
      graph_(std::exchange(o.graph_, nullptr)), graph_exec_(std::exchange(o.graph_exec_, nullptr)),
      prefetched_(o.prefetched_), primed_(o.primed_) {}

Streamer& Streamer::operator=(Streamer&& o) noexcept {
  if (this != &o) {
    destroy_graph();
    plan_ = std::move(o.plan_);
    layers_ = std::move(o.layers_);
    // Events and streams before the ring: nothing may still use the ring when it is freed (cudaFree syncs).
    fork_ = std::move(o.fork_);
    copy_join_ = std::move(o.copy_join_);
    compute_join_ = std::move(o.compute_join_);
    copy_done_ = std::move(o.copy_done_);
    compute_done_ = std::move(o.compute_done_);
    t_copy0_ = std::move(o.t_copy0_);
    t_copy1_ = std::move(o.t_copy1_);
    t_comp0_ = std::move(o.t_comp0_);
    t_comp1_ = std::move(o.t_comp1_);
    t_fork_ = std::move(o.t_fork_);
    copy_ = std::move(o.copy_);
    compute_ = std::move(o.compute_);
    ring_ = std::move(o.ring_);
    graph_ = std::exchange(o.graph_, nullptr);
    graph_exec_ = std::exchange(o.graph_exec_, nullptr);
    prefetched_ = o.prefetched_;
    primed_ = o.primed_;
  }
  return *this;
}

Streamer::~Streamer() { destroy_graph(); }

void Streamer::destroy_graph() {
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
}

Result<Streamer> Streamer::create(std::vector<HostLayer> layers, const StreamerOptions& options) {
  std::vector<uint64_t> bytes;
  bytes.reserve(layers.size());
  for (const HostLayer& l : layers) bytes.push_back(l.bytes);
  uint64_t budget = options.vram_budget_bytes;
  if (budget == 0 && !bytes.empty() && options.slots >= 1) {
    uint64_t largest = 0;
    for (uint64_t b : bytes) largest = b > largest ? b : largest;
    budget = round_up(largest, kSlotAlignment) * static_cast<uint64_t>(options.slots);
  }
  WS_ASSIGN_OR_RETURN(StreamPlan plan, build_stream_plan(bytes, budget, options.slots));
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].host) return invalid_argument("streamer: layer " + std::to_string(i) + " has a null host pointer");
    cudaPointerAttributes attr{};
    cudaError_t err = cudaPointerGetAttributes(&attr, layers[i].host);
    if (err != cudaSuccess || attr.type != cudaMemoryTypeHost) {
      (void)cudaGetLastError();
      return invalid_argument("streamer: layer " + std::to_string(i) +
                              " is not in page-locked host memory (allocate with cudaHostAlloc / PinnedBuffer or "
                              "cudaHostRegister): pageable copies would serialise the pipeline");
    }
  }
  Streamer s;
  s.plan_ = std::move(plan);
  if (options.prefetch_next_pass) s.prefetched_ = std::min(s.plan_.slots - 1, s.plan_.layers());
  s.layers_ = std::move(layers);
  WS_ASSIGN_OR_RETURN(s.ring_, cuda::DeviceBuffer::allocate(s.plan_.ring_bytes));
  WS_ASSIGN_OR_RETURN(s.copy_, cuda::Stream::create());
  WS_ASSIGN_OR_RETURN(s.compute_, cuda::Stream::create());
  const unsigned kOrder = cudaEventDisableTiming;
  WS_ASSIGN_OR_RETURN(s.fork_, cuda::Event::create(kOrder));
  WS_ASSIGN_OR_RETURN(s.copy_join_, cuda::Event::create(kOrder));
  WS_ASSIGN_OR_RETURN(s.compute_join_, cuda::Event::create(kOrder));
  for (int i = 0; i < s.plan_.slots; ++i) {
    WS_ASSIGN_OR_RETURN(cuda::Event a, cuda::Event::create(kOrder));
    WS_ASSIGN_OR_RETURN(cuda::Event b, cuda::Event::create(kOrder));
    s.copy_done_.push_back(std::move(a));
    s.compute_done_.push_back(std::move(b));
  }
  if (options.record_timeline) {
    WS_ASSIGN_OR_RETURN(s.t_fork_, cuda::Event::create());
    for (int i = 0; i < s.plan_.layers(); ++i) {
      for (auto* v : {&s.t_copy0_, &s.t_copy1_, &s.t_comp0_, &s.t_comp1_}) {
        WS_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create());
        v->push_back(std::move(e));
      }
    }
  }
  return s;
}

const void* Streamer::slot_ptr(int s) const {
  return static_cast<const char*>(ring_.get()) + plan_.slot_offsets[static_cast<size_t>(s)];
}

Status Streamer::prime(cudaStream_t caller) {
  if (prefetched_ == 0) return Status::ok();
  cudaStream_t cs = copy_.get();
  char* ring = static_cast<char*>(ring_.get());
  WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(fork_.get(), caller));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(cs, fork_.get(), 0));
  for (int j = 0; j < prefetched_; ++j) {
    const int slot = plan_.layer_slot[static_cast<size_t>(j)];
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ring + plan_.slot_offsets[static_cast<size_t>(slot)],
                                            layers_[static_cast<size_t>(j)].host,
                                            layers_[static_cast<size_t>(j)].bytes, cudaMemcpyHostToDevice, cs));
  }
  WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy_join_.get(), cs));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(caller, copy_join_.get(), 0));
  primed_ = true;
  return Status::ok();
}

Status Streamer::enqueue(cudaStream_t caller, const LayerCompute& compute) { return enqueue_impl(caller, compute, false); }

Status Streamer::enqueue_timed(cudaStream_t caller, const LayerCompute& compute) {
  if (t_copy0_.empty()) return failed_precondition("streamer: enqueue_timed needs StreamerOptions::record_timeline");
  return enqueue_impl(caller, compute, true);
}

Status Streamer::enqueue_impl(cudaStream_t caller, const LayerCompute& compute, bool timed) {
  const int L = plan_.layers();
  const int S = plan_.slots;
  const int P = prefetched_;
  if (P > 0 && !primed_)
    return failed_precondition("streamer: prefetch_next_pass needs prime() before the first pass");
  cudaStream_t cs = copy_.get(), ks = compute_.get();
  char* ring = static_cast<char*>(ring_.get());
  // Fork: both streams start after the caller's prior work (and join the capture when capturing).
  WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(fork_.get(), caller));
  if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_fork_.get(), caller));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(cs, fork_.get(), 0));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(ks, fork_.get(), 0));
  // Layers 0 .. P-1 are already in their slots (prime() or the previous pass's tail), ordered before this pass
  // by the fork: no copy, and no copy-done wait for them (that event was recorded outside this pass).
  int issued = P;  // copies enqueued so far (layers 0 .. issued-1)
  for (int i = 0; i < L; ++i) {
    // Issue the copies that may run while layer i computes: up to layer i + S - 1. Copy j waits for the
    // compute of j - S, whose done-event was recorded in an earlier iteration (host issue order matters:
    // a wait binds to the latest record at call time).
    const int last = ring_prefetch_limit(i, S, L);
    for (; issued <= last; ++issued) {
      const int j = issued;
      const int slot = plan_.layer_slot[static_cast<size_t>(j)];
      if (ring_previous_user(j, S) >= 0)
        WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(cs, compute_done_[static_cast<size_t>(slot)].get(), 0));
      if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_copy0_[static_cast<size_t>(j)].get(), cs));
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ring + plan_.slot_offsets[static_cast<size_t>(slot)],
                                              layers_[static_cast<size_t>(j)].host,
                                              layers_[static_cast<size_t>(j)].bytes, cudaMemcpyHostToDevice, cs));
      if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_copy1_[static_cast<size_t>(j)].get(), cs));
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy_done_[static_cast<size_t>(slot)].get(), cs));
    }
    const int slot = plan_.layer_slot[static_cast<size_t>(i)];
    if (i >= P) WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(ks, copy_done_[static_cast<size_t>(slot)].get(), 0));
    if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_comp0_[static_cast<size_t>(i)].get(), ks));
    WS_RETURN_IF_ERROR(compute(i, ring + plan_.slot_offsets[static_cast<size_t>(slot)],
                               layers_[static_cast<size_t>(i)].bytes, ks));
    if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_comp1_[static_cast<size_t>(i)].get(), ks));
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(compute_done_[static_cast<size_t>(slot)].get(), ks));
  }
  // Tail prefetch: layers 0 .. P-1 of the next pass, each after its slot's last user in this pass (the latest
  // compute_done record of that slot), overlapping this pass's last layers.
  for (int j = 0; j < P; ++j) {
    const int slot = plan_.layer_slot[static_cast<size_t>(j)];
    WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(cs, compute_done_[static_cast<size_t>(slot)].get(), 0));
    if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_copy0_[static_cast<size_t>(j)].get(), cs));
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ring + plan_.slot_offsets[static_cast<size_t>(slot)],
                                            layers_[static_cast<size_t>(j)].host,
                                            layers_[static_cast<size_t>(j)].bytes, cudaMemcpyHostToDevice, cs));
    if (timed) WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(t_copy1_[static_cast<size_t>(j)].get(), cs));
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy_done_[static_cast<size_t>(slot)].get(), cs));
  }
  // Join: the caller's later work waits for both streams (the copy stream's last copy is already awaited
  // by compute, but capture requires every forked stream to rejoin).
  WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy_join_.get(), cs));
  WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(compute_join_.get(), ks));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(caller, copy_join_.get(), 0));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(caller, compute_join_.get(), 0));
  return Status::ok();
}

Result<std::vector<LayerTiming>> Streamer::timeline() const {
  if (t_copy0_.empty()) return failed_precondition("streamer: no timeline (record_timeline was off)");
  std::vector<LayerTiming> out(static_cast<size_t>(plan_.layers()));
  for (size_t i = 0; i < out.size(); ++i) {
    WS_ASSIGN_OR_RETURN(out[i].copy_start, cuda::elapsed_ms(t_fork_, t_copy0_[i]));
    WS_ASSIGN_OR_RETURN(out[i].copy_end, cuda::elapsed_ms(t_fork_, t_copy1_[i]));
    WS_ASSIGN_OR_RETURN(out[i].compute_start, cuda::elapsed_ms(t_fork_, t_comp0_[i]));
    WS_ASSIGN_OR_RETURN(out[i].compute_end, cuda::elapsed_ms(t_fork_, t_comp1_[i]));
  }
  return out;
}

Status Streamer::capture_graph(cudaStream_t caller, const LayerCompute& compute) {
  destroy_graph();
  WS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(caller, cudaStreamCaptureModeThreadLocal));
  Status st = enqueue_impl(caller, compute, false);
  cudaGraph_t g = nullptr;
  cudaError_t end = cudaStreamEndCapture(caller, &g);
  if (!st.is_ok()) {
    if (g) cudaGraphDestroy(g);
    return st;
  }
  if (end != cudaSuccess) return cuda::cuda_status(end, "cudaStreamEndCapture", __FILE__, __LINE__);
  graph_ = g;
  cudaError_t inst = cudaGraphInstantiate(&graph_exec_, graph_, 0);
  if (inst != cudaSuccess) {
    destroy_graph();
    return cuda::cuda_status(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  return Status::ok();
}

Status Streamer::launch_graph(cudaStream_t caller) {
  if (!graph_exec_) return failed_precondition("streamer: launch_graph before capture_graph");
  WS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_exec_, caller));
  return Status::ok();
}

}  // namespace ws::flow
