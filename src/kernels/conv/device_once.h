#pragma once
/// \file device_once.h
/// Host helper of the tensor-core conv launchers (expand_depthwise.cu: wmma, PTX 7.0+; conv_nhwc.cu: clusters, PTX 9.0+):
/// what a launcher learns about the current device once (so that later launches, under stream capture or not, make no
/// attribute calls), and the refusal of a build that would run a wmma kernel from PTX older than 7.0 (JIT-compiled on a
/// newer GPU, the kernel would trap).
/// Thread-safe; a failed first attempt is retried on the next call. Host-only; no allocation after the first call.
/// Test: through the launchers (ConvKernels.ExpandDepthwise*, ConvNhwc*).

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <string>

#include "cuda/cuda_util.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// What one launcher knows about one device.
struct DeviceFacts {
  std::atomic<bool> done{false};
  int cc_major = 0;  ///< compute capability major (learned by device_facts itself, before `learn`)
  int optin = 0;  ///< cudaDevAttrMaxSharedMemoryPerBlockOptin (bytes)
  int ptx = 0;    ///< cudaFuncAttributes::ptxVersion of the launcher's kernel on this device (major · 10 + minor)
  bool wide_clusters = false;  ///< conv_nhwc.cu: the device accepted non-portable (16-CTA) clusters
};

/// The current device's facts from `table` (one per launcher: a function-local static), learning them with `learn(dev,
/// facts)` the first time (under `m`). kInvalidArgument for a device ordinal above 63; the error of `learn` or of
/// cudaGetDevice.
template <class Learn>
Result<const DeviceFacts*> device_facts(DeviceFacts (&table)[64], std::mutex& m, const char* who, Learn&& learn) {
  int dev = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return invalid_argument(std::string(who) + ": device ordinal " + std::to_string(dev) + " above 63");
  DeviceFacts& f = table[dev];
  if (!f.done.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(m);
    if (!f.done.load(std::memory_order_relaxed)) {
      WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&f.cc_major, cudaDevAttrComputeCapabilityMajor, dev));
      WS_RETURN_IF_ERROR(learn(dev, f));
      f.done.store(true, std::memory_order_release);
    }
  }
  return static_cast<const DeviceFacts*>(&f);
}

/// OK when the device of `f` (device_facts) has compute capability 9.0 or newer (thread-block clusters, distributed
/// shared memory); else the kInvalidArgument naming `who`. No CUDA call: launch paths stay query-free.
inline Status require_cluster_device(const char* who, const DeviceFacts& f) {
  if (f.cc_major >= 9) return Status::ok();
  return invalid_argument(std::string(who) + ": thread-block clusters need compute capability 9.0; this device is " + std::to_string(f.cc_major) +
                          ".x");
}

/// OK when the kernel runs from PTX 7.0 or newer (wmma); else the kInvalidArgument a user can act on.
inline Status require_wmma_ptx(const char* who, int ptx) {
  if (ptx >= 70) return Status::ok();
  return invalid_argument(std::string(who) + ": this build runs the kernel from PTX for compute capability " + std::to_string(ptx / 10) + "." +
                          std::to_string(ptx % 10) + "; it needs 7.0 or newer (wmma): build with CMAKE_CUDA_ARCHITECTURES including this GPU's");
}

}  // namespace ws::kernels
