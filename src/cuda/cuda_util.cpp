// RAII CUDA owners and error bridge; see cuda_util.h.
#include "cuda/cuda_util.h"

#include <atomic>

namespace ws::cuda {
namespace {
std::atomic<uint64_t> g_allocations{0};
}

Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
  return Status(StatusCode::kCuda, std::string(what) + " failed: " + cudaGetErrorName(err) + ": " +
                                       cudaGetErrorString(err) + " (" + file + ":" + std::to_string(line) + ")");
}

uint64_t cuda_allocation_count() { return g_allocations.load(std::memory_order_relaxed); }

Status copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::ok();
  WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cudaStreamLegacy));  // the staged DMA has landed
  return Status::ok();
}

Status fill_device(void* dst, int byte, size_t bytes) {
  if (bytes == 0) return Status::ok();
  WS_CUDA_RETURN_IF_ERROR(cudaMemset(dst, byte, bytes));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cudaStreamLegacy));
  return Status::ok();
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  cudaError_t err = cudaMalloc(&b.ptr_, bytes);
  if (err != cudaSuccess) {
    return Status(StatusCode::kCuda, "cudaMalloc(" + std::to_string(bytes) + " bytes) failed: " + cudaGetErrorString(err));
  }
  b.bytes_ = bytes;
  return b;
}

void DeviceBuffer::reset() {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Result<PinnedBuffer> PinnedBuffer::allocate(size_t bytes, unsigned flags) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  cudaError_t err = cudaHostAlloc(&b.ptr_, bytes, flags);
  if (err != cudaSuccess) {
    return Status(StatusCode::kCuda,
                  "cudaHostAlloc(" + std::to_string(bytes) + " bytes) failed: " + cudaGetErrorString(err));
  }
  b.bytes_ = bytes;
  if (flags & cudaHostAllocMapped) {
    err = cudaHostGetDevicePointer(&b.dev_, b.ptr_, 0);
    if (err != cudaSuccess) {
      b.reset();
      return Status(StatusCode::kCuda, std::string("cudaHostGetDevicePointer failed: ") + cudaGetErrorString(err) +
                                           " (was cudaSetDeviceFlags(cudaDeviceMapHost) called before the context?)");
    }
  }
  return b;
}

void PinnedBuffer::reset() {
  if (ptr_) cudaFreeHost(ptr_);
  ptr_ = dev_ = nullptr;
  bytes_ = 0;
}

Result<Stream> Stream::create(unsigned flags, int priority) {
  Stream s;
  WS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&s.s_, flags, priority));
  return s;
}
void Stream::reset() {
  if (s_) cudaStreamDestroy(s_);
  s_ = nullptr;
}

Result<Event> Event::create(unsigned flags) {
  Event e;
  WS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e.e_, flags));
  return e;
}
void Event::reset() {
  if (e_) cudaEventDestroy(e_);
  e_ = nullptr;
}

Result<float> elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

}  // namespace ws::cuda
