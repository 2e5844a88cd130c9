#pragma once
/// \file streamer.h
/// Weight streaming scheduler (the capacity rail; VRAMFlow stage 04). A model's weights are an ordered
/// list of layers in pinned host memory; a ring of S device slots is carved once, at create(), from one
/// DeviceBuffer sized by build_stream_plan(); each pass copies layer i into slot i mod S on a copy stream
/// while a compute stream runs the caller's per-layer work on the slot that already holds its layer.
///
/// Ordering is through CUDA events only, never a host synchronisation per layer:
///   copy j    waits compute_done[slot j]   (recorded by layer j - S, the slot's previous user)
///   compute i waits copy_done[slot i]      (recorded by the copy of layer i)
/// so the copy stream runs up to S-1 layers ahead of compute (S = 1 sequential, 2 double, 3 triple).
/// enqueue() forks both streams from the caller's stream and joins them back into it, so one pass is
/// ordered after prior work on that stream and later work on it sees the pass complete; the same code
/// path under stream capture yields one CUDA Graph of the whole L-layer loop (capture_graph()).
///
/// Build/run split: create() allocates everything (ring, streams, events, timing events); enqueue(),
/// launch_graph() allocate nothing.

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "cuda/cuda_util.h"
#include "flow/host/stream_plan.h"
#include "warpstream/status.h"

namespace ws::flow {

/// One layer's weights in page-locked host memory (cudaHostAlloc / cudaHostRegister): `bytes` at `host`.
struct HostLayer {
  const void* host = nullptr;
  uint64_t bytes = 0;
};

/// Per-layer work: enqueue layer `layer` on `compute`, reading its weights at `device_weights`
/// (`bytes` long, inside the ring). Must only enqueue (no sync, no allocation) so that a pass is capturable.
using LayerCompute = std::function<Status(int layer, const void* device_weights, uint64_t bytes, cudaStream_t compute)>;

/// Event timestamps of one pass, in milliseconds since the pass's fork on the caller stream.
struct LayerTiming {
  float copy_start = 0, copy_end = 0, compute_start = 0, compute_end = 0;
};

struct StreamerOptions {
  int slots = 2;                   ///< S >= 1
  uint64_t vram_budget_bytes = 0;  ///< device bytes the ring may take; 0 = exactly S x largest layer
  bool record_timeline = false;    ///< allocate per-layer timing events (enqueue_timed())
  /// Cross-pass prefetch (additive; default off = the behaviour above). With it, every pass ends by copying
  /// layers 0 .. P-1 (P = min(S-1, L)) of the NEXT pass into their slots while the pass's last layers compute
  /// (each such copy waits for its slot's last user in this pass), and every pass starts without copying them:
  /// the invariant "between passes, slots hold layers 0 .. P-1" is set up once by prime() and kept by every pass.
  /// The next pass needs no event from this one for those layers: it forks from the caller stream, which the
  /// join already ordered after the tail copies. Timing (enqueue_timed) then records layer j < P's copy events
  /// around its tail copy (i.e. the copy for the next pass).
  bool prefetch_next_pass = false;
};

class Streamer {
 public:
  /// Plans the ring (errors from build_stream_plan: empty list, S < 1, budget < S x largest layer),
  /// checks that every layer's host memory is page-locked (kInvalidArgument naming the layer otherwise),
  /// then allocates the ring, two non-blocking streams and the events.
  static Result<Streamer> create(std::vector<HostLayer> layers, const StreamerOptions& options);

  const StreamPlan& plan() const { return plan_; }
  /// Device bytes held for weights (the ring): the plan's peak.
  uint64_t peak_device_bytes() const { return plan_.peak_device_bytes; }
  cudaStream_t copy_stream() const { return copy_.get(); }
  cudaStream_t compute_stream() const { return compute_.get(); }
  /// Device address of slot s (for tests and tools).
  const void* slot_ptr(int s) const;

  /// prefetch_next_pass only: copies layers 0 .. P-1 into their slots on the copy stream, forked from and joined
  /// back into `caller` (call once after create(), before the first pass; enqueue/capture refuse otherwise).
  Status prime(cudaStream_t caller);
  /// Layers copied at the end of each pass for the next one (0 without prefetch_next_pass).
  int prefetched_layers() const { return prefetched_; }

  /// Enqueues one pass over all L layers, forked from and joined back into `caller`. Host-asynchronous.
  Status enqueue(cudaStream_t caller, const LayerCompute& compute);
  /// As enqueue(), also recording timing events around every copy and compute (needs record_timeline).
  /// Read them with timeline() once the pass has completed (e.g. after cudaStreamSynchronize(caller)).
  Status enqueue_timed(cudaStream_t caller, const LayerCompute& compute);
  Result<std::vector<LayerTiming>> timeline() const;

  /// Captures one pass (both streams, via the fork/join events) into a CUDA Graph held by the streamer,
  /// replacing any earlier one. `caller` must be a non-default stream not being captured.
  Status capture_graph(cudaStream_t caller, const LayerCompute& compute);
  /// Launches the captured graph on `caller`.
  Status launch_graph(cudaStream_t caller);

  Streamer(Streamer&&) noexcept;
  Streamer& operator=(Streamer&&) noexcept;
  Streamer(const Streamer&) = delete;
  Streamer& operator=(const Streamer&) = delete;
  ~Streamer();

 private:
  Streamer() = default;
  Status enqueue_impl(cudaStream_t caller, const LayerCompute& compute, bool timed);
  void destroy_graph();

  StreamPlan plan_;
  std::vector<HostLayer> layers_;
  cuda::DeviceBuffer ring_;
  cuda::Stream copy_, compute_;
  cuda::Event fork_, copy_join_, compute_join_;
  std::vector<cuda::Event> copy_done_, compute_done_;  // [S], ordering only (timing disabled)
  std::vector<cuda::Event> t_copy0_, t_copy1_, t_comp0_, t_comp1_;  // [L] timing events
  cuda::Event t_fork_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  int prefetched_ = 0;   // P (prefetch_next_pass), else 0
  bool primed_ = false;  // prime() was enqueued
};

}  // namespace ws::flow
