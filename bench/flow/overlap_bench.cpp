// Copy/compute overlap benchmark; see overlap_bench.h.
#include "bench/flow/overlap_bench.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "bench/event_timer.h"
#include "cuda/cuda_util.h"
#include "bench/flow/int8_chain.h"
#include "flow/streamer.h"

namespace ws::flow {
namespace {

/// Bytes uniform in [-8, 7] (4-bit values sign-extended), 8 at a time from a 64-bit LCG.
void fill_small(int8_t* p, uint64_t bytes, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  uint64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = x ^ (x >> 29);
    uint64_t t = r & 0x0F0F0F0F0F0F0F0Full;
    uint64_t v = t | (((t & 0x0808080808080808ull) >> 3) * 0xF0);
    std::memcpy(p + i, &v, 8);
  }
  for (; i < bytes; ++i) p[i] = int8_t(int(i % 16) - 8);
}

struct Timed {
  double med = 0, lo = 0, hi = 0;
};

Result<Timed> time_pass(int warmup, int iters, cudaStream_t s, const std::function<Status()>& op) {
  WS_ASSIGN_OR_RETURN(bench::EventTimer timer, bench::EventTimer::create(s));
  WS_ASSIGN_OR_RETURN(bench::EventTiming r, timer.time(warmup, iters, op));
  Timed t;
  t.med = r.median;
  t.lo = r.min;
  t.hi = r.max;
  return t;
}

/// Device state of one chain at one token count.
struct ChainBuffers {
  int m = 0, d = 0, shift = 0;
  cuda::DeviceBuffer x0, ping, pong, acc;
  static Result<ChainBuffers> make(int m, int d) {
    ChainBuffers c;
    c.m = m;
    c.d = d;
    c.shift = chain_shift_for(d);
    const size_t n = size_t(m) * d;
    WS_ASSIGN_OR_RETURN(c.x0, cuda::DeviceBuffer::allocate(n));
    WS_ASSIGN_OR_RETURN(c.ping, cuda::DeviceBuffer::allocate(n));
    WS_ASSIGN_OR_RETURN(c.pong, cuda::DeviceBuffer::allocate(n));
    WS_ASSIGN_OR_RETURN(c.acc, cuda::DeviceBuffer::allocate(n * 4));
    std::vector<int8_t> h(n);
    fill_small(h.data(), n, 12345);
    WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(c.x0.get(), h.data(), n));
    return c;
  }
  Status layer(int i, const void* w, cudaStream_t s) const {
    const int8_t* src = i == 0 ? x0.as<int8_t>() : (i % 2 ? ping.as<int8_t>() : pong.as<int8_t>());
    int8_t* dst = i % 2 ? pong.as<int8_t>() : ping.as<int8_t>();
    return chain_layer(src, static_cast<const int8_t*>(w), acc.as<int32_t>(), dst, m, d, shift, s);
  }
  Result<std::vector<int8_t>> final_x(int layers) const {
    std::vector<int8_t> h(size_t(m) * d);
    const void* src = (layers - 1) % 2 ? pong.get() : ping.get();
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(h.data(), src, h.size(), cudaMemcpyDeviceToHost));
    return h;
  }
};

int round_tokens(double m) {
  int t = static_cast<int>(std::lround(m / 128.0)) * 128;
  return std::clamp(t, 128, 65536);
}

}  // namespace

Status run_overlap(const OverlapOptions& o, OverlapReport* rep) {
  if (o.layers < 1 || o.dim < 16 || o.dim % 16 || o.iters < 1 || o.warmup < 0 || o.heavy_factor < 1 || o.tokens < 0)
    return invalid_argument("overlap: need layers >= 1, dim a positive multiple of 16, iters >= 1, heavy_factor >= 1");
  const int L = o.layers, D = o.dim;
  const uint64_t layer_bytes = uint64_t(D) * D;
  WS_ASSIGN_OR_RETURN(cuda::PinnedBuffer host_w, cuda::PinnedBuffer::allocate(layer_bytes * L));
  for (int l = 0; l < L; ++l) fill_small(host_w.as<int8_t>() + layer_bytes * l, layer_bytes, 1000 + l);
  WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer resident, cuda::DeviceBuffer::allocate(layer_bytes * L));
  WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(resident.get(), host_w.get(), layer_bytes * L));
  WS_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::Stream::create());
  cudaStream_t s = stream.get();
  std::vector<HostLayer> layers;
  for (int l = 0; l < L; ++l) layers.push_back({host_w.as<int8_t>() + layer_bytes * l, layer_bytes});

  auto resident_pass = [&](const ChainBuffers& c) -> Status {
    for (int i = 0; i < L; ++i) WS_RETURN_IF_ERROR(c.layer(i, resident.as<int8_t>() + layer_bytes * i, s));
    return Status::ok();
  };
  // Transfer alone: the L layer copies on one stream into the resident buffer (same bytes, same pinned source).
  auto transfer_pass = [&]() -> Status {
    for (int i = 0; i < L; ++i)
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(resident.as<int8_t>() + layer_bytes * i, layers[size_t(i)].host,
                                              layer_bytes, cudaMemcpyHostToDevice, s));
    return Status::ok();
  };
  WS_ASSIGN_OR_RETURN(Timed transfer, time_pass(o.warmup, o.iters, s, transfer_pass));

  // Calibration: per-layer compute time is ~linear in tokens; two steps from M = 2048.
  int balanced = o.tokens;
  if (balanced == 0) {
    int m = 2048;
    for (int step = 0; step < 2; ++step) {
      WS_ASSIGN_OR_RETURN(ChainBuffers c, ChainBuffers::make(m, D));
      WS_ASSIGN_OR_RETURN(Timed comp, time_pass(1, 3, s, [&] { return resident_pass(c); }));
      const int next = round_tokens(m * transfer.med / comp.med);
      rep->notes.push_back("calibration: tokens " + std::to_string(m) + " compute " + std::to_string(comp.med) +
                           " ms vs transfer " + std::to_string(transfer.med) + " ms per pass -> " +
                           std::to_string(next));
      m = next;
    }
    balanced = m;
  }
  rep->balanced_tokens = balanced;
  struct Config {
    const char* name;
    int tokens;
  };
  const Config configs[] = {{"balanced", balanced},
                            {"compute_heavy", round_tokens(balanced * o.heavy_factor)},
                            {"transfer_heavy", round_tokens(balanced / o.heavy_factor)}};

  for (const Config& cfg : configs) {
    WS_ASSIGN_OR_RETURN(ChainBuffers c, ChainBuffers::make(cfg.tokens, D));
    auto base = [&](const char* mode, int slots) {
      OverlapRow r;
      r.config = cfg.name;
      r.mode = mode;
      r.tokens = cfg.tokens;
      r.dim = D;
      r.layers = L;
      r.slots = slots;
      r.layer_bytes = layer_bytes;
      return r;
    };
    // Transfer alone once more per config (interleaved with compute, so drift shows up).
    WS_ASSIGN_OR_RETURN(Timed tr, time_pass(o.warmup, o.iters, s, transfer_pass));
    WS_ASSIGN_OR_RETURN(Timed comp, time_pass(o.warmup, o.iters, s, [&] { return resident_pass(c); }));
    WS_ASSIGN_OR_RETURN(std::vector<int8_t> want, c.final_x(L));
    OverlapRow rc = base("compute", 0);
    rc.ms_median = comp.med; rc.ms_min = comp.lo; rc.ms_max = comp.hi;
    rc.peak_device_bytes = layer_bytes * L;
    rc.verdict = "reference";
    rep->rows.push_back(rc);
    OverlapRow rt = base("transfer", 0);
    rt.ms_median = tr.med; rt.ms_min = tr.lo; rt.ms_max = tr.hi;
    rt.copy_gbps = double(layer_bytes) * L / (tr.med * 1e6);
    rt.peak_device_bytes = layer_bytes * L;
    rep->rows.push_back(rt);
    const double floor_ms = std::max(comp.med, tr.med);

    const std::pair<const char*, int> modes[] = {{"sequential", 1}, {"double", 2}, {"triple", 3}};
    for (auto [mode, slots] : modes) {
      StreamerOptions so;
      so.slots = slots;
      so.record_timeline = true;
      WS_ASSIGN_OR_RETURN(Streamer st, Streamer::create(layers, so));
      LayerCompute fn = [&c](int i, const void* w, uint64_t, cudaStream_t ks) { return c.layer(i, w, ks); };
      WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.ping.get(), 0, c.ping.bytes(), s));
      WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.pong.get(), 0, c.pong.bytes(), s));
      WS_ASSIGN_OR_RETURN(Timed eager, time_pass(o.warmup, o.iters, s, [&] { return st.enqueue(s, fn); }));
      WS_ASSIGN_OR_RETURN(std::vector<int8_t> got, c.final_x(L));
      bool exact = got == want;
      WS_RETURN_IF_ERROR(st.capture_graph(s, fn));
      WS_ASSIGN_OR_RETURN(Timed graph, time_pass(o.warmup, o.iters, s, [&] { return st.launch_graph(s); }));
      WS_ASSIGN_OR_RETURN(got, c.final_x(L));
      exact = exact && got == want;
      // One timed pass for the timeline.
      WS_RETURN_IF_ERROR(st.enqueue_timed(s, fn));
      WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
      WS_ASSIGN_OR_RETURN(std::vector<LayerTiming> tl, st.timeline());
      OverlapTimeline t;
      t.config = cfg.name;
      t.mode = mode;
      t.slots = slots;
      double copy_ms = 0;
      for (int i = 0; i < L; ++i) {
        const LayerTiming& x = tl[size_t(i)];
        t.layers.push_back({i, x.copy_start, x.copy_end, x.compute_start, x.compute_end});
        copy_ms += x.copy_end - x.copy_start;
      }
      rep->timelines.push_back(std::move(t));

      OverlapRow r = base(mode, slots);
      r.ms_median = eager.med; r.ms_min = eager.lo; r.ms_max = eager.hi;
      r.graph_ms_median = graph.med;
      r.peak_device_bytes = st.peak_device_bytes();
      r.efficiency = floor_ms / std::min(eager.med, graph.med);
      r.copy_gbps = copy_ms > 0 ? double(layer_bytes) * L / (copy_ms * 1e6) : 0;
      r.verdict = exact ? "ok exact" : "MISMATCH vs resident";
      if (!exact) ++rep->failures;
      rep->rows.push_back(r);
      if (std::string(cfg.name) == "balanced") rep->notes.push_back(std::string(mode) + ": " + st.plan().describe());
    }
  }
  return Status::ok();
}

}  // namespace ws::flow
