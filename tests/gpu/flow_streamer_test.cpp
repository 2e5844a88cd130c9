// GPU tests of the weight streamer (flow/streamer.h): a chain of INT8 layers run with weights streamed
// through S = 1, 2, 3 slots (eagerly and as one CUDA Graph) equals the same chain with weights resident,
// bit for bit (INT32 accumulators and INT8 activations), and both equal a CPU chain. Skip without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/cuda_util.h"
#include "bench/flow/int8_chain.h"
#include "flow/streamer.h"
#include "reference/gemm_s8.h"
#include "support/cuda_check.h"

namespace ws::flow {
namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
bool have_sm80() {
  int dev = 0, major = 0;
  EXPECT_TRUE(test::cuda_ok(cudaGetDevice(&dev), "cudaGetDevice"));
  EXPECT_TRUE(test::cuda_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cc major"));
  return major >= 8;
}
#define WS_REQUIRE_GPU()                                   \
  if (!have_device()) GTEST_SKIP() << "no CUDA device";    \
  if (!have_sm80()) GTEST_SKIP() << "gemm_s8_mma needs sm_80+"

struct Chain {
  int m = 192, d = 256, layers = 7, shift = 0;  // M off the 128 tile; 7 layers: S=2,3 wrap unevenly
  cuda::PinnedBuffer host_w;                    // [L][D][D] int8, pinned
  std::vector<int8_t> x_in;
  cuda::DeviceBuffer x0, ping, pong, acc;

  void init() {
    shift = chain_shift_for(d);
    const size_t wb = size_t(d) * d;
    auto hw = cuda::PinnedBuffer::allocate(wb * layers);
    ASSERT_TRUE(hw.is_ok()) << hw.status().to_string();
    host_w = std::move(hw).value();
    for (int l = 0; l < layers; ++l)
      ref::fill_s8(host_w.as<int8_t>() + wb * l, int64_t(wb), ref::FillKind::kSmall, 100 + l);
    x_in.resize(size_t(m) * d);
    ref::fill_s8(x_in.data(), int64_t(x_in.size()), ref::FillKind::kSmall, 7);
    for (auto* b : {&x0, &ping, &pong}) {
      auto r = cuda::DeviceBuffer::allocate(size_t(m) * d);
      ASSERT_TRUE(r.is_ok());
      *b = std::move(r).value();
    }
    auto a = cuda::DeviceBuffer::allocate(size_t(m) * d * 4);
    ASSERT_TRUE(a.is_ok());
    acc = std::move(a).value();
    ASSERT_EQ(::ws::test::upload_sync(x0.get(), x_in.data(), x_in.size()), cudaSuccess);
  }
  const int8_t* layer_host(int l) const { return host_w.as<int8_t>() + size_t(d) * d * l; }
  uint64_t layer_bytes() const { return uint64_t(d) * d; }
  /// The per-layer work, identical for resident and streamed runs.
  Status layer(int i, const void* w, cudaStream_t s) {
    const int8_t* src = i == 0 ? x0.as<int8_t>() : (i % 2 ? ping.as<int8_t>() : pong.as<int8_t>());
    int8_t* dst = i % 2 ? pong.as<int8_t>() : ping.as<int8_t>();
    return chain_layer(src, static_cast<const int8_t*>(w), acc.as<int32_t>(), dst, m, d, shift, s);
  }
  int8_t* final_x() const { return (layers - 1) % 2 ? pong.as<int8_t>() : ping.as<int8_t>(); }
  void poison() {
    WS_EXPECT_CUDA(::ws::test::memset_sync(ping.get(), 0x5A, ping.bytes()));
    WS_EXPECT_CUDA(::ws::test::memset_sync(pong.get(), 0x5A, pong.bytes()));
    WS_EXPECT_CUDA(::ws::test::memset_sync(acc.get(), 0x5A, acc.bytes()));
  }
  void read(std::vector<int32_t>* a, std::vector<int8_t>* x) {
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    a->resize(size_t(m) * d);
    x->resize(size_t(m) * d);
    ASSERT_EQ(cudaMemcpy(a->data(), acc.get(), a->size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(x->data(), final_x(), x->size(), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  /// CPU chain: int64 accumulate, then the same shift/clamp.
  void cpu(std::vector<int32_t>* a_out, std::vector<int8_t>* x_out) const {
    std::vector<int8_t> x = x_in, nx(x.size());
    std::vector<int32_t> a(x.size());
    for (int l = 0; l < layers; ++l) {
      const int8_t* w = layer_host(l);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < d; ++j) {
          int64_t s = 0;
          for (int k = 0; k < d; ++k) s += int64_t(x[size_t(i) * d + k]) * w[size_t(j) * d + k];
          a[size_t(i) * d + j] = int32_t(s);
          nx[size_t(i) * d + j] = int8_t(std::clamp<int32_t>(int32_t(s) >> shift, -128, 127));
        }
      x.swap(nx);
    }
    *a_out = a;
    *x_out = x;
  }
};

void expect_same(const std::vector<int32_t>& a, const std::vector<int32_t>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " int32 mismatch at " << i;
}
void expect_same8(const std::vector<int8_t>& a, const std::vector<int8_t>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << what << " int8 activations differ";
}

TEST(FlowStreamerGpu, StreamedEqualsResidentBitForBit) {
  WS_REQUIRE_GPU();
  Chain c;
  c.init();
  if (HasFatalFailure()) return;
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream.is_ok());
  cudaStream_t s = stream->get();

  // Resident: all weights on the device, one stream.
  auto resident_w = cuda::DeviceBuffer::allocate(c.layer_bytes() * c.layers);
  ASSERT_TRUE(resident_w.is_ok());
  ASSERT_EQ(::ws::test::upload_sync(resident_w->get(), c.host_w.get(), resident_w->bytes()), cudaSuccess);
  c.poison();
  for (int i = 0; i < c.layers; ++i)
    ASSERT_TRUE(c.layer(i, resident_w->as<int8_t>() + c.layer_bytes() * i, s).is_ok());
  std::vector<int32_t> want_acc;
  std::vector<int8_t> want_x;
  c.read(&want_acc, &want_x);

  std::vector<int32_t> cpu_acc;
  std::vector<int8_t> cpu_x;
  c.cpu(&cpu_acc, &cpu_x);
  expect_same(want_acc, cpu_acc, "resident vs CPU");
  expect_same8(want_x, cpu_x, "resident vs CPU");
  // The chain must not have collapsed to constants (the shift keeps values inside int8).
  int distinct = 0;
  {
    std::vector<bool> seen(256, false);
    for (int8_t v : want_x) if (!seen[uint8_t(v)]) { seen[uint8_t(v)] = true; ++distinct; }
  }
  EXPECT_GT(distinct, 32);

  std::vector<HostLayer> layers;
  for (int l = 0; l < c.layers; ++l) layers.push_back({c.layer_host(l), c.layer_bytes()});
  for (int slots : {1, 2, 3}) {
    SCOPED_TRACE("S=" + std::to_string(slots));
    StreamerOptions opt;
    opt.slots = slots;
    opt.record_timeline = true;
    auto st = Streamer::create(layers, opt);
    ASSERT_TRUE(st.is_ok()) << st.status().to_string();
    EXPECT_EQ(st->peak_device_bytes(), uint64_t(slots) * c.layer_bytes());
    LayerCompute fn = [&c](int i, const void* w, uint64_t, cudaStream_t ks) { return c.layer(i, w, ks); };

    c.poison();
    ASSERT_TRUE(st->enqueue(s, fn).is_ok());
    std::vector<int32_t> got_acc;
    std::vector<int8_t> got_x;
    c.read(&got_acc, &got_x);
    expect_same(got_acc, want_acc, "eager streamed vs resident");
    expect_same8(got_x, want_x, "eager streamed vs resident");

    c.poison();
    ASSERT_TRUE(st->enqueue_timed(s, fn).is_ok());
    c.read(&got_acc, &got_x);
    expect_same(got_acc, want_acc, "timed streamed vs resident");
    auto tl = st->timeline();
    ASSERT_TRUE(tl.is_ok()) << tl.status().to_string();
    for (int i = 0; i < c.layers; ++i) {
      const LayerTiming& t = (*tl)[size_t(i)];
      EXPECT_LE(t.copy_end, t.compute_start + 1e-3f) << "layer " << i << " computed before its copy ended";
      int prev = ring_previous_user(i, slots);
      if (prev >= 0) {
        EXPECT_GE(t.copy_start + 1e-3f, (*tl)[size_t(prev)].compute_end) << "layer " << i << " overwrote a slot in use";
      }
    }

    auto cap = st->capture_graph(s, fn);
    ASSERT_TRUE(cap.is_ok()) << cap.to_string();
    for (int rep = 0; rep < 2; ++rep) {
      c.poison();
      ASSERT_TRUE(st->launch_graph(s).is_ok());
      c.read(&got_acc, &got_x);
      expect_same(got_acc, want_acc, "graph streamed vs resident");
      expect_same8(got_x, want_x, "graph streamed vs resident");
    }
  }
}

TEST(FlowStreamerGpu, RefusesSmallBudgetAndPageableMemory) {
  WS_REQUIRE_GPU();
  auto pinned = cuda::PinnedBuffer::allocate(3 << 20);
  ASSERT_TRUE(pinned.is_ok());
  const char* p = pinned->as<char>();
  std::vector<HostLayer> layers = {{p, 1 << 20}, {p + (1 << 20), 2 << 20}};
  StreamerOptions opt;
  opt.slots = 3;
  opt.vram_budget_bytes = 5 << 20;  // < 3 x 2 MiB
  auto r = Streamer::create(layers, opt);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find(std::to_string(5 << 20)), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(std::to_string(6 << 20)), std::string::npos) << r.status().message();

  std::vector<char> pageable(1 << 20);
  auto q = Streamer::create({{pageable.data(), pageable.size()}}, StreamerOptions{});
  ASSERT_FALSE(q.is_ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("page-locked"), std::string::npos) << q.status().message();
}

}  // namespace
}  // namespace ws::flow
