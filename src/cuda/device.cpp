// Device set-up (map-host + host-wait flags before the context exists) and the run-time environment
// report; see device.h.
#include "cuda/device.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "cuda/cuda_util.h"

namespace ws::cuda {
namespace {

unsigned host_wait_flag(HostWait w) {
  switch (w) {
    case HostWait::kAuto: return cudaDeviceScheduleAuto;
    case HostWait::kSpin: return cudaDeviceScheduleSpin;
    case HostWait::kYield: return cudaDeviceScheduleYield;
    case HostWait::kBlockingSync: return cudaDeviceScheduleBlockingSync;
  }
  return cudaDeviceScheduleAuto;
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

const char* host_wait_name(HostWait w) {
  switch (w) {
    case HostWait::kAuto: return "auto";
    case HostWait::kSpin: return "spin";
    case HostWait::kYield: return "yield";
    case HostWait::kBlockingSync: return "blocking-sync";
  }
  return "?";
}

std::string device_flags_string(unsigned f) {
  std::string s;
  auto add = [&s](const char* n) { s += s.empty() ? n : std::string("|") + n; };
  if (f & cudaDeviceMapHost) add("map-host");
  switch (f & cudaDeviceScheduleMask) {
    case cudaDeviceScheduleSpin: add("spin"); break;
    case cudaDeviceScheduleYield: add("yield"); break;
    case cudaDeviceScheduleBlockingSync: add("blocking-sync"); break;
    default: add("schedule-auto"); break;
  }
  if (f & cudaDeviceLmemResizeToMax) add("lmem-resize-to-max");
  return s;
}

Status check_map_host_flags(unsigned device_flags, int device) {
  if (device_flags & cudaDeviceMapHost) return Status::ok();
  return failed_precondition(
      "device " + std::to_string(device) + ": the CUDA context already exists without cudaDeviceMapHost (flags " +
      device_flags_string(device_flags) +
      "), so mapped pinned memory (zero-copy lane slots) cannot be used. Cause: a CUDA context was created "
      "before ws::cuda::init_device ran — by a driver-API cuCtxCreate without CU_CTX_MAP_HOST or a library "
      "that set its own device flags. Fix: call ws::cuda::init_device(" +
      std::to_string(device) +
      ") first in the process, before any cuDNN/cuBLAS handle or other CUDA call, or cudaDeviceReset() the "
      "device before calling it.");
}

Status init_device(int device, HostWait wait) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_status(err, "cudaGetDeviceCount (is an NVIDIA driver and GPU present?)", __FILE__, __LINE__);
  }
  if (count == 0) return Status(StatusCode::kCuda, "no CUDA device present (cudaGetDeviceCount = 0)");
  if (device < 0 || device >= count)
    return invalid_argument("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                            " device(s): 0.." + std::to_string(count - 1) + ")");
  int can_map = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, device));
  if (!can_map)
    return unsupported("CUDA device " + std::to_string(device) +
                       " cannot map host memory (cudaDevAttrCanMapHostMemory = 0): zero-copy lane slots are "
                       "unavailable; use --input copy");

  const unsigned want = cudaDeviceMapHost | host_wait_flag(wait);
#if CUDART_VERSION >= 12000
  // Creates the primary context with `want` (or overwrites the flags of a live one).
  err = cudaInitDevice(device, want, cudaInitDeviceFlagsAreValid);
  if (err == cudaErrorSetOnActiveProcess) {
    (void)cudaGetLastError();  // a live context kept its flags: judged below
  } else if (err != cudaSuccess) {
    return cuda_status(err, "cudaInitDevice(device, cudaDeviceMapHost | schedule, cudaInitDeviceFlagsAreValid)",
                       __FILE__, __LINE__);
  }
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
#else
  // Before CUDA 12 cudaSetDevice does not create the context; the flags apply at its creation.
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  err = cudaSetDeviceFlags(want);
  if (err == cudaErrorSetOnActiveProcess) {
    (void)cudaGetLastError();
  } else if (err != cudaSuccess) {
    return cuda_status(err, "cudaSetDeviceFlags(cudaDeviceMapHost | schedule)", __FILE__, __LINE__);
  }
#endif
  // Force the context into existence so the flags read back are the live ones.
  WS_CUDA_RETURN_IF_ERROR(cudaFree(nullptr));
  unsigned have = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceFlags(&have));
  return check_map_host_flags(have, device);
}

std::string DeviceReport::to_string() const {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (device %d, sm_%d%d, %d SMs, %.1f GiB, L2 %.1f MiB, smem/block opt-in %d KiB, bus %s)"
                ", driver %s, runtime %s, UVA %s, can-map-host %s, flags %s",
                name.c_str(), device, cc_major, cc_minor, sm_count, double(global_memory_bytes) / (1024.0 * 1024 * 1024),
                double(l2_cache_bytes) / (1024.0 * 1024), max_shared_memory_per_block_optin / 1024, pci_bus_id.c_str(),
                version_string(driver_version).c_str(), version_string(runtime_version).c_str(),
                unified_addressing ? "yes" : "no", can_map_host_memory ? "yes" : "no",
                flags_read ? device_flags_string(device_flags).c_str() : "(device not current)");
  return buf;
}

Result<DeviceReport> device_report(int device) {
  DeviceReport r;
  r.device = device;
  cudaDeviceProp prop{};
  WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  r.name = prop.name;
  r.global_memory_bytes = prop.totalGlobalMem;
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) r.pci_bus_id = bus;
  else (void)cudaGetLastError();
  int v = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&r.sm_count, cudaDevAttrMultiProcessorCount, device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&r.cc_major, cudaDevAttrComputeCapabilityMajor, device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&r.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&r.l2_cache_bytes, cudaDevAttrL2CacheSize, device));
  WS_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&r.max_shared_memory_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&v, cudaDevAttrCanMapHostMemory, device));
  r.can_map_host_memory = v != 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&v, cudaDevAttrUnifiedAddressing, device));
  r.unified_addressing = v != 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDriverGetVersion(&r.driver_version));
  WS_CUDA_RETURN_IF_ERROR(cudaRuntimeGetVersion(&r.runtime_version));
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) {
    WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceFlags(&r.device_flags));
    r.flags_read = true;
  }
  return r;
}

}  // namespace ws::cuda
