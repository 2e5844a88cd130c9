// h2d_bench.cu — RAM <-> VRAM bandwidth sweep (VRAMFlow stage 03), see h2d_bench.h.
// mapped_read_kernel: grid-stride over 16-byte words of mapped pinned host memory, XOR-folding into one
// word per block (written to device memory so the loads cannot be elided).
// Run: `warpstream h2d [--json out.json]` (scripts/device-check-flow.sh on the device).
#include "bench/flow/h2d_bench.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "bench/event_timer.h"
#include "cuda/cuda_util.h"

namespace ws::flow {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

__global__ void mapped_read_kernel(const int4* __restrict__ src, int64_t n16, int4* __restrict__ sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    int4 v = src[i];
    acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
  }
  // Fold the block: one store per block keeps the reads alive without a reduction's cost.
  for (int o = 16; o > 0; o >>= 1) {
    acc.x ^= __shfl_xor_sync(0xffffffffu, acc.x, o);
    acc.y ^= __shfl_xor_sync(0xffffffffu, acc.y, o);
    acc.z ^= __shfl_xor_sync(0xffffffffu, acc.z, o);
    acc.w ^= __shfl_xor_sync(0xffffffffu, acc.w, o);
  }
  if ((threadIdx.x & 31) == 0) sink[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = acc;
}

H2dRow make_row(std::string mem, std::string dir, int streams, uint64_t chunk, uint64_t bytes, std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  H2dRow r;
  r.memory = std::move(mem);
  r.direction = std::move(dir);
  r.streams = streams;
  r.chunk_bytes = chunk;
  r.bytes = bytes;
  const size_t n = ms.size();
  r.ms_median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  r.ms_min = ms.front();
  r.ms_max = ms.back();
  r.gbps_median = double(bytes) / (r.ms_median * 1e6);
  r.gbps_best = double(bytes) / (r.ms_min * 1e6);
  return r;
}

}  // namespace

Status run_h2d_sweep(const H2dOptions& in, H2dReport* report) {
  H2dOptions o = in;
  if (o.sizes.empty())
    for (uint64_t s = 64 * kMiB; s <= 1024 * kMiB; s *= 2) o.sizes.push_back(s);
  if (o.chunks.empty()) o.chunks = {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB};
  if (o.iters < 1 || o.warmup < 0) return invalid_argument("h2d: iters must be >= 1 and warmup >= 0");
  for (uint64_t s : o.sizes)
    if (s == 0 || s % 16) return invalid_argument("h2d: sizes must be positive multiples of 16 bytes");
  const uint64_t max_bytes = *std::max_element(o.sizes.begin(), o.sizes.end());
  int max_streams = 1;
  for (int s : o.streams) {
    if (s < 1) return invalid_argument("h2d: stream counts must be >= 1");
    max_streams = std::max(max_streams, s);
  }

  int dev = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, dev));
  report->device = std::string(prop.name) + " (PCI " + std::to_string(prop.pciBusID) + ")";

  // Pinned and mapped: one allocation (on UVA systems every pinned allocation is also mapped).
  WS_ASSIGN_OR_RETURN(cuda::PinnedBuffer pinned, cuda::PinnedBuffer::allocate(max_bytes, cudaHostAllocMapped));
  std::memset(pinned.get(), 0x3C, max_bytes);
  WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer dbuf, cuda::DeviceBuffer::allocate(max_bytes));
  WS_RETURN_IF_ERROR(::ws::cuda::fill_device(dbuf.get(), 0x11, max_bytes));
  std::vector<cuda::Stream> streams;
  for (int i = 0; i < max_streams; ++i) {
    WS_ASSIGN_OR_RETURN(cuda::Stream s, cuda::Stream::create());
    streams.push_back(std::move(s));
  }
  std::vector<cuda::Event> done;
  for (int i = 0; i < max_streams; ++i) {
    WS_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create(cudaEventDisableTiming));
    done.push_back(std::move(e));
  }
  cudaStream_t s0 = streams[0].get();
  // Transfers read host memory: no L2 flush (the copies never hit the L2 of the previous run).
  WS_ASSIGN_OR_RETURN(bench::EventTimer timer, bench::EventTimer::create(s0));
  std::vector<float> ms;
  auto time_it = [&](const std::function<Status()>& op) -> Status {
    WS_ASSIGN_OR_RETURN(bench::EventTiming t, timer.time(o.warmup, o.iters, op));
    ms = std::move(t.ms);
    return Status::ok();
  };

  auto chunked = [&](void* dst, const void* src, uint64_t bytes, cudaMemcpyKind kind, int ns, uint64_t chunk) -> Status {
    if (chunk == 0 || (ns == 1 && chunk >= bytes)) {
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, s0));
      return Status::ok();
    }
    for (int i = 1; i < ns; ++i) WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(streams[i].get(), timer.start_event(), 0));
    uint64_t k = 0;
    for (uint64_t off = 0; off < bytes; off += chunk, ++k) {
      const uint64_t n = std::min(chunk, bytes - off);
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, n,
                                              kind, streams[k % ns].get()));
    }
    for (int i = 1; i < ns; ++i) {
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(done[i].get(), streams[i].get()));
      WS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s0, done[i].get(), 0));
    }
    return Status::ok();
  };

  for (uint64_t bytes : o.sizes) {
    // Pinned, one call, one stream.
    for (int d2h = 0; d2h < 2; ++d2h) {
      void* dst = d2h ? pinned.get() : dbuf.get();
      const void* src = d2h ? dbuf.get() : pinned.get();
      cudaMemcpyKind kind = d2h ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
      WS_RETURN_IF_ERROR(time_it([&] { return chunked(dst, src, bytes, kind, 1, 0); }));
      report->rows.push_back(make_row("pinned", d2h ? "d2h" : "h2d", 1, 0, bytes, ms));
      // Chunked across streams.
      for (int ns : o.streams)
        for (uint64_t chunk : o.chunks) {
          if (chunk >= bytes) continue;
          WS_RETURN_IF_ERROR(time_it([&] { return chunked(dst, src, bytes, kind, ns, chunk); }));
          report->rows.push_back(make_row("pinned", d2h ? "d2h" : "h2d", ns, chunk, bytes, ms));
        }
    }
  }
  if (o.mapped) {
    const int threads = 256;
    const int blocks = prop.multiProcessorCount * 8;
    WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer sink, cuda::DeviceBuffer::allocate(size_t(blocks) * threads / 32 * 16));
    const int4* src = static_cast<const int4*>(pinned.device_ptr());
    if (!src) return internal_error("h2d: mapped allocation has no device pointer");
    for (uint64_t bytes : o.sizes) {
      WS_RETURN_IF_ERROR(time_it([&]() -> Status {
        mapped_read_kernel<<<blocks, threads, 0, s0>>>(src, int64_t(bytes / 16), sink.as<int4>());
        WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
        return Status::ok();
      }));
      report->rows.push_back(make_row("mapped", "kernel_read", 1, 0, bytes, ms));
    }
  }
  pinned.reset();
  if (o.pageable) {
    std::unique_ptr<char[]> pageable(new char[max_bytes]);
    std::memset(pageable.get(), 0x2D, max_bytes);  // fault every page in before timing
    for (uint64_t bytes : o.sizes)
      for (int d2h = 0; d2h < 2; ++d2h) {
        void* dst = d2h ? static_cast<void*>(pageable.get()) : dbuf.get();
        const void* src = d2h ? dbuf.get() : static_cast<const void*>(pageable.get());
        cudaMemcpyKind kind = d2h ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
        WS_RETURN_IF_ERROR(time_it([&] { return chunked(dst, src, bytes, kind, 1, 0); }));
        report->rows.push_back(make_row("pageable", d2h ? "d2h" : "h2d", 1, 0, bytes, ms));
      }
  }
  for (const H2dRow& r : report->rows) {
    if (r.memory != "pinned") continue;
    double& c = r.direction == "h2d" ? report->pinned_h2d_ceiling : report->pinned_d2h_ceiling;
    c = std::max(c, r.gbps_median);
  }
  return Status::ok();
}

}  // namespace ws::flow
