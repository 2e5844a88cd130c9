#pragma once
/// \file cuda_util.h
/// RAII owners for CUDA resources and the error bridge from cudaError_t to ws::Status.
/// Host-only header (no device code); include from .cpp or .cu. Every allocation in the project
/// goes through DeviceBuffer / PinnedBuffer so tests can count them (cuda_allocation_count()).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "warpstream/status.h"

namespace ws::cuda {

/// Status for a failed CUDA call: "cuda error: <what> failed: <cudaGetErrorName>: <cudaGetErrorString> (file:line)".
Status cuda_status(cudaError_t err, const char* what, const char* file, int line);

/// Number of device/pinned allocations made through this header since process start (steady-state tests).
uint64_t cuda_allocation_count();

/// Blocking host → device copy: returns once the `bytes` are in device memory, so that work enqueued next on
/// ANY stream reads them. Why not plain cudaMemcpy: from pageable host memory it returns as soon as the data is
/// staged, before the DMA to the device has finished, and that DMA runs on the legacy default stream, which a
/// cudaStreamNonBlocking stream (every stream this project creates) does not wait for (CUDA Runtime API,
/// "API synchronization behavior"). A kernel launched right after on such a stream can read the old bytes: the
/// torchvision zoo gave wrong logits on a busy H200 and matched on an idle one (device runs 18, 19 of 2026-12-02):
/// this hazard is the cause found in the code (the fix is not yet re-run under load). Build-time and
/// test use only (it synchronises the legacy stream). Errors: kCuda naming the failing call.
Status copy_to_device(void* dst, const void* src, size_t bytes);
/// Blocking device fill (cudaMemset semantics: each byte = `byte`), complete before work on any stream:
/// cudaMemset is asynchronous on the legacy default stream (the hazard above). Errors: kCuda.
Status fill_device(void* dst, int byte, size_t bytes);

}  // namespace ws::cuda

/// Evaluate a CUDA runtime call; on failure return a ws::Status naming the call and the error.
#define WS_CUDA_RETURN_IF_ERROR(call)                                                   \
  do {                                                                                  \
    cudaError_t ws_cuda_err_ = (call);                                                  \
    if (ws_cuda_err_ != cudaSuccess) return ::ws::cuda::cuda_status(ws_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

namespace ws::cuda {

/// Owns `bytes` of device memory (cudaMalloc). Move-only. Empty when bytes == 0.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Result<DeviceBuffer> allocate(size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) { reset(); ptr_ = std::exchange(o.ptr_, nullptr); bytes_ = std::exchange(o.bytes_, 0); }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Owns page-locked host memory (cudaHostAlloc). `flags`: cudaHostAllocDefault, or
/// cudaHostAllocMapped for zero-copy (device_ptr() then returns the device alias). Move-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static Result<PinnedBuffer> allocate(size_t bytes, unsigned flags = cudaHostAllocDefault);
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), dev_(std::exchange(o.dev_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr); dev_ = std::exchange(o.dev_, nullptr); bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }
  /// Device alias of a mapped allocation (nullptr unless allocated with cudaHostAllocMapped).
  void* device_ptr() const { return dev_; }
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  void* ptr_ = nullptr;
  void* dev_ = nullptr;
  size_t bytes_ = 0;
};

/// Owns a cudaStream_t (created non-blocking by default). Move-only.
class Stream {
 public:
  Stream() = default;
  static Result<Stream> create(unsigned flags = cudaStreamNonBlocking, int priority = 0);
  ~Stream() { reset(); }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept { if (this != &o) { reset(); s_ = std::exchange(o.s_, nullptr); } return *this; }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void reset();

 private:
  cudaStream_t s_ = nullptr;
};

/// Owns a cudaEvent_t (timing enabled by default). Move-only.
class Event {
 public:
  Event() = default;
  static Result<Event> create(unsigned flags = cudaEventDefault);
  ~Event() { reset(); }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept { if (this != &o) { reset(); e_ = std::exchange(o.e_, nullptr); } return *this; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void reset();

 private:
  cudaEvent_t e_ = nullptr;
};

/// Milliseconds between two recorded events (cudaEventElapsedTime), as a Result.
Result<float> elapsed_ms(const Event& start, const Event& end);

}  // namespace ws::cuda
