#pragma once
/// \file tactic_timer.h
/// The tactic timer: build-time device resources for timing candidate kernels (library handles, a stream,
/// an event pair, growable scratch buffers). Used only while building an engine (never on the run path).
#include <cublasLt.h>
#include <cudnn.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>

#include "cuda/cuda_util.h"
#include "warpstream/status.h"

namespace ws::cudaexec {

/// Build-time device resources for timing tactics: handles, a stream, events, growable scratch buffers.
struct BuildDevice {
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  cuda::Stream stream;
  cuda::Event start, stop;
  cuda::DeviceBuffer scratch[5];  ///< 0: input, 1: output, 2: workspace, 3: split-K tile counters (kept zero), 4: residual
  ~BuildDevice();
  /// Scratch buffer `slot` of at least `bytes` (zero-filled when (re)allocated).
  Result<void*> get(int slot, size_t bytes);
  /// Runs per timing and warm-up runs before it (CudaBuildOptions::tactic_timing_iterations).
  int timing_reps = 10;
  int timing_warmups = 2;
  /// Mean µs of `reps` runs (0 = timing_reps) of `fn` after timing_warmups warm-up runs (events on `stream`);
  /// synchronises.
  /// capture: the reps are captured into one CUDA graph and replayed (as the lanes run; no host launch
  /// gaps), falling back to stream launches when capture fails. Used for our own kernels; cuDNN candidates
  /// are timed on the stream (capturing every cuDNN algorithm at build — FFT ones included — hung an
  /// fp32 EfficientNet build on the H200, 2026-11-29), which charges them host launch gaps on tiny convs.
  /// label: what is timed ("node 'conv3': cudnn algo 1 fused"); with WS_TRACE_TACTICS set in the environment each
  /// timing is announced on stderr before it runs and its outcome after a synchronise (a sanitizer or driver fault
  /// then names the candidate that raised it: scripts/lib/sanitize.sh sets it for racecheck).
  Result<float> time_us(const std::function<Status(cudaStream_t)>& fn, int reps = 0, bool capture = false,
                        const std::string& label = "");

 private:
  Result<float> time_us_impl(const std::function<Status(cudaStream_t)>& fn, int reps, bool capture);
};

}  // namespace ws::cudaexec
