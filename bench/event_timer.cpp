// The shared CUDA-event timer of the benchmarks; see bench/event_timer.h.
#include "bench/event_timer.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/cuda_util.h"

namespace ws::bench {

struct EventTimer::State {
  cudaStream_t stream = nullptr;
  cuda::Event start, end;
  cuda::DeviceBuffer flush;
  size_t flush_bytes = 0;
};

EventTimer::EventTimer(std::unique_ptr<State> s) : s_(std::move(s)) {}
EventTimer::EventTimer(EventTimer&&) noexcept = default;
EventTimer& EventTimer::operator=(EventTimer&&) noexcept = default;
EventTimer::~EventTimer() = default;
cudaStream_t EventTimer::stream() const { return s_->stream; }
size_t EventTimer::flush_bytes() const { return s_->flush_bytes; }
cudaEvent_t EventTimer::start_event() const { return s_->start.get(); }

Result<EventTimer> EventTimer::create(cudaStream_t stream, EventTimerOptions options) {
  auto s = std::make_unique<State>();
  s->stream = stream;
  WS_ASSIGN_OR_RETURN(s->start, cuda::Event::create());
  WS_ASSIGN_OR_RETURN(s->end, cuda::Event::create());
  if (options.flush_l2) {
    int device = 0, l2 = 0;
    WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    s->flush_bytes = std::max<size_t>(2 * static_cast<size_t>(l2), size_t{1} << 20);
    WS_ASSIGN_OR_RETURN(s->flush, cuda::DeviceBuffer::allocate(s->flush_bytes));
  }
  return EventTimer(std::move(s));
}

Result<EventTiming> EventTimer::time(int warmup, int iters, const std::function<Status()>& op) {
  if (iters < 1) return invalid_argument("EventTimer::time: iters must be >= 1 (got " + std::to_string(iters) + ")");
  std::vector<float> ms;
  ms.reserve(static_cast<size_t>(iters));
  for (int r = 0; r < std::max(warmup, 0) + iters; ++r) {
    if (s_->flush_bytes)
      WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s_->flush.get(), r & 0xff, s_->flush_bytes, s_->stream));
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(s_->start.get(), s_->stream));
    WS_RETURN_IF_ERROR(op());
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(s_->end.get(), s_->stream));
    WS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(s_->end.get()));
    if (r >= std::max(warmup, 0)) {
      WS_ASSIGN_OR_RETURN(float t, cuda::elapsed_ms(s_->start, s_->end));
      ms.push_back(t);
    }
  }
  EventTiming t;
  const std::vector<double> samples(ms.begin(), ms.end());
  t.stats = compute_stats(samples, static_cast<size_t>(std::max(warmup, 0)));
  t.median = t.stats.p50;
  t.min = t.stats.min;
  t.max = t.stats.max;
  t.p99 = t.stats.p99;
  t.ms = std::move(ms);
  return t;
}

}  // namespace ws::bench
