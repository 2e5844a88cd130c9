// The input wavefront (warpstream/row_signal.h): the preprocess publishing its rows, our RGB stem conv waiting for
// them, and the Top-K closing the frame.
//   StemOnPublishedRowsMatchesReferenceAndPlainForm: a 1080p RGB8 frame in mapped host memory (random bytes, seed
//     printed) -> preprocess (publishing, 32 blocks) -> stem 3x3 s2 (pads 0,0,1,1, ReLU6, fp16; waiting on rows, PDL
//     on sm_90+) -> Top-K (bumps the epoch), captured once and replayed 6 times. Each replay's stem output (poisoned
//     before) must equal the plain form's (preprocess, then the stem after griddepcontrol.wait) bit for bit, and the
//     plain form must match a CPU stem on the same fp16 input within 2e-2 * max|ref|. The epoch starts at 2^32 - 3 (the
//     replays cross the wrap). After each replay: epoch = start + replays, every flag = epoch, error 0. The publishing preprocess's own output equals the plain one's bit for bit.
//   ChainedStemAndDepthwisePointwiseMatchPlainForm: the same frame -> preprocess (publishing) -> stem (waiting, and
//     publishing its 112 output rows, counted per tile x channel group) -> fused 3x3 depthwise -> pointwise (EfficientNet
//     block 0: 32 -> 16; waiting on the stem's rows) -> Top-K, replayed 4 times from epoch 2^32 - 2, for both GEMM tiles.
//     The stem's and the fused kernel's outputs (poisoned before each replay) equal the plain chain's bit for bit; the
//     plain fused kernel matches a CPU depthwise (rounded to fp16) -> pointwise on the stem's fp16 output within
//     2e-2 * max|ref|; after each replay both signals' flags hold the epoch, the counters are all 0, the error word 0.
//   WaitGivesUpAndTheFrameEndReportsIt: a stem waiting on rows nobody publishes returns (bounded: kRowWaitMaxPolls),
//     sets the error word; the Top-K then writes every entry as {NaN, kTopKInvalidIndex}, clears the word, bumps the epoch.
//   RefusalsBeforeTheDevice (no GPU needed): every launcher that cannot honour a RowSignal refuses it.
// Filter: --gtest_filter='RowSignal*'.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/mbconv.h"
#include "kernels/preprocess/preprocess_rgb8.h"
#include "kernels/topk/topk.h"
#include "lanes_gpu_support.h"
#include "support/cuda_check.h"
#include "warpstream/row_signal.h"

namespace ws {
namespace {

using kernels::Conv2dGeometry;

constexpr int kSrcW = 1920, kSrcH = 1080, kDst = 224, kCo = 32;

Conv2dGeometry stem_geometry(int64_t h, int64_t w) {  // EfficientNet-Lite0's stem: 3 -> 32, 3x3 s2, TF pads (0, 0, 1, 1)
  Conv2dGeometry g;
  g.n = 1; g.c_in = 3; g.in_h = h; g.in_w = w; g.c_out = kCo; g.group = 1;
  g.kernel_h = g.kernel_w = 3; g.stride_h = g.stride_w = 2; g.dilation_h = g.dilation_w = 1;
  g.pad_top = 0; g.pad_left = 0; g.pad_bottom = 1; g.pad_right = 1;
  g.out_h = (h + 1 - 3) / 2 + 1;
  g.out_w = (w + 1 - 3) / 2 + 1;
  return g;
}

struct SignalWords {
  cuda::DeviceBuffer buf;
  RowSignal sig;
};
SignalWords make_signal(int64_t rows) {
  SignalWords s;
  auto b = cuda::DeviceBuffer::allocate(size_t(rows + 2) * sizeof(uint32_t));
  EXPECT_TRUE(b.is_ok());
  s.buf = std::move(b).value();
  EXPECT_EQ(test::memset_sync(s.buf.get(), 0, s.buf.bytes()), cudaSuccess);
  uint32_t* w = s.buf.as<uint32_t>();
  s.sig = RowSignal{w, w + rows, w + rows + 1, rows};
  return s;
}

// A 1080p RGB8 frame of random bytes in mapped host memory, and its device alias.
struct MappedFrame {
  cuda::PinnedBuffer buf;
  const uint8_t* src = nullptr;
};
MappedFrame random_mapped_frame(std::mt19937& rng) {
  MappedFrame f;
  auto frame = cuda::PinnedBuffer::allocate(size_t(kSrcW) * kSrcH * 3, cudaHostAllocMapped);
  EXPECT_TRUE(frame.is_ok()) << frame.status().to_string();
  if (!frame.is_ok()) {
    ADD_FAILURE() << "no mapped frame";
    return f;
  }
  f.buf = std::move(frame).value();
  for (size_t i = 0; i < f.buf.bytes(); ++i) f.buf.as<uint8_t>()[i] = uint8_t(rng() >> 24);
  f.src = static_cast<const uint8_t*>(f.buf.device_ptr());
  EXPECT_NE(f.src, nullptr);
  return f;
}

// A test's start: PDL on compute capability 9.0+ (below it the consumer starts after its producer and finds every row
// published), the seeded generator (seed printed), and the random frame drawn from it.
struct FrameCase {
  bool pdl = false;
  std::mt19937 rng;
  MappedFrame frame;
};
FrameCase frame_case(const char* name) {
  FrameCase c;
  int major = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  c.pdl = major >= 9;
  const uint32_t seed = test::test_seed(name);
  std::printf("%s: seed %u, pdl %s\n", name, seed, c.pdl ? "on" : "off");
  c.rng.seed(seed);
  c.frame = random_mapped_frame(c.rng);
  return c;
}

std::vector<uint16_t> download_half(const void* d, size_t n) {
  std::vector<uint16_t> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}
float half_to_float(uint16_t v) {
  __half h;
  std::memcpy(&h, &v, 2);
  return __half2float(h);
}

TEST(RowSignal, StemOnPublishedRowsMatchesReferenceAndPlainForm) {
  WS_REQUIRE_LANES_GPU();
  FrameCase fc = frame_case("RowSignal.StemOnPublishedRows");
  if (HasFatalFailure()) return;
  const bool pdl = fc.pdl;
  std::mt19937& rng = fc.rng;
  const uint8_t* src = fc.frame.src;

  const Conv2dGeometry g = stem_geometry(kDst, kDst);
  const size_t x_elems = size_t(3) * kDst * kDst, y_elems = size_t(kCo) * g.out_h * g.out_w;
  std::vector<__half> w_h(size_t(kCo) * 27);
  std::vector<float> bias_h(kCo);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (auto& v : w_h) v = __float2half(u(rng));
  for (auto& v : bias_h) v = u(rng);
  auto x0 = cuda::DeviceBuffer::allocate(x_elems * 2), x1 = cuda::DeviceBuffer::allocate(x_elems * 2);
  auto y0 = cuda::DeviceBuffer::allocate(y_elems * 2), y1 = cuda::DeviceBuffer::allocate(y_elems * 2);
  auto w = cuda::DeviceBuffer::allocate(w_h.size() * 2), bias = cuda::DeviceBuffer::allocate(kCo * 4);
  auto logits = cuda::DeviceBuffer::allocate(1000 * 4), top = cuda::DeviceBuffer::allocate(sizeof(kernels::TopKPair) * 5);
  ASSERT_TRUE(x0.is_ok() && x1.is_ok() && y0.is_ok() && y1.is_ok() && w.is_ok() && bias.is_ok() && logits.is_ok() && top.is_ok());
  WS_ASSERT_CUDA(test::upload_sync(w->get(), w_h.data(), w_h.size() * 2));
  WS_ASSERT_CUDA(test::upload_sync(bias->get(), bias_h.data(), kCo * 4));
  WS_ASSERT_CUDA(test::memset_sync(logits->get(), 0, 1000 * 4));
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream.is_ok());
  cudaStream_t st = stream->get();
  const Normalize norm;
  kernels::ConvEpilogue epi;
  epi.bias = bias->as<const float>();
  epi.act = kernels::Activation::kClip;
  epi.params.min = 0.0f;
  epi.params.max = 6.0f;
  epi.pdl = pdl;

  // The plain form.
  WS_ASSERT_CUDA(test::memset_sync(y0->get(), 0xff, y_elems * 2));
  ASSERT_TRUE(kernels::preprocess_rgb8_to_nchw(src, kSrcH, kSrcW, 3 * kSrcW, x0->get(), DType::kFloat16, kDst, kDst, norm, st,
                                               kernels::PreprocessPath::kStaged).is_ok());
  ASSERT_TRUE(kernels::conv2d_direct(kernels::ElemType::kFloat16, g, x0->get(), w->get(), y0->get(), epi, st).is_ok());
  WS_ASSERT_CUDA(cudaStreamSynchronize(st));
  const auto x_plain = download_half(x0->get(), x_elems);
  const auto y_plain = download_half(y0->get(), y_elems);

  // The plain form against a CPU stem on the same fp16 input.
  double max_ref = 0, max_diff = 0;
  for (int co = 0; co < kCo; ++co)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        double acc = bias_h[size_t(co)];
        for (int c = 0; c < 3; ++c)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy * 2 + ky, ix = ox * 2 + kx;  // pads top/left 0
              if (iy >= kDst || ix >= kDst) continue;
              acc += double(half_to_float(x_plain[size_t((c * kDst + iy) * kDst + ix)])) *
                     double(__half2float(w_h[size_t(co * 27 + (c * 3 + ky) * 3 + kx)]));
            }
        const double ref = std::min(std::max(acc, 0.0), 6.0);
        const double got = half_to_float(y_plain[size_t((co * g.out_h + oy) * g.out_w + ox)]);
        ASSERT_FALSE(std::isnan(got)) << "plain stem output NaN at channel " << co << " (" << oy << ", " << ox << ")";
        max_ref = std::max(max_ref, std::fabs(ref));
        max_diff = std::max(max_diff, std::fabs(got - ref));
      }
  EXPECT_LE(max_diff, 2e-2 * max_ref) << "plain stem vs CPU: max|diff| " << max_diff << ", max|ref| " << max_ref;

  // The wavefront form, captured once, replayed.
  SignalWords words = make_signal(kDst);
  const RowSignal sig = words.sig;
  // The epoch starts 3 frames before 2^32, so the replays cross the wrap of the 32-bit comparison; the flags hold the
  // previous frame's value, as after a real frame.
  const uint32_t start = 0xFFFFFFFDu;
  {
    std::vector<uint32_t> init(size_t(kDst) + 2, start);
    init[size_t(kDst) + 1] = 0;  // error
    WS_ASSERT_CUDA(test::upload_sync(sig.flags, init.data(), init.size() * 4));
  }
  kernels::ConvEpilogue wepi = epi;
  wepi.input_rows = sig;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  WS_ASSERT_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  Status a = kernels::preprocess_rgb8_to_nchw(src, kSrcH, kSrcW, 3 * kSrcW, x1->get(), DType::kFloat16, kDst, kDst, norm, st,
                                              kernels::PreprocessPath::kAuto, sig);
  Status b = a.is_ok() ? kernels::conv2d_direct(kernels::ElemType::kFloat16, g, x1->get(), w->get(), y1->get(), wepi, st) : a;
  Status c = b.is_ok() ? kernels::topk(logits->as<const float>(), 1000, 5, top->as<kernels::TopKPair>(), st, sig) : b;
  WS_ASSERT_CUDA(cudaStreamEndCapture(st, &graph));
  ASSERT_TRUE(c.is_ok()) << c.to_string();
  WS_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaGraphDestroy(graph);
  for (uint32_t r = 1; r <= 6; ++r) {
    const uint32_t want = start + r;  // this frame's flag value, and the epoch after it (wraps after r = 2)
    WS_ASSERT_CUDA(cudaMemsetAsync(y1->get(), 0xff, y_elems * 2, st));
    WS_ASSERT_CUDA(cudaMemsetAsync(x1->get(), 0xff, x_elems * 2, st));
    WS_ASSERT_CUDA(cudaGraphLaunch(exec, st));
    WS_ASSERT_CUDA(cudaStreamSynchronize(st));
    const auto y_wave = download_half(y1->get(), y_elems);
    size_t differ = 0, first = y_elems;
    for (size_t i = 0; i < y_elems; ++i)
      if (y_wave[i] != y_plain[i]) {
        ++differ;
        first = std::min(first, i);
      }
    EXPECT_EQ(differ, 0u) << "replay " << r << ": " << differ << " stem outputs differ from the plain form; first at " << first
                          << " (channel " << first / size_t(g.out_h * g.out_w) << ", pixel " << first % size_t(g.out_h * g.out_w)
                          << "): " << (first < y_elems ? half_to_float(y_wave[first]) : 0.f) << " vs "
                          << (first < y_elems ? half_to_float(y_plain[first]) : 0.f);
    EXPECT_EQ(download_half(x1->get(), x_elems), x_plain) << "replay " << r << ": the publishing preprocess's output differs";
    std::vector<uint32_t> words_h(size_t(kDst) + 2);
    WS_ASSERT_CUDA(cudaMemcpy(words_h.data(), sig.flags, words_h.size() * 4, cudaMemcpyDeviceToHost));
    EXPECT_EQ(words_h[kDst], want) << "epoch after replay " << r;
    EXPECT_EQ(words_h[kDst + 1], 0u) << "error word after replay " << r;
    size_t stale = 0;
    for (int i = 0; i < kDst; ++i) stale += words_h[size_t(i)] != want;
    EXPECT_EQ(stale, 0u) << "replay " << r << ": " << stale << " row flags are not this frame's value " << want;
    if (HasFailure()) break;
  }
  cudaGraphExecDestroy(exec);
}

TEST(RowSignal, ChainedStemAndDepthwisePointwiseMatchPlainForm) {
  WS_REQUIRE_LANES_GPU();
  FrameCase fc = frame_case("RowSignal.ChainedStem");
  if (HasFatalFailure()) return;
  const bool pdl = fc.pdl;
  std::mt19937& rng = fc.rng;
  const uint8_t* src = fc.frame.src;

  const Conv2dGeometry g = stem_geometry(kDst, kDst);  // 3 -> 32, 224 -> 112
  constexpr int kPw = 16;
  Conv2dGeometry dw;  // EfficientNet-Lite0 block 0: depthwise 3x3 s1 pads 1 on 32 channels, ReLU6; then 1x1 32 -> 16
  dw.n = 1; dw.c_in = dw.c_out = dw.group = kCo; dw.in_h = dw.out_h = g.out_h; dw.in_w = dw.out_w = g.out_w;
  dw.kernel_h = dw.kernel_w = 3; dw.stride_h = dw.stride_w = 1; dw.dilation_h = dw.dilation_w = 1;
  dw.pad_top = dw.pad_left = dw.pad_bottom = dw.pad_right = 1;
  Conv2dGeometry pw = dw;
  pw.c_out = kPw; pw.group = 1; pw.kernel_h = pw.kernel_w = 1; pw.pad_top = pw.pad_left = pw.pad_bottom = pw.pad_right = 0;
  const size_t x_elems = size_t(3) * kDst * kDst, s_elems = size_t(kCo) * g.out_h * g.out_w, y_elems = size_t(kPw) * g.out_h * g.out_w;
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<__half> w_stem(size_t(kCo) * 27), w_dw(size_t(kCo) * 9), w_pw(size_t(kPw) * kCo);
  std::vector<float> b_stem(kCo), b_dw(kCo), b_pw(kPw);
  for (auto* v : {&w_stem, &w_dw, &w_pw})
    for (auto& e : *v) e = __float2half(u(rng));
  for (auto* v : {&b_stem, &b_dw, &b_pw})
    for (auto& e : *v) e = u(rng);
  auto upload = [](const auto& v) {
    auto b = cuda::DeviceBuffer::allocate(v.size() * sizeof(v[0]));
    EXPECT_TRUE(b.is_ok());
    EXPECT_EQ(test::upload_sync(b->get(), v.data(), v.size() * sizeof(v[0])), cudaSuccess);
    return std::move(b).value();
  };
  cuda::DeviceBuffer d_w_stem = upload(w_stem), d_w_dw = upload(w_dw), d_w_pw = upload(w_pw);
  cuda::DeviceBuffer d_b_stem = upload(b_stem), d_b_dw = upload(b_dw), d_b_pw = upload(b_pw);
  auto x = cuda::DeviceBuffer::allocate(x_elems * 2), s0 = cuda::DeviceBuffer::allocate(s_elems * 2), s1 = cuda::DeviceBuffer::allocate(s_elems * 2);
  auto y0 = cuda::DeviceBuffer::allocate(y_elems * 2), y1 = cuda::DeviceBuffer::allocate(y_elems * 2);
  auto logits = cuda::DeviceBuffer::allocate(1000 * 4), top = cuda::DeviceBuffer::allocate(sizeof(kernels::TopKPair) * 5);
  ASSERT_TRUE(x.is_ok() && s0.is_ok() && s1.is_ok() && y0.is_ok() && y1.is_ok() && logits.is_ok() && top.is_ok());
  WS_ASSERT_CUDA(test::memset_sync(logits->get(), 0, 1000 * 4));
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream.is_ok());
  cudaStream_t st = stream->get();
  const Normalize norm;
  kernels::ConvEpilogue stem_epi, dw_epi, pw_epi;
  stem_epi.bias = d_b_stem.as<const float>();
  stem_epi.act = dw_epi.act = kernels::Activation::kClip;
  stem_epi.params.min = dw_epi.params.min = 0.0f;
  stem_epi.params.max = dw_epi.params.max = 6.0f;
  dw_epi.bias = d_b_dw.as<const float>();
  pw_epi.bias = d_b_pw.as<const float>();
  stem_epi.pdl = dw_epi.pdl = pw_epi.pdl = pdl;

  for (kernels::PointwiseTile tile : {kernels::PointwiseTile::k32x32, kernels::PointwiseTile::k64x64}) {
    const std::string what = std::string("tile ") + kernels::pointwise_tile_name(tile);
    // The plain chain.
    WS_ASSERT_CUDA(test::memset_sync(s0->get(), 0xff, s_elems * 2));
    WS_ASSERT_CUDA(test::memset_sync(y0->get(), 0xff, y_elems * 2));
    ASSERT_TRUE(kernels::preprocess_rgb8_to_nchw(src, kSrcH, kSrcW, 3 * kSrcW, x->get(), DType::kFloat16, kDst, kDst, norm, st,
                                                 kernels::PreprocessPath::kStaged).is_ok());
    ASSERT_TRUE(kernels::conv2d_direct(kernels::ElemType::kFloat16, g, x->get(), d_w_stem.get(), s0->get(), stem_epi, st).is_ok());
    ASSERT_TRUE(kernels::conv2d_depthwise_pointwise(tile, dw, pw, s0->get(), d_w_dw.get(), dw_epi, d_w_pw.get(), y0->get(), pw_epi, st).is_ok());
    WS_ASSERT_CUDA(cudaStreamSynchronize(st));
    const auto s_plain = download_half(s0->get(), s_elems);
    const auto y_plain = download_half(y0->get(), y_elems);

    // The plain fused kernel against a CPU depthwise (rounded to fp16, as the kernel keeps it) -> pointwise.
    const int64_t H = g.out_h, W = g.out_w;
    std::vector<double> d(s_elems);
    for (int c = 0; c < kCo; ++c)
      for (int64_t oy = 0; oy < H; ++oy)
        for (int64_t ox = 0; ox < W; ++ox) {
          double acc = b_dw[size_t(c)];
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              acc += double(half_to_float(s_plain[size_t((c * H + iy) * W + ix)])) * double(__half2float(w_dw[size_t(c * 9 + ky * 3 + kx)]));
            }
          d[size_t((c * H + oy) * W + ox)] = double(__half2float(__float2half(float(std::min(std::max(acc, 0.0), 6.0)))));
        }
    double max_ref = 0, max_diff = 0;
    for (int m = 0; m < kPw; ++m)
      for (int64_t i = 0; i < H * W; ++i) {
        double acc = b_pw[size_t(m)];
        for (int c = 0; c < kCo; ++c) acc += double(__half2float(w_pw[size_t(m * kCo + c)])) * d[size_t(c * H * W + i)];
        const double got = half_to_float(y_plain[size_t(m * H * W + i)]);
        ASSERT_FALSE(std::isnan(got)) << what << ": plain fused output NaN at channel " << m << ", pixel " << i;
        max_ref = std::max(max_ref, std::fabs(acc));
        max_diff = std::max(max_diff, std::fabs(got - acc));
      }
    EXPECT_LE(max_diff, 2e-2 * max_ref) << what << ": plain depthwise->pointwise vs CPU: max|diff| " << max_diff << ", max|ref| " << max_ref;

    // The chained wavefront, captured once, replayed across the epoch's wrap.
    const int64_t h1 = g.out_h;
    auto words = cuda::DeviceBuffer::allocate(size_t(kDst + 2 + 2 * h1) * 4);
    ASSERT_TRUE(words.is_ok());
    uint32_t* wd = words->as<uint32_t>();
    const RowSignal in_sig{wd, wd + kDst, wd + kDst + 1, kDst};
    RowSignal out_sig{wd + kDst + 2, in_sig.epoch, in_sig.error, h1};
    out_sig.counters = wd + kDst + 2 + h1;
    const uint32_t start = 0xFFFFFFFEu;
    {
      std::vector<uint32_t> init(size_t(kDst + 2 + 2 * h1), start);  // flags as after the previous frame
      init[size_t(kDst) + 1] = 0;                                      // error
      for (int64_t r = 0; r < h1; ++r) init[size_t(kDst + 2 + h1 + r)] = 0;  // counters
      WS_ASSERT_CUDA(test::upload_sync(wd, init.data(), init.size() * 4));
    }
    kernels::ConvEpilogue wstem = stem_epi, wdw = dw_epi;
    wstem.input_rows = in_sig;
    wstem.output_rows = out_sig;
    wdw.input_rows = out_sig;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    WS_ASSERT_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    Status a = kernels::preprocess_rgb8_to_nchw(src, kSrcH, kSrcW, 3 * kSrcW, x->get(), DType::kFloat16, kDst, kDst, norm, st,
                                                kernels::PreprocessPath::kAuto, in_sig);
    Status b = a.is_ok() ? kernels::conv2d_direct(kernels::ElemType::kFloat16, g, x->get(), d_w_stem.get(), s1->get(), wstem, st) : a;
    Status c = b.is_ok() ? kernels::conv2d_depthwise_pointwise(tile, dw, pw, s1->get(), d_w_dw.get(), wdw, d_w_pw.get(), y1->get(), pw_epi, st) : b;
    Status e = c.is_ok() ? kernels::topk(logits->as<const float>(), 1000, 5, top->as<kernels::TopKPair>(), st, in_sig) : c;
    WS_ASSERT_CUDA(cudaStreamEndCapture(st, &graph));
    ASSERT_TRUE(e.is_ok()) << what << ": " << e.to_string();
    WS_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphDestroy(graph);
    for (uint32_t r = 1; r <= 4; ++r) {
      const uint32_t want = start + r;  // wraps after r = 1
      WS_ASSERT_CUDA(cudaMemsetAsync(s1->get(), 0xff, s_elems * 2, st));
      WS_ASSERT_CUDA(cudaMemsetAsync(y1->get(), 0xff, y_elems * 2, st));
      WS_ASSERT_CUDA(cudaMemsetAsync(x->get(), 0xff, x_elems * 2, st));
      WS_ASSERT_CUDA(cudaGraphLaunch(exec, st));
      WS_ASSERT_CUDA(cudaStreamSynchronize(st));
      for (int which = 0; which < 2; ++which) {
        const auto got = download_half(which ? y1->get() : s1->get(), which ? y_elems : s_elems);
        const auto& ref = which ? y_plain : s_plain;
        size_t differ = 0, first = ref.size();
        for (size_t i = 0; i < ref.size(); ++i)
          if (got[i] != ref[i]) {
            ++differ;
            first = std::min(first, i);
          }
        const size_t plane = size_t(H * W);
        EXPECT_EQ(differ, 0u) << what << ", replay " << r << ": " << differ << (which ? " depthwise->pointwise" : " stem")
                              << " outputs differ from the plain chain; first at channel " << first / plane << ", pixel " << first % plane
                              << ": " << (first < ref.size() ? half_to_float(got[first]) : 0.f) << " vs "
                              << (first < ref.size() ? half_to_float(ref[first]) : 0.f);
      }
      std::vector<uint32_t> w_h(size_t(kDst + 2 + 2 * h1));
      WS_ASSERT_CUDA(cudaMemcpy(w_h.data(), wd, w_h.size() * 4, cudaMemcpyDeviceToHost));
      EXPECT_EQ(w_h[kDst], want) << what << ": epoch after replay " << r;
      EXPECT_EQ(w_h[kDst + 1], 0u) << what << ": error word after replay " << r;
      size_t stale = 0, stale_out = 0, counters = 0;
      for (int i = 0; i < kDst; ++i) stale += w_h[size_t(i)] != want;
      for (int64_t i = 0; i < h1; ++i) {
        stale_out += w_h[size_t(kDst + 2 + i)] != want;
        counters += w_h[size_t(kDst + 2 + h1 + i)] != 0;
      }
      EXPECT_EQ(stale, 0u) << what << ", replay " << r << ": input row flags not " << want;
      EXPECT_EQ(stale_out, 0u) << what << ", replay " << r << ": stem output row flags not " << want;
      EXPECT_EQ(counters, 0u) << what << ", replay " << r << ": stem row counters left nonzero";
      if (HasFailure()) break;
    }
    cudaGraphExecDestroy(exec);
    if (HasFailure()) break;
  }
}

TEST(RowSignal, WaitGivesUpAndTheFrameEndReportsIt) {
  WS_REQUIRE_LANES_GPU();
  const Conv2dGeometry g = stem_geometry(16, 16);
  auto x = cuda::DeviceBuffer::allocate(3 * 16 * 16 * 2), y = cuda::DeviceBuffer::allocate(size_t(kCo) * g.out_h * g.out_w * 2);
  auto w = cuda::DeviceBuffer::allocate(kCo * 27 * 2), logits = cuda::DeviceBuffer::allocate(10 * 4);
  auto top = cuda::DeviceBuffer::allocate(sizeof(kernels::TopKPair) * 3);
  ASSERT_TRUE(x.is_ok() && y.is_ok() && w.is_ok() && logits.is_ok() && top.is_ok());
  WS_ASSERT_CUDA(test::memset_sync(x->get(), 0, x->bytes()));
  WS_ASSERT_CUDA(test::memset_sync(w->get(), 0, w->bytes()));
  WS_ASSERT_CUDA(test::memset_sync(logits->get(), 0, logits->bytes()));
  SignalWords words = make_signal(16);
  const uint32_t epoch = 7;  // flags stay 0: this frame's value 8 is never published
  WS_ASSERT_CUDA(test::upload_sync(words.sig.epoch, &epoch, 4));
  kernels::ConvEpilogue e;
  e.input_rows = words.sig;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(kernels::conv2d_direct(kernels::ElemType::kFloat16, g, x->get(), w->get(), y->get(), e, nullptr).is_ok());
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("RowSignal: an unpublished wait gave up after %.2f s\n", s);
  uint32_t err = 0;
  WS_ASSERT_CUDA(cudaMemcpy(&err, words.sig.error, 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(err, 1u) << "the stem's wait should have given up and set the error word";
  ASSERT_TRUE(kernels::topk(logits->as<const float>(), 10, 3, top->as<kernels::TopKPair>(), nullptr, words.sig).is_ok());
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  std::array<kernels::TopKPair, 3> got{};
  WS_ASSERT_CUDA(cudaMemcpy(got.data(), top->get(), sizeof(got), cudaMemcpyDeviceToHost));
  for (const auto& p : got) {
    EXPECT_EQ(p.index, kernels::kTopKInvalidIndex);
    EXPECT_TRUE(std::isnan(p.score));
  }
  uint32_t after[2] = {0, 0};
  WS_ASSERT_CUDA(cudaMemcpy(after, words.sig.epoch, 8, cudaMemcpyDeviceToHost));  // epoch, error
  EXPECT_EQ(after[0], epoch + 1) << "the frame's end bumps the epoch";
  EXPECT_EQ(after[1], 0u) << "the frame's end clears the error word";
}

TEST(RowSignal, RefusalsBeforeTheDevice) {
  alignas(256) static unsigned char buf[256];
  void* p = buf;
  uint32_t* u = reinterpret_cast<uint32_t*>(buf);
  const RowSignal sig{u, u + 16, u + 17, 16};
  kernels::ConvEpilogue e;
  e.input_rows = sig;
  auto expect = [](const Status& st, const char* needle) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  Conv2dGeometry dw = stem_geometry(16, 16);
  dw.c_in = dw.c_out = dw.group = 8;
  expect(kernels::conv2d_depthwise(kernels::ElemType::kFloat16, dw, p, p, p, e, nullptr), "conv2d_depthwise");
  Conv2dGeometry k5 = stem_geometry(16, 16);
  k5.kernel_h = k5.kernel_w = 5;
  k5.out_h = k5.out_w = 7;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, k5, p, p, p, e, nullptr), "RGB stem");
  Conv2dGeometry n2 = stem_geometry(16, 16);
  n2.n = 2;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, n2, p, p, p, e, nullptr), "batch 1");
  Conv2dGeometry pw = stem_geometry(16, 16);
  pw.kernel_h = pw.kernel_w = 1;
  pw.stride_h = pw.stride_w = 1;
  pw.pad_bottom = pw.pad_right = 0;
  pw.out_h = pw.out_w = 16;
  expect(kernels::conv2d_pointwise(kernels::ElemType::kFloat16, kernels::PointwiseTile::k32x32, pw, p, p, p, e, nullptr), "conv2d_pointwise");
  RowSignal rows_off = sig;
  rows_off.rows = 15;  // a destination / stem input of 16 rows
  expect(kernels::preprocess_rgb8_to_nchw(buf, 32, 32, 96, p, DType::kFloat16, 16, 16, Normalize{}, nullptr, kernels::PreprocessPath::kAuto,
                                          rows_off),
         "15 rows for a destination of 16");
  kernels::ConvEpilogue e15;
  e15.input_rows = rows_off;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, e15, nullptr), "15 rows");
  RowSignal no_epoch = sig;
  no_epoch.epoch = nullptr;
  kernels::ConvEpilogue e_no_epoch;
  e_no_epoch.input_rows = no_epoch;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, e_no_epoch, nullptr), "no epoch word");
  expect(kernels::preprocess_rgb8_to_nchw(buf, 32, 32, 96, p, DType::kFloat16, 16, 16, Normalize{}, nullptr, kernels::PreprocessPath::kAuto,
                                          no_epoch),
         "no epoch word");
  kernels::ConvEpilogue plain;  // mbconv: only the projection's epilogue carries the signal (refused before any geometry check)
  const Conv2dGeometry any = stem_geometry(16, 16);
  expect(kernels::conv2d_mbconv(any, any, any, 8, p, p, plain, p, plain, p, p, e, nullptr), "conv2d_mbconv");
  kernels::ConvEpilogue e_res = e;
  e_res.residual = p;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, e_res, nullptr), "a residual");
  expect(kernels::preprocess_rgb8_to_nchw(buf, 32, 32, 96, p, DType::kFloat16, 16, 16, Normalize{}, nullptr, kernels::PreprocessPath::kDirect,
                                          sig),
         "row-staged");
  // The chain: the stem publishes only while waiting, on a signal of its output rows sharing the epoch, with counters.
  kernels::ConvEpilogue pub_only;
  RowSignal out8{u + 20, u + 16, u + 17, 8};
  out8.counters = u + 28;
  pub_only.output_rows = out8;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, pub_only, nullptr), "no input signal");
  kernels::ConvEpilogue pub = e;
  RowSignal out7 = out8;
  out7.rows = 7;
  pub.output_rows = out7;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, pub, nullptr), "8 rows");
  RowSignal no_counters = out8;
  no_counters.counters = nullptr;
  pub.output_rows = no_counters;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, pub, nullptr), "no counters");
  RowSignal other_epoch = out8;
  other_epoch.epoch = u + 40;
  pub.output_rows = other_epoch;
  expect(kernels::conv2d_direct(kernels::ElemType::kFloat16, stem_geometry(16, 16), p, p, p, pub, nullptr), "other epoch");
  kernels::ConvEpilogue pw_pub;
  pw_pub.output_rows = out8;
  expect(kernels::conv2d_pointwise(kernels::ElemType::kFloat16, kernels::PointwiseTile::k32x32, pw, p, p, p, pw_pub, nullptr),
         "cannot publish");
  // The fused depthwise -> pointwise kernel waits only with a 3x3 depthwise, batch 1, no residual, x's rows.
  Conv2dGeometry dw16 = pw;
  dw16.c_in = dw16.c_out = dw16.group = 8;
  dw16.kernel_h = dw16.kernel_w = 3;
  dw16.pad_top = dw16.pad_left = dw16.pad_bottom = dw16.pad_right = 1;
  Conv2dGeometry pw16 = pw;
  pw16.c_in = 8;
  pw16.c_out = 16;
  kernels::ConvEpilogue plain_pw;
  expect(kernels::conv2d_depthwise_pointwise(kernels::PointwiseTile::k32x32, dw16, pw16, p, p, e, p, p, e, nullptr), "projection's epilogue");
  RowSignal rows15 = sig;
  rows15.rows = 15;
  kernels::ConvEpilogue dw_rows15;
  dw_rows15.input_rows = rows15;
  expect(kernels::conv2d_depthwise_pointwise(kernels::PointwiseTile::k32x32, dw16, pw16, p, p, dw_rows15, p, p, plain_pw, nullptr), "15 rows");
  Conv2dGeometry dw5 = dw16, pw5 = pw16;
  dw5.kernel_h = dw5.kernel_w = 5;
  dw5.pad_top = dw5.pad_left = dw5.pad_bottom = dw5.pad_right = 2;
  expect(kernels::conv2d_depthwise_pointwise(kernels::PointwiseTile::k32x32, dw5, pw5, p, p, e, p, p, plain_pw, nullptr), "5x5");
  kernels::ConvEpilogue pw_res = plain_pw;
  pw_res.residual = p;
  expect(kernels::conv2d_depthwise_pointwise(kernels::PointwiseTile::k32x32, dw16, pw16, p, p, e, p, p, pw_res, nullptr), "a residual");
  kernels::ConvEpilogue dw_pub;
  dw_pub.output_rows = out8;
  expect(kernels::conv2d_depthwise_pointwise(kernels::PointwiseTile::k32x32, dw16, pw16, p, p, dw_pub, p, p, plain_pw, nullptr), "cannot publish");
  RowSignal no_error = sig;
  no_error.error = nullptr;
  expect(kernels::topk(reinterpret_cast<const float*>(buf), 10, 3, reinterpret_cast<kernels::TopKPair*>(buf), nullptr, no_error), "error word");
}

}  // namespace
}  // namespace ws
