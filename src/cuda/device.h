#pragma once
/// \file device.h
/// Device set-up for the latency rail: the map-host + host-wait flags applied before the CUDA context
/// of a device is created, and an environment report read from the device at run time (nothing about
/// the GPU is hard-coded anywhere in WarpStream).
/// Host-only header.

#include <cstddef>
#include <string>

#include "warpstream/status.h"

namespace ws::cuda {

/// How a host thread waits on the device (the three scheduling bits of cudaSetDeviceFlags).
enum class HostWait {
  kAuto,          ///< cudaDeviceScheduleAuto: the driver's heuristic
  kSpin,          ///< cudaDeviceScheduleSpin: lowest wake-up latency, one CPU core busy while waiting
  kYield,         ///< cudaDeviceScheduleYield
  kBlockingSync,  ///< cudaDeviceScheduleBlockingSync: sleep on an OS primitive
};
const char* host_wait_name(HostWait w);

/// Prepare `device` for zero-copy lanes and make it current on the calling thread.
///
/// Applies cudaDeviceMapHost | <host-wait flag> to the device's primary context *before* that
/// context is created (cudaInitDevice with cudaInitDeviceFlagsAreValid, CUDA >= 12; cudaSetDeviceFlags
/// before cudaSetDevice on older runtimes), so call it first thing in a process — before any cuDNN,
/// cuBLAS or other library handle exists. When a context already exists, the runtime either overwrites
/// the flags (current drivers) or refuses with cudaErrorSetOnActiveProcess (older ones); both are
/// accepted *only if* the live context reports cudaDeviceMapHost (cudaGetDeviceFlags). Otherwise the
/// Status names the cause (a context created earlier without map-host, e.g. through the driver API)
/// and the fix (call ws::cuda::init_device before any other CUDA use, or cudaDeviceReset first).
///
/// Errors: kCuda when no device is present or a CUDA call fails; kInvalidArgument for a device index
/// out of range; kUnsupported when the device cannot map host memory (cudaDevAttrCanMapHostMemory = 0);
/// kFailedPrecondition when an existing context lacks map-host support.
Status init_device(int device = 0, HostWait wait = HostWait::kSpin);

/// The verdict init_device applies to the live context's flags (exposed for tests, which cannot
/// make a runtime context without map-host): ok when `device_flags` holds cudaDeviceMapHost, else
/// the kFailedPrecondition Status naming cause and fix.
Status check_map_host_flags(unsigned device_flags, int device);

/// "map-host|spin|…" for a cudaGetDeviceFlags value.
std::string device_flags_string(unsigned device_flags);

/// What a result file needs to say about the device, all read at run time.
struct DeviceReport {
  int device = -1;
  std::string name;              ///< cudaDeviceProp::name, e.g. "NVIDIA H200"
  std::string pci_bus_id;        ///< cudaDeviceGetPCIBusId
  int sm_count = 0;              ///< cudaDevAttrMultiProcessorCount
  int cc_major = 0, cc_minor = 0;///< compute capability
  size_t global_memory_bytes = 0;
  int l2_cache_bytes = 0;
  int max_shared_memory_per_block_optin = 0;
  bool can_map_host_memory = false;
  bool unified_addressing = false;  ///< UVA: a mapped host pointer is also its device pointer
  int driver_version = 0;        ///< cudaDriverGetVersion, e.g. 13000 for 13.0
  int runtime_version = 0;       ///< cudaRuntimeGetVersion
  unsigned device_flags = 0;     ///< cudaGetDeviceFlags while `device` is current (0 if it is not)
  bool flags_read = false;       ///< device_flags is valid
  /// One line: "NVIDIA H200 (device 0, sm_90, 132 SMs, 139.8 GiB, L2 60.0 MiB, bus …), driver 13.0,
  /// runtime 13.0, flags map-host|spin".
  std::string to_string() const;
};

/// Read the report for `device` (call after init_device so that the flags are the live context's).
/// device_flags is read only when `device` is the calling thread's current device.
Result<DeviceReport> device_report(int device = 0);

}  // namespace ws::cuda
