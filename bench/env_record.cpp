// Environment record: NVML through dlopen (see env_record.h for why), host facts, SHA-256 via OpenSSL.
#include "bench/env_record.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <vector>

#ifdef WS_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

namespace ws::bench {
namespace {

// ---- NVML: the subset of the C ABI we call (nvml.h, stable since NVML 4.x) -------------------------
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2;  // nvmlClockType_t
constexpr int kNvmlTemperatureGpu = 0;              // nvmlTemperatureSensors_t

struct Nvml {
  void* lib = nullptr;
  std::string error;  // why NVML is unavailable
  nvmlReturn_t (*init)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;        // milliwatts
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;  // enforced limit, milliwatts
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
};

template <typename F>
void bind(Nvml& n, F& fn, const char* symbol) {
  fn = reinterpret_cast<F>(dlsym(n.lib, symbol));
}

Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.lib) {
      const char* e = dlerror();
      n.error = std::string("libnvidia-ml.so.1 not loadable (") + (e ? e : "?") + ")";
      return;
    }
    bind(n, n.init, "nvmlInit_v2");
    bind(n, n.error_string, "nvmlErrorString");
    bind(n, n.by_index, "nvmlDeviceGetHandleByIndex_v2");
    bind(n, n.by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    bind(n, n.name, "nvmlDeviceGetName");
    bind(n, n.uuid, "nvmlDeviceGetUUID");
    bind(n, n.driver, "nvmlSystemGetDriverVersion");
    bind(n, n.clock, "nvmlDeviceGetClockInfo");
    bind(n, n.max_clock, "nvmlDeviceGetMaxClockInfo");
    bind(n, n.temperature, "nvmlDeviceGetTemperature");
    bind(n, n.power, "nvmlDeviceGetPowerUsage");
    bind(n, n.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    bind(n, n.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    bind(n, n.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
    bind(n, n.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
    bind(n, n.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
    bind(n, n.throttle, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n.throttle) bind(n, n.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!n.init || !n.by_index) {
      n.error = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetHandleByIndex_v2";
      return;
    }
    nvmlReturn_t rc = n.init();
    if (rc != kNvmlSuccess) {
      n.error = std::string("nvmlInit_v2 failed: ") + (n.error_string ? n.error_string(rc) : std::to_string(rc));
      return;
    }
  });
  return n;
}

std::string nvml_err(nvmlReturn_t rc) {
  Nvml& n = nvml();
  return std::string("NVML: ") + (n.error_string ? n.error_string(rc) : ("error " + std::to_string(rc)));
}

// Resolves the device; on failure fills `why`.
nvmlDevice_t nvml_device(const std::string& pci_bus_id, std::string& why) {
  Nvml& n = nvml();
  if (!n.error.empty()) {
    why = n.error;
    return nullptr;
  }
  nvmlDevice_t d = nullptr;
  nvmlReturn_t rc = (!pci_bus_id.empty() && n.by_pci) ? n.by_pci(pci_bus_id.c_str(), &d) : n.by_index(0, &d);
  if (rc != kNvmlSuccess) {
    why = "no NVML device (" + nvml_err(rc) + ")";
    return nullptr;
  }
  return d;
}

void set_uint(EnvRecord& env, const std::string& key, nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*), nvmlDevice_t d,
              double scale = 1.0) {
  if (!fn) return env.unavailable(key, "NVML entry point missing");
  unsigned v = 0;
  nvmlReturn_t rc = fn(d, &v);
  if (rc != kNvmlSuccess) return env.unavailable(key, nvml_err(rc));
  if (scale == 1.0)
    env.set(key, v);
  else
    env.set(key, v * scale);
}

void set_clock(EnvRecord& env, const std::string& key, nvmlReturn_t (*fn)(nvmlDevice_t, int, unsigned*),
               nvmlDevice_t d, int which) {
  if (!fn) return env.unavailable(key, "NVML entry point missing");
  unsigned v = 0;
  nvmlReturn_t rc = fn(d, which, &v);
  if (rc != kNvmlSuccess) return env.unavailable(key, nvml_err(rc));
  env.set(key, v);
}

std::string first_line_of(const char* path, const char* prefix) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(prefix, 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return {};
}

}  // namespace

void record_env_point(EnvRecord& env, const std::string& pci_bus_id, const std::string& suffix) {
  const char* keys[] = {"sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_draw_w", "clocks_event_reasons"};
  std::string why;
  nvmlDevice_t d = nvml_device(pci_bus_id, why);
  if (!d) {
    for (const char* k : keys) env.unavailable(std::string(k) + "_" + suffix, why);
    return;
  }
  Nvml& n = nvml();
  set_clock(env, "sm_clock_mhz_" + suffix, n.clock, d, kNvmlClockSm);
  set_clock(env, "mem_clock_mhz_" + suffix, n.clock, d, kNvmlClockMem);
  if (!n.temperature) {
    env.unavailable("temperature_c_" + suffix, "NVML entry point missing");
  } else {
    unsigned t = 0;
    nvmlReturn_t rc = n.temperature(d, kNvmlTemperatureGpu, &t);
    if (rc == kNvmlSuccess)
      env.set("temperature_c_" + suffix, t);
    else
      env.unavailable("temperature_c_" + suffix, nvml_err(rc));
  }
  set_uint(env, "power_draw_w_" + suffix, n.power, d, 1e-3);
  if (!n.throttle) {
    env.unavailable("clocks_event_reasons_" + suffix, "NVML entry point missing");
  } else {
    unsigned long long r = 0;
    nvmlReturn_t rc = n.throttle(d, &r);
    if (rc == kNvmlSuccess) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx", r);
      env.set("clocks_event_reasons_" + suffix, buf);
    } else {
      env.unavailable("clocks_event_reasons_" + suffix, nvml_err(rc));
    }
  }
}

void record_env_start(EnvRecord& env, const std::string& pci_bus_id) {
  // Host.
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) env.set("host", host);
  utsname u{};
  if (uname(&u) == 0) env.set("kernel", std::string(u.sysname) + " " + u.release);
  std::string cpu = first_line_of("/proc/cpuinfo", "model name");
  if (cpu.empty())
    env.unavailable("cpu", "/proc/cpuinfo has no model name");
  else
    env.set("cpu", cpu);
  env.set("cpu_count", static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  // Device.
  if (!pci_bus_id.empty()) env.set("pci_bus_id", pci_bus_id);
  std::string why;
  nvmlDevice_t d = nvml_device(pci_bus_id, why);
  const char* keys[] = {"gpu_name",   "gpu_uuid",       "driver_version", "sm_clock_max_mhz", "mem_clock_max_mhz",
                        "power_limit_w", "pcie_gen",    "pcie_width",     "pcie_gen_max",     "pcie_width_max"};
  if (!d) {
    for (const char* k : keys) env.unavailable(k, why);
  } else {
    Nvml& n = nvml();
    char buf[256] = {};
    nvmlReturn_t rc;
    if (n.name && (rc = n.name(d, buf, sizeof buf)) == kNvmlSuccess) env.set("gpu_name", buf);
    else env.unavailable("gpu_name", n.name ? nvml_err(rc) : "NVML entry point missing");
    if (n.uuid && (rc = n.uuid(d, buf, sizeof buf)) == kNvmlSuccess) env.set("gpu_uuid", buf);
    else env.unavailable("gpu_uuid", n.uuid ? nvml_err(rc) : "NVML entry point missing");
    if (n.driver && (rc = n.driver(buf, sizeof buf)) == kNvmlSuccess) env.set("driver_version", buf);
    else env.unavailable("driver_version", n.driver ? nvml_err(rc) : "NVML entry point missing");
    set_clock(env, "sm_clock_max_mhz", n.max_clock, d, kNvmlClockSm);
    set_clock(env, "mem_clock_max_mhz", n.max_clock, d, kNvmlClockMem);
    set_uint(env, "power_limit_w", n.power_limit, d, 1e-3);
    set_uint(env, "pcie_gen", n.pcie_gen, d);
    set_uint(env, "pcie_width", n.pcie_width, d);
    set_uint(env, "pcie_gen_max", n.pcie_gen_max, d);
    set_uint(env, "pcie_width_max", n.pcie_width_max, d);
  }
  record_env_point(env, pci_bus_id, "start");
}

std::string sha256_file_hex(const std::string& path) {
#ifndef WS_HAVE_OPENSSL
  (void)path;
  return "unavailable: built without OpenSSL libcrypto (install libssl-dev and reconfigure)";
#else
  std::ifstream f(path, std::ios::binary);
  if (!f) return "unavailable: cannot open " + path + " (" + std::strerror(errno) + ")";
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx);
    return "unavailable: OpenSSL EVP_DigestInit_ex failed";
  }
  std::vector<char> buf(size_t{1} << 20);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (f.gcount() > 0) EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(f.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  char two[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(two, sizeof two, "%02x", md[i]);
    hex += two;
  }
  return hex;
#endif
}

}  // namespace ws::bench
