// cuDNN graph convs (src/engine/cuda/cudnn_fe_conv.h; needs a build with the cudnn-frontend headers,
// scripts/fetch-cudnn-frontend.sh: without them the GPU tests skip or run only their "off" half): EVERY engine
// configuration FeConv::build keeps, run on
// ResNet-50's conv shapes (1x1, 3x3 s1/s2, the 1x1 s2 downsample, a 7x7 s2 stem on 8 channels) with and without
// residual and ReLU, against the CPU reference (ref::conv_nd on fp16-rounded operands, + bias + residual, ReLU, in
// float): |got − ref| <= 2e-2·max|ref| (fp16 storage of y, fp32 accumulation). y is poisoned (NaN) before each run;
// a mismatch dumps the operands; random operands print their seed (WS_SEED replays).
// Then the engine: a ResNet-style bottleneck graph built NHWC fp16 with the graph convs on and off, against the CPU executor
// (and its direct-enqueue host allocations); 4 contexts replaying CUDA graphs concurrently against each context alone;
// a context handle without its own plan refused; bad shapes and operands refused (no GPU needed).
//   build/tests/ws_gpu_tests --gtest_filter='CudnnFeConv*'
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda_engine_test_support.h"
#include "engine/cuda/cudnn_fe_conv.h"
#include "engine/ir/model_builder.h"
#include "lanes_gpu_support.h"
#include "nhwc_test_support.h"
#include "reference/reference.h"
#include "support/alloc_counter.h"
#include "support/compare_dump.h"
#include "support/small_tests.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

using cudaexec::FeConv;
using cudaexec::FeConvShape;
using test::DevHalf;
using test::random_half;
using test::to_nchw;

struct Case {
  const char* name;
  int64_t c, h, w, k, r, stride, pad;
  bool residual, relu;
};

TEST(CudnnFeConv, EveryPlanMatchesTheReference) {
  WS_REQUIRE_LANES_GPU();
  if (!cudaexec::cudnn_fe_conv_built()) GTEST_SKIP() << "built without cudnn-frontend (scripts/fetch-cudnn-frontend.sh)";
  const Case cases[] = {
      {"1x1 256->64 14x14 relu", 256, 14, 14, 64, 1, 1, 0, false, true},
      {"1x1 64->256 14x14 residual relu", 64, 14, 14, 256, 1, 1, 0, true, true},
      {"3x3 128 28x28 s1 relu", 128, 28, 28, 128, 3, 1, 1, false, true},
      {"3x3 256 28x28 s2 relu", 256, 28, 28, 256, 3, 2, 1, false, true},
      {"3x3 512 7x7 s1 relu", 512, 7, 7, 512, 3, 1, 1, false, true},
      {"1x1 s2 512->1024 downsample", 512, 28, 28, 1024, 1, 2, 0, false, false},
      {"7x7 s2 stem 8->64 relu", 8, 32, 32, 64, 7, 2, 3, false, true},
      {"3x3 16->24 odd 9x11 residual", 16, 9, 11, 24, 3, 1, 1, true, false},
  };
  cudnnHandle_t handle = nullptr;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  size_t runs = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const int64_t oh = (k.h + 2 * k.pad - k.r) / k.stride + 1, ow = (k.w + 2 * k.pad - k.r) / k.stride + 1;
    const FeConvShape s{.n = 1, .c = k.c, .h = k.h, .w = k.w, .k = k.k, .r = k.r, .s = k.r, .pad_h = k.pad, .pad_w = k.pad,
                        .stride_h = k.stride, .stride_w = k.stride, .dil_h = 1, .dil_w = 1, .out_h = oh, .out_w = ow,
                        .residual = k.residual, .relu = k.relu};
    auto built = FeConv::build(handle, s, k.name, 12, 4, int64_t{256} << 20);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    const FeConv& f = **built;
    ASSERT_GE(f.plan_count(), 1);
    {  // a timing-cache hit rebuilds one heuristic index alone: the same engine
      auto one = FeConv::build(handle, s, k.name, 12, 4, int64_t{256} << 20, f.graph_index(f.plan_count() - 1));
      ASSERT_TRUE(one.is_ok()) << one.status().to_string();
      ASSERT_EQ((*one)->plan_count(), 1);
      EXPECT_EQ((*one)->plan_name(0), f.plan_name(f.plan_count() - 1));
    }
    const size_t xn = size_t(k.h * k.w * k.c), wn = size_t(k.k * k.r * k.r * k.c), yn = size_t(oh * ow * k.k);
    const std::string tag = k.name;
    const std::vector<float> x = random_half(xn, tag + " x", -1.f, 1.f);
    const float wb = 1.0f / std::sqrt(float(k.c * k.r * k.r));
    const std::vector<float> w = random_half(wn, tag + " w", -wb, wb);  // KRSC
    const std::vector<float> b = random_half(size_t(k.k), tag + " bias", -0.5f, 0.5f);
    const std::vector<float> z = random_half(k.residual ? yn : 0, tag + " z", -1.f, 1.f);
    // Reference: NCHW conv of the same (fp16-rounded) values, + bias + residual, ReLU.
    ref::ConvParams cp;
    cp.rank = 2; cp.n = 1; cp.c_in = k.c; cp.c_out = k.k; cp.groups = 1;
    cp.in[0] = k.h; cp.in[1] = k.w; cp.kernel[0] = cp.kernel[1] = k.r; cp.stride[0] = cp.stride[1] = k.stride;
    cp.dilation[0] = cp.dilation[1] = 1; cp.pad_begin[0] = cp.pad_begin[1] = cp.pad_end[0] = cp.pad_end[1] = k.pad;
    cp.out[0] = oh; cp.out[1] = ow;
    std::vector<float> ref_nchw(yn);
    ref::conv_nd(to_nchw(x, 1, k.h, k.w, k.c).data(), to_nchw(w, k.k, k.r, k.r, k.c).data(), nullptr, ref_nchw.data(), cp);
    std::vector<float> ref(yn);  // back to NHWC, epilogue applied
    double max_ref = 0;
    for (int64_t p = 0; p < oh * ow; ++p)
      for (int64_t ch = 0; ch < k.k; ++ch) {
        float v = ref_nchw[size_t(ch * oh * ow + p)] + b[size_t(ch)] + (k.residual ? z[size_t(p * k.k + ch)] : 0.f);
        if (k.relu) v = std::max(v, 0.f);
        ref[size_t(p * k.k + ch)] = v;
        max_ref = std::max(max_ref, std::fabs(double(v)));
      }
    DevHalf dx(x), dw(w), db(b), dz(z), dy(std::vector<float>(yn, 0.f));
    for (int i = 0; i < f.plan_count(); ++i) {
      SCOPED_TRACE(f.plan_name(i));
      void* ws = nullptr;
      if (f.workspace_bytes(i) > 0) ASSERT_EQ(cudaMalloc(&ws, size_t(f.workspace_bytes(i))), cudaSuccess);
      ASSERT_EQ(test::memset_sync(dy.p, 0xFF, yn * sizeof(__half)), cudaSuccess);  // NaN poison
      const Status st = f.run(handle, i, dx.p, dw.p, db.p, k.residual ? dz.p : nullptr, dy.p, ws, nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      cudaFree(ws);
      const std::vector<float> got = dy.read(yn);
      const double tol = 2e-2 * std::max(max_ref, 1e-3);
      double max_diff = 0;
      for (size_t j = 0; j < yn; ++j) max_diff = std::max(max_diff, std::fabs(double(got[j]) - double(ref[j])));
      std::printf("[ fe conv  ] %-34s plan %2d %-48s max|diff| %.3g (max|ref| %.3g, %zu values)\n", k.name, i, f.plan_name(i).c_str(),
                  max_diff, max_ref, yn);
      EXPECT_TRUE(test::near_dump(tag + " " + f.plan_name(i), got, ref, {.abs = tol, .rel = 0},
                                  {{"x (NHWC)", x}, {"w (KRSC)", w}, {"bias", b}, {"z", z}}));
      ++runs;
    }
  }
  cudnnDestroy(handle);
  EXPECT_GT(runs, 0u);
}

// Bad arguments are refused with a message before any cuDNN work (no GPU needed for these).
TEST(CudnnFeConv, RefusesBadShapesAndOperands) {
  FeConvShape s{.n = 1, .c = 8, .h = 4, .w = 4, .k = 8, .r = 1, .s = 1, .out_h = 4, .out_w = 4};
  s.stride_h = 0;
  auto r = FeConv::build(reinterpret_cast<cudnnHandle_t>(0x1), s, "bad", 4, 0, 0);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), cudaexec::cudnn_fe_conv_built() ? StatusCode::kInvalidArgument : StatusCode::kUnsupported);
  s.stride_h = 1;
  auto r2 = FeConv::build(nullptr, s, "conv_7", 4, 0, 0);
  ASSERT_FALSE(r2.is_ok());
  if (cudaexec::cudnn_fe_conv_built()) {
    EXPECT_NE(r2.status().message().find("'conv_7': null cuDNN handle"), std::string::npos) << r2.status().to_string();
    auto r3 = FeConv::build(reinterpret_cast<cudnnHandle_t>(0x1), s, "conv_8", 0, 0, 0);  // no plan allowed
    ASSERT_FALSE(r3.is_ok());
    EXPECT_EQ(r3.status().code(), StatusCode::kInvalidArgument) << r3.status().to_string();
  }
}

// A ResNet bottleneck (1x1 -> 3x3 -> 1x1 + residual, ReLUs) NHWC fp16 with the graph convs on and off, against the CPU
// executor; the tactic list names the engine each conv chose (none is a graph engine when off); host allocations of direct
// enqueue counted (below).
TEST(CudnnFeConv, BottleneckEngineMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  const ir::Graph g = test::bottleneck_graph(64, 32, 14, 1, "bottleneck");
  uint64_t allocs_on = 0, allocs_off = 0;
  for (bool graph_convs : {true, false}) {
    const std::string what = std::string("bottleneck fp16 nhwc, cudnn graph convs ") + (graph_convs ? "on" : "off");
    SCOPED_TRACE(what);
    CudaBuildOptions o;
    o.layout = Layout::kNhwc;
    o.cudnn_graph_convs = graph_convs;
    std::string err;
    auto cmp = test::run_both(g, Precision::kFloat16, 2e-2, 2e-2, test::test_seed(what), &err, o);
    ASSERT_TRUE(err.empty()) << err;
    std::printf("[ fe conv  ] %-44s max|diff| %.3g (max|ref| %.3g, %zu values)\n", what.c_str(), cmp.max_abs, cmp.max_ref, cmp.count);
    EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = 2e-2, .rel = 2e-2}));
    EXPECT_GT(cmp.max_ref, 0.0);
    o.precision = Precision::kFloat16;
    auto e = CudaEngine::build(g, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    size_t graph_steps = 0;
    for (const TacticRecord& t : (*e)->tactics())
      if (t.op_type == "Conv") {
        std::printf("[ fe conv  ]   %-6s %7.2f us  %s\n", t.node.c_str(), t.time_us, t.choice.c_str());
        graph_steps += t.choice.rfind("cudnn graph", 0) == 0;
      }
    if (!graph_convs || !cudaexec::cudnn_fe_conv_built()) EXPECT_EQ(graph_steps, 0u);
    // Direct enqueue in the steady state (after the warm-up calls: the context's replay graph): no operator new on this
    // thread, graph engines included.
    auto ctx = (*e)->create_context();
    ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
    ASSERT_EQ(test::memset_sync((*ctx)->input(0), 0, size_t(64 * 14 * 14) * 2), cudaSuccess);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*ctx)->enqueue(nullptr).is_ok());  // warm-up (lazy variant-pack templates)
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    uint64_t allocs = 0;
    bool ok = true;
    {
      test::AllocationScope scope;
      for (int i = 0; i < 200; ++i) ok = (*ctx)->enqueue(nullptr).is_ok() && ok;
      allocs = scope.count();
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(ok);
    std::printf("[ fe conv  ] %-44s %llu operator new calls over 200 direct enqueues (%zu cuDNN graph steps)\n", what.c_str(),
                static_cast<unsigned long long>(allocs), graph_steps);
    (graph_convs ? allocs_on : allocs_off) = allocs;
  }
  // Direct enqueue replays the context's own CUDA graph from its second call (cuda_engine.cpp, ContextImpl::enqueue), so
  // cuDNN's per-call host allocations (device run 70: 36,200 operator new calls over 200 enqueues with the legacy calls,
  // 10,600 with the graph engines, when every enqueue launched the steps) are gone from the steady state.
  EXPECT_EQ(allocs_on, 0u) << "operator new calls in 200 direct enqueues, cuDNN graph convs on";
  EXPECT_EQ(allocs_off, 0u) << "operator new calls in 200 direct enqueues, legacy cuDNN convs";
}

// Several contexts of one engine replaying their CUDA graphs concurrently (what 4 lanes do) must each produce what they
// produce alone, bit for bit. Device run 71 saw 3 of 4000 ResNet-50 frames with another top-1 with the graph convs on
// and 4 lanes (one lane exact) while every context shared the plans built at build; each context now builds its own
// (FeConv::prepare). Each context gets its own input (shared state written with equal values would hide a race), and
// the net is two of ResNet-50's layer1 bottlenecks at 56x56 (1x1 256->64, 3x3 64->64, 1x1 64->256 + residual: the
// residual 1x1 is where a runtime-compiled engine won in run 69). Graph convs on (the suspect) and off (the control).
TEST(CudnnFeConv, ConcurrentContextsMatchOneContext) {
  WS_REQUIRE_LANES_GPU();
  const ir::Graph g = test::bottleneck_graph(256, 64, 56, 2, "bottlenecks");
  constexpr int kContexts = 4, kRounds = 250;
  for (bool graph_convs : {true, false}) {
    if (graph_convs && !cudaexec::cudnn_fe_conv_built()) {  // the suspect half needs the graph engines; never claim it without
      std::printf("[ fe conv  ] built without cudnn-frontend: the graph-convs-on half is not run\n");
      continue;
    }
    const std::string what = std::string("4 contexts, cudnn graph convs ") + (graph_convs ? "on" : "off");
    SCOPED_TRACE(what);
    CudaBuildOptions o;
    o.layout = Layout::kNhwc;
    o.precision = Precision::kFloat16;
    o.cudnn_graph_convs = graph_convs;
    auto e = CudaEngine::build(g, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    size_t graph_steps = 0;
    for (const TacticRecord& r : (*e)->tactics()) graph_steps += r.choice.rfind("cudnn graph", 0) == 0;
    if (graph_convs && cudaexec::cudnn_fe_conv_built()) EXPECT_GT(graph_steps, 0u) << "no conv chose a cuDNN graph engine: nothing tested";
    if (!graph_convs) EXPECT_EQ(graph_steps, 0u);
    const size_t in_bytes = (*e)->input_desc(0).bytes, out_bytes = (*e)->output_desc(0).bytes;
    std::vector<std::unique_ptr<ExecutionContext>> ctx;
    std::vector<cudaStream_t> st(kContexts);
    std::vector<cudaGraphExec_t> exec(kContexts);
    std::vector<std::vector<unsigned char>> want(kContexts, std::vector<unsigned char>(out_bytes));
    for (int i = 0; i < kContexts; ++i) {
      auto c = (*e)->create_context();
      ASSERT_TRUE(c.is_ok()) << c.status().to_string();
      ctx.push_back(std::move(*c));
      const std::vector<float> xin = test::random_values(size_t(256 * 56 * 56), test::test_seed(what + " input " + std::to_string(i)), -1.f, 1.f);
      std::vector<__half> xh(xin.size());
      for (size_t k = 0; k < xin.size(); ++k) xh[k] = __float2half_rn(xin[k]);
      ASSERT_EQ(in_bytes, xh.size() * sizeof(__half));
      ASSERT_EQ(test::upload_sync(ctx[i]->input(0), xh.data(), in_bytes), cudaSuccess);
      ASSERT_EQ(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking), cudaSuccess);
      ASSERT_TRUE(ctx[i]->enqueue(st[i]).is_ok());  // warm-up outside capture
      ASSERT_EQ(cudaStreamSynchronize(st[i]), cudaSuccess);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(st[i], cudaStreamCaptureModeThreadLocal), cudaSuccess);
      const Status q = ctx[i]->enqueue(st[i]);
      ASSERT_EQ(cudaStreamEndCapture(st[i], &graph), cudaSuccess);
      ASSERT_TRUE(q.is_ok()) << q.to_string();
      ASSERT_EQ(cudaGraphInstantiate(&exec[i], graph, 0), cudaSuccess);
      cudaGraphDestroy(graph);
      // Its reference: this context alone.
      ASSERT_EQ(cudaGraphLaunch(exec[i], st[i]), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(st[i]), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(want[i].data(), ctx[i]->output(0), out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    std::vector<unsigned char> got(out_bytes);
    size_t bad = 0, first_round = 0, first_ctx = 0;
    for (int r = 0; r < kRounds; ++r) {
      for (int i = 0; i < kContexts; ++i) ASSERT_EQ(cudaGraphLaunch(exec[i], st[i]), cudaSuccess);
      for (int i = 0; i < kContexts; ++i) {
        ASSERT_EQ(cudaStreamSynchronize(st[i]), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got.data(), ctx[i]->output(0), out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        if (std::memcmp(got.data(), want[i].data(), out_bytes) != 0 && bad++ == 0) { first_round = size_t(r); first_ctx = size_t(i); }
      }
    }
    std::printf("[ fe conv  ] %-36s %zu cuDNN graph steps: %zu of %d outputs differ from their context alone\n", what.c_str(), graph_steps,
                bad, kRounds * kContexts);
    EXPECT_EQ(bad, 0u) << "first: round " << first_round << ", context " << first_ctx;
    for (int i = 0; i < kContexts; ++i) {
      cudaGraphExecDestroy(exec[i]);
      cudaStreamDestroy(st[i]);
    }
  }
}

// A context's handle with no prepared plan is refused, not given the shared one (FeConv::run).
TEST(CudnnFeConv, RunRefusesAnUnpreparedHandle) {
  WS_REQUIRE_LANES_GPU();
  if (!cudaexec::cudnn_fe_conv_built()) GTEST_SKIP() << "built without cudnn-frontend";
  cudnnHandle_t builder = nullptr, other = nullptr;
  ASSERT_EQ(cudnnCreate(&builder), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreate(&other), CUDNN_STATUS_SUCCESS);
  const FeConvShape s{.n = 1, .c = 64, .h = 8, .w = 8, .k = 64, .r = 1, .s = 1, .out_h = 8, .out_w = 8, .relu = true};
  auto f = FeConv::build(builder, s, "conv_9", 2, 0, int64_t{1} << 20);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  DevHalf x(std::vector<float>(64 * 64, 0.5f)), w(std::vector<float>(64 * 64, 0.01f)), bias(std::vector<float>(64, 0.f)),
      y(std::vector<float>(64 * 64, 0.f));
  const Status refused = (*f)->run(other, 0, x.p, w.p, bias.p, nullptr, y.p, nullptr, nullptr);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.to_string();
  auto token = (*f)->prepare(other, 0);
  ASSERT_TRUE(token.is_ok()) << token.status().to_string();
  EXPECT_TRUE((*f)->run(other, 0, x.p, w.p, bias.p, nullptr, y.p, nullptr, nullptr).is_ok());
  const Status misaligned = (*f)->run(builder, 0, x.p + 1, w.p, bias.p, nullptr, y.p, nullptr, nullptr);
  EXPECT_NE(misaligned.message().find("x is not 16-byte aligned"), std::string::npos) << misaligned.to_string();
  token->reset();
  EXPECT_EQ((*f)->run(other, 0, x.p, w.p, bias.p, nullptr, y.p, nullptr, nullptr).code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  f->reset();
  cudnnDestroy(other);
  cudnnDestroy(builder);
}

}  // namespace
}  // namespace ws
