#pragma once
/// \file event_timer.h
/// The one CUDA-event timer of the benchmarks (bench/gemm, bench/flow): `warmup` untimed runs, then
/// `iters` timed runs, each bracketed by two events recorded on the timer's stream, each waited for
/// before the next run (so runs never overlap). Optionally the L2 cache is flushed before every run
/// (a cudaMemsetAsync over a buffer twice the device's L2, enqueued before the start event, so it is
/// not timed): a kernel then reads its operands from HBM as it would inside a network, instead of
/// from the L2 the previous run warmed. Host-only header; times in milliseconds.
///   bench::EventTimer t = *bench::EventTimer::create(stream, {.flush_l2 = true});
///   bench::EventTiming r = *t.time(5, 20, [&] { return launch(stream); });   // r.median, r.min ...

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "bench/stats.h"
#include "warpstream/status.h"

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

namespace ws::bench {

struct EventTimerOptions {
  bool flush_l2 = false;  ///< memset a buffer of 2 x L2 bytes before every run (warm-up included)
};

/// The timed samples and their statistics (milliseconds; bench/stats.h: numpy's linear percentiles).
struct EventTiming {
  std::vector<float> ms;  ///< every timed run, in run order
  Stats stats;            ///< over ms (warmup_count = the untimed runs)
  double median = 0, min = 0, max = 0, p99 = 0;  ///< stats.p50, .min, .max, .p99
};

class EventTimer {
 public:
  /// Creates the two events and, with flush_l2, the flush buffer (2 x the current device's L2 size).
  /// Errors: kCuda from event creation, device query or the allocation.
  static Result<EventTimer> create(cudaStream_t stream, EventTimerOptions options = {});
  EventTimer(EventTimer&&) noexcept;
  EventTimer& operator=(EventTimer&&) noexcept;
  ~EventTimer();

  /// Runs `op` (which enqueues work on the timer's stream, or on other streams joined back to it)
  /// warmup + iters times and times the last iters. Errors: iters < 1 (kInvalidArgument), the
  /// first error `op` returns, kCuda from any event call.
  Result<EventTiming> time(int warmup, int iters, const std::function<Status()>& op);
  cudaStream_t stream() const;
  /// The start event of the run in flight: an `op` that forks work onto other streams makes them
  /// wait on it (cudaStreamWaitEvent) and joins them back to stream() before returning.
  cudaEvent_t start_event() const;
  size_t flush_bytes() const;  ///< 0 without flush_l2

 private:
  struct State;
  explicit EventTimer(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace ws::bench
