#pragma once
/// \file env_record.h
/// The environment record every benchmark report carries (docs/benchmarking.md "env"). Host-only.
///
/// Device fields come from NVML. NVML is loaded at run time (dlopen "libnvidia-ml.so.1", which the
/// driver installs) rather than linked: this machine's CUDA toolkit ships neither nvml.h nor the
/// libnvidia-ml stub (no CUDA::nvml target), and a benchmark must still build and report — with every
/// NVML field "unavailable: <why>" — where the library is missing. The few entry points used are the
/// stable, versioned NVML C ABI (nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 …).
///
/// CUDA runtime / driver, cuDNN and cuBLAS versions come from bench/env_cuda.h (CUDA builds only).

#include <string>

#include "bench/report.h"

namespace ws::bench {

/// Fields read once at the start of a run: gpu_name, gpu_uuid, pci_bus_id, driver_version (NVML),
/// power_limit_w, pcie_gen / pcie_width (current) and pcie_gen_max / pcie_width_max, plus the
/// sample_env_point("start") fields; host name, CPU model, kernel. `pci_bus_id` selects the GPU
/// (cudaDeviceGetPCIBusId form, "0000:17:00.0"); empty = NVML device 0.
void record_env_start(EnvRecord& env, const std::string& pci_bus_id);
/// Fields that drift during a run, suffixed "_start" / "_end": sm_clock_mhz, mem_clock_mhz,
/// temperature_c, power_draw_w, clocks_throttle_reasons.
void record_env_point(EnvRecord& env, const std::string& pci_bus_id, const std::string& suffix);

/// SHA-256 of a file as lowercase hex (OpenSSL libcrypto EVP), or "unavailable: <why>".
std::string sha256_file_hex(const std::string& path);

}  // namespace ws::bench
