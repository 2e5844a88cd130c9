// Lane pipeline vs the CPU oracle on the demo model (make_demo_model, 10 classes), in every mode
// combination: precision fp32|fp16 × graph|direct × input mapped|copy|device, 3 lanes with all frames
// of a round in flight together. Also: graph replay vs direct enqueue give bitwise-equal logits and
// Top-K; and mapped-memory ordering (latency-anchors C10 class): alternating frames in one mapped slot,
// each result read from the mapped result slot right after wait(), never a stale one.
// Tolerances (logits vs CPU, |gpu − cpu| <= rel · max(|cpu|, 1)): fp32 1e-4 (cuDNN/our kernels sum in
// another order than the reference; the demo net is 4 layers deep), fp16 2e-2 (the fp16 bar).
// Frames are random (seed printed; WS_SEED=<n> replays). Also the kHWC8 input port (LaneHwc8Port: a ResNet-like
// fp16 engine built as `bench --hwc8-port`, the lane's NHWC8 preprocess) against the CPU classifier.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "support/cuda_check.h"
#include "cuda/cuda_util.h"
#include "lanes_pipeline_support.h"
#include "support/small_tests.h"

namespace ws {
namespace {

using test::cpu_reference;
using test::CpuFrame;
using test::random_frame;

double rel_tol(Precision p) { return p == Precision::kFloat32 ? 1e-4 : 2e-2; }

using ModeParam = std::tuple<Precision, bool /*graph*/, LaneInput>;

std::string mode_name(const testing::TestParamInfo<ModeParam>& info) {
  return std::string(precision_name(std::get<0>(info.param))) + "_" + (std::get<1>(info.param) ? "graph" : "direct") +
         "_" + lane_input_name(std::get<2>(info.param));
}

class LaneCorrectness : public testing::TestWithParam<ModeParam> {};

TEST_P(LaneCorrectness, MatchesCpuOnRandomFrames) {
  const auto [precision, graph, input] = GetParam();
  WS_DEMO_ENGINE_OR_FAIL(engine, precision);
  CpuEngine* cpu = test::demo_cpu_engine();
  ASSERT_TRUE(cpu);
  constexpr int kLanes = 3, kRounds = 4, kK = 5;
  // An odd source size (bilinear downscale to 32x32 on both axes at different ratios).
  constexpr int64_t kW = 67, kH = 41;
  std::vector<cuda::DeviceBuffer> device_frames;
  auto built = test::build_test_pipeline(engine, &device_frames, kLanes, kW, kH, kK, input, graph);
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  Pipeline& p = **built;
  int excused = 0;
  double worst_logit = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Lane> lanes;
    std::vector<std::vector<uint8_t>> frames;
    for (int i = 0; i < kLanes; ++i) {
      auto lane = p.try_acquire();
      ASSERT_TRUE(lane);
      frames.push_back(random_frame(kW, kH, test::seed_for("lanes-correctness-" + std::to_string(round * 16 + i))));
      if (input == LaneInput::kDevice) {
        ASSERT_TRUE(p.input(*lane).empty());
        ASSERT_EQ(::ws::test::upload_sync(const_cast<void*>(p.device_input(*lane)), frames.back().data(), frames.back().size()),
                  cudaSuccess);
      } else {
        auto slot = p.input(*lane);
        ASSERT_EQ(slot.size(), frames.back().size());
        std::memcpy(slot.data(), frames.back().data(), slot.size());
      }
      lanes.push_back(*lane);
    }
    for (auto& l : lanes) ASSERT_TRUE(p.submit(l, kW, kH).is_ok());  // all in flight together
    for (int i = 0; i < kLanes; ++i) {
      auto top = p.wait(lanes[size_t(i)]);
      ASSERT_TRUE(top.is_ok()) << top.status().to_string();
      const CpuFrame ref = cpu_reference(*cpu, frames[size_t(i)], kW, kH, kK);
      const std::string what = "round " + std::to_string(round) + " lane " + std::to_string(lanes[size_t(i)].index);
      excused += test::expect_topk_matches(*top, ref, rel_tol(precision), what);
      std::vector<float> logits(size_t(p.classes()));
      ASSERT_TRUE(p.copy_logits(lanes[size_t(i)], logits).is_ok());
      worst_logit = std::max(worst_logit, test::expect_logits_close(logits, ref.logits, rel_tol(precision), what));
      // Top-K scores are the lane's own logits, bit for bit.
      for (const auto& e : *top) {
        ASSERT_GE(e.index, 0);
        ASSERT_LT(e.index, p.classes());
        EXPECT_EQ(std::memcmp(&e.score, &logits[size_t(e.index)], 4), 0) << what << " class " << e.index;
      }
      ASSERT_TRUE(p.release(lanes[size_t(i)]).is_ok());
    }
  }
  std::printf("lanes %s/%s/%s: %d frames, worst logit rel err %.3g, near-tie rank swaps %d\n",
              precision_name(precision), graph ? "graph" : "direct", lane_input_name(input), kLanes * kRounds,
              worst_logit, excused);
}

INSTANTIATE_TEST_SUITE_P(LaneModes, LaneCorrectness,
                         testing::Combine(testing::Values(Precision::kFloat32, Precision::kFloat16),
                                          testing::Bool(),
                                          testing::Values(LaneInput::kMapped, LaneInput::kCopy, LaneInput::kDevice)),
                         mode_name);

// The kHWC8 input port in a lane (bench --hwc8-port): a ResNet-like classifier (test::resnet_like_model_bytes) built fp16
// channels-last with hwc8_input + hwc8_input_port takes its input in kHWC8, so the lane's graph runs the NHWC8 preprocess
// (fp16 [1, H, W, 8]) and no reformat; its Top-5 must be the CPU classifier's (ref::preprocess → CpuEngine → ref::topk)
// on the same frames, at the fp16 tolerance (near-ties within it excused and counted), in graph and direct mode, from
// mapped, copy and device sources.
TEST(LaneHwc8Port, ResNetLikeTop5MatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  std::string why;
  std::shared_ptr<CudaEngine> engine = test::resnet_like_hwc8_port_engine(&why);
  ASSERT_TRUE(engine) << "CudaEngine::build(resnet_like, fp16, hwc8_input_port): " << why;
  CpuEngine* cpu = test::resnet_like_cpu_engine();
  ASSERT_TRUE(cpu);
  const TensorDesc& in = engine->input_desc(0);
  ASSERT_EQ(in.format, TensorFormat::kHWC8) << "the stem's padded copy must be taken at the port";
  EXPECT_EQ(in.dtype, ir::DType::kFloat16);
  EXPECT_EQ(in.name, "image");
  EXPECT_EQ(in.shape, (ir::Shape{1, 3, 32, 32}));
  EXPECT_EQ(in.bytes, size_t(32 * 32 * 8 * 2));
  for (const TacticRecord& t : engine->tactics())
    EXPECT_FALSE(t.op_type == "Reformat" && t.choice.find("(kHWC8)") != std::string::npos) << "a padding reformat is left: " << t.choice;
  constexpr int kLanes = 2, kFrames = 3, kK = 5;
  constexpr int64_t kW = 67, kH = 41;  // odd: a bilinear downscale to 32x32 at different ratios on the two axes
  const double rel = rel_tol(Precision::kFloat16);
  int excused = 0;
  double worst_logit = 0;
  for (bool graph : {true, false})
    for (LaneInput input : {LaneInput::kMapped, LaneInput::kCopy, LaneInput::kDevice}) {
      const std::string mode = std::string(graph ? "graph" : "direct") + "/" + lane_input_name(input);
      SCOPED_TRACE(mode);
      std::vector<cuda::DeviceBuffer> device_frames;
      auto built = test::build_test_pipeline(engine, &device_frames, kLanes, kW, kH, kK, input, graph);
      ASSERT_TRUE(built.is_ok()) << built.status().to_string();
      Pipeline& p = **built;
      for (int f = 0; f < kFrames; ++f) {
        auto lane = p.try_acquire();
        ASSERT_TRUE(lane);
        const auto frame = random_frame(kW, kH, test::seed_for("lanes-hwc8-port-" + std::to_string(f)));
        if (input == LaneInput::kDevice) {
          ASSERT_EQ(::ws::test::upload_sync(const_cast<void*>(p.device_input(*lane)), frame.data(), frame.size()), cudaSuccess);
        } else {
          auto slot = p.input(*lane);
          ASSERT_EQ(slot.size(), frame.size());
          std::memcpy(slot.data(), frame.data(), slot.size());
        }
        ASSERT_TRUE(p.submit(*lane, kW, kH).is_ok());
        auto top = p.wait(*lane);
        ASSERT_TRUE(top.is_ok()) << top.status().to_string();
        const CpuFrame ref = cpu_reference(*cpu, frame, kW, kH, kK);
        const std::string what = mode + " frame " + std::to_string(f);
        excused += test::expect_topk_matches(*top, ref, rel, what);
        std::vector<float> logits(size_t(p.classes()));
        ASSERT_TRUE(p.copy_logits(*lane, logits).is_ok());
        worst_logit = std::max(worst_logit, test::expect_logits_close(logits, ref.logits, rel, what));
        ASSERT_TRUE(p.release(*lane).is_ok());
      }
    }
  std::printf("lanes hwc8-port resnet_like fp16: %d frames, worst logit rel err %.3g, near-tie rank swaps %d\n", 6 * kFrames,
              worst_logit, excused);
}

// A float32 engine cannot take a kHWC8 input from a lane (the NHWC8 preprocess writes fp16 only): with the port in
// an fp32 build (channels-last forced, so the stem is padded and ported), Pipeline::build refuses it with kUnsupported
// naming the input and the fix.
TEST(LaneHwc8Port, Float32Hwc8InputIsRefused) {
  WS_REQUIRE_LANES_GPU();
  auto g = ir::import_onnx_bytes(test::resnet_like_model_bytes(), "resnet_like.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  CudaBuildOptions bo;
  bo.precision = Precision::kFloat32;
  bo.layout = Layout::kNhwc;
  bo.hwc8_input = bo.hwc8_input_port = true;
  auto e = CudaEngine::build(std::move(g).value(), bo);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  ASSERT_EQ((*e)->input_desc(0).format, TensorFormat::kHWC8);
  PipelineOptions o;
  o.lanes = 1;
  o.src_width = 32;
  o.src_height = 32;
  auto p = Pipeline::build(std::move(e).value(), o);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(p.status().message().find("'image'"), std::string::npos) << p.status().to_string();
  EXPECT_NE(p.status().message().find("kHWC8 in float16 only"), std::string::npos) << p.status().to_string();
}

// Graph replay and direct enqueue run the same kernels with the same arguments: bitwise-equal logits.
TEST(LaneGraphVsDirect, BitwiseEqualLogits) {
  for (Precision precision : {Precision::kFloat32, Precision::kFloat16}) {
    SCOPED_TRACE(precision_name(precision));
    WS_DEMO_ENGINE_OR_FAIL(engine, precision);
    constexpr int64_t kW = 128, kH = 96;
    PipelineOptions o;
    o.lanes = 1;
    o.src_width = kW;
    o.src_height = kH;
    o.k = 10;
    auto g = Pipeline::build(engine, o);
    o.use_cuda_graph = false;
    auto d = Pipeline::build(engine, o);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    ASSERT_TRUE(d.is_ok()) << d.status().to_string();
    for (int f = 0; f < 4; ++f) {
      const auto frame = random_frame(kW, kH, test::seed_for("graph-vs-direct-" + std::to_string(f)));
      std::vector<float> logits[2];
      std::vector<TopKEntry> top[2];
      int i = 0;
      for (Pipeline* p : {g->get(), d->get()}) {
        auto lane = p->try_acquire();
        ASSERT_TRUE(lane);
        std::memcpy(p->input(*lane).data(), frame.data(), frame.size());
        ASSERT_TRUE(p->submit(*lane, kW, kH).is_ok());
        auto t = p->wait(*lane);
        ASSERT_TRUE(t.is_ok()) << t.status().to_string();
        top[i].assign(t->begin(), t->end());
        logits[i].resize(size_t(p->classes()));
        ASSERT_TRUE(p->copy_logits(*lane, logits[i]).is_ok());
        ASSERT_TRUE(p->release(*lane).is_ok());
        ++i;
      }
      EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * 4), 0) << "frame " << f;
      EXPECT_EQ(std::memcmp(top[0].data(), top[1].data(), top[0].size() * sizeof(TopKEntry)), 0) << "frame " << f;
    }
  }
}

// C10 class (mapped memory): one lane, frames A and B alternating in a pseudo-random pattern through the
// same mapped input slot; every result read from the mapped result slot right after wait() must be the
// one of the frame just written — a stale input read or a stale result read shows as the other frame's
// classes. Expected results are each frame's first GPU result (deterministic) and agree with the CPU.
// Armed launch (PipelineOptions::armed_launch) is the sharpest case: the frame is enqueued at acquire, before the
// producer writes the slot, and must still read the bytes written before submit rang the doorbell.
TEST(LaneMappedOrdering, AlternatingFramesNeverStale) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  CpuEngine* cpu = test::demo_cpu_engine();
  ASSERT_TRUE(cpu);
  constexpr int64_t kW = 64, kH = 64;
  constexpr int kK = 10;  // the full ranking: two different frames differ somewhere in it
  std::vector<uint8_t> a, b;
  CpuFrame ra, rb;
  bool differ = false;
  // Two frames whose full CPU rankings differ (random frames; a few tries at most).
  for (int attempt = 0; attempt < 64; ++attempt) {
    a = random_frame(kW, kH, test::seed_for("c10-a-" + std::to_string(attempt)));
    b = std::vector<uint8_t>(a.size());
    for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(255 - a[i] / 2);  // a darker negative
    ra = cpu_reference(*cpu, a, kW, kH, kK);
    rb = cpu_reference(*cpu, b, kW, kH, kK);
    differ = false;
    for (int i = 0; i < kK; ++i) differ |= ra.top[size_t(i)].index != rb.top[size_t(i)].index;
    if (differ) break;
  }
  ASSERT_TRUE(differ) << "no pair of frames with different CPU rankings found";
  for (const char* mode : {"graph", "direct", "armed"}) {
    SCOPED_TRACE(mode);
    const bool graph = std::string(mode) != "direct";
    PipelineOptions o;
    o.lanes = 1;
    o.src_width = kW;
    o.src_height = kH;
    o.k = kK;
    o.use_cuda_graph = graph;
    o.armed_launch = std::string(mode) == "armed";
    auto built = Pipeline::build(engine, o);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    Pipeline& p = **built;
    std::vector<TopKEntry> expect[2];
    std::mt19937 rng(uint32_t(test::seed_for("c10-pattern")));
    int stale = 0, frames = 0;
    // Small form (compute-sanitizer): 64 frames — under racecheck 2 x 2000 frames ran past a 150 s call (device
    // run 30 of 2026-12-02); WS_LANES_C10_FRAMES=<n> sets any count.
    int n = test::small_gpu_tests() ? 64 : 2000;
    if (const char* e = std::getenv("WS_LANES_C10_FRAMES"); e && *e) n = std::max(4, std::atoi(e));
    for (int f = 0; f < n; ++f) {
      const int which = f < 2 ? f : int(rng() & 1);
      auto lane = p.try_acquire();
      ASSERT_TRUE(lane);
      const auto& src = which == 0 ? a : b;
      std::memcpy(p.input(*lane).data(), src.data(), src.size());
      ASSERT_TRUE(p.submit(*lane, kW, kH).is_ok());
      auto top = p.wait(*lane);
      ASSERT_TRUE(top.is_ok()) << top.status().to_string();
      if (f < 2) {
        expect[which].assign(top->begin(), top->end());
        test::expect_topk_matches(*top, which == 0 ? ra : rb, 1e-4, which == 0 ? "frame A" : "frame B");
      } else if (std::memcmp(top->data(), expect[which].data(), size_t(kK) * sizeof(TopKEntry)) != 0) {
        if (++stale <= 5) ADD_FAILURE() << "frame " << f << " (" << (which ? "B" : "A") << "): result differs from that frame's";
      }
      ASSERT_TRUE(p.release(*lane).is_ok());
      ++frames;
    }
    EXPECT_EQ(stale, 0);
    EXPECT_EQ(p.armed_failures(), 0u);
    std::printf("C10 ordering (%s): %d alternating frames through one mapped slot, %d stale results\n", mode, frames, stale);
  }
}

// Armed launch runs the lane's captured graph, only enqueued earlier: logits bitwise equal to the plain graph's, in every
// input mode; a lane released unsubmitted stays armed and its next frame is still right; a pipeline destroyed with an
// armed lane returns (its destructor rings the doorbell before it drains the stream).
TEST(LaneArmedLaunch, BitwiseEqualToPlainGraph) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat16);
  constexpr int64_t kW = 96, kH = 80;
  for (LaneInput input : {LaneInput::kMapped, LaneInput::kCopy, LaneInput::kDevice}) {
    SCOPED_TRACE(lane_input_name(input));
    std::vector<cuda::DeviceBuffer> frames_plain, frames_armed;
    PipelineOptions o;
    ASSERT_TRUE(test::lane_test_options(&o, &frames_plain, 2, kW, kH, 5, input, true).is_ok());
    auto plain = Pipeline::build(engine, o);
    o.device_inputs.clear();
    ASSERT_TRUE(test::lane_test_options(&o, &frames_armed, 2, kW, kH, 5, input, true).is_ok());
    o.armed_launch = true;
    auto armed = Pipeline::build(engine, o);
    ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
    ASSERT_TRUE(armed.is_ok()) << armed.status().to_string();
    for (int f = 0; f < 6; ++f) {
      const uint64_t seed = test::seed_for("armed-" + std::to_string(f));
      const auto frame = random_frame(kW, kH, seed);
      std::vector<float> logits[2];
      int i = 0;
      for (Pipeline* p : {plain->get(), armed->get()}) {
        // A device frame is written before the acquire: once a lane is armed, a copy on another stream could share the
        // armed stream's hardware queue and wait for the submit (PipelineOptions::armed_launch, caveats).
        if (input == LaneInput::kDevice) {
          auto& frames = p == plain->get() ? frames_plain : frames_armed;
          ASSERT_TRUE(cuda::copy_to_device(frames[0].get(), frame.data(), frame.size()).is_ok());
        }
        auto lane = p->acquire(0);
        ASSERT_TRUE(lane.is_ok()) << lane.status().to_string();
        if (f == 3 && p == armed->get()) {  // abandoned before submit: release rings it (one unread frame), acquire arms again
          ASSERT_TRUE(p->release(*lane).is_ok());
          lane = p->acquire(0);
          ASSERT_TRUE(lane.is_ok()) << lane.status().to_string();
        }
        if (input != LaneInput::kDevice) std::memcpy(p->input(*lane).data(), frame.data(), frame.size());
        ASSERT_TRUE(p->submit(*lane, kW, kH).is_ok());
        auto t = p->wait(*lane);
        ASSERT_TRUE(t.is_ok()) << t.status().to_string();
        logits[i].resize(size_t(p->classes()));
        ASSERT_TRUE(p->copy_logits(*lane, logits[i]).is_ok());
        auto ms = p->gpu_time_ms(*lane);
        ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
        EXPECT_GT(*ms, 0.0f);
        ASSERT_TRUE(p->release(*lane).is_ok());
        ++i;
      }
      EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * 4), 0) << "frame " << f << " seed " << seed;
    }
    EXPECT_EQ((*armed)->armed_failures(), 0u);
    // The first CUDA call of a fresh thread may be the arm (a producer thread that only acquires and submits): the
    // driver's stream wait needs the context current on that thread.
    {  // lane 1 of both pipelines still holds its build-time bytes (zeros): the same logits, bit for bit
      std::vector<float> fresh(size_t((*armed)->classes())), ref(size_t((*plain)->classes()));
      bool ok = false;
      std::thread t([&] {
        auto lane = (*armed)->acquire(1);
        if (!lane.is_ok() || !(*armed)->submit(*lane, kW, kH).is_ok() || !(*armed)->wait(*lane).is_ok()) return;
        ok = (*armed)->copy_logits(*lane, fresh).is_ok() && (*armed)->release(*lane).is_ok();
      });
      t.join();
      ASSERT_TRUE(ok);
      EXPECT_EQ((*armed)->armed_failures(), 0u) << "the arm on a fresh thread failed (submit launched it plain)";
      auto lane = (*plain)->acquire(1);
      ASSERT_TRUE(lane.is_ok()) << lane.status().to_string();
      ASSERT_TRUE((*plain)->submit(*lane, kW, kH).is_ok());
      ASSERT_TRUE((*plain)->wait(*lane).is_ok());
      ASSERT_TRUE((*plain)->copy_logits(*lane, ref).is_ok());
      ASSERT_TRUE((*plain)->release(*lane).is_ok());
      EXPECT_EQ(std::memcmp(fresh.data(), ref.data(), ref.size() * 4), 0) << "lane 1, zero frame, armed on a fresh thread";
    }
    // Leave one lane acquired (armed, never submitted) and one released unsubmitted (rung by release): the destructor
    // must ring the first and return.
    auto a0 = (*armed)->try_acquire();
    auto a1 = (*armed)->try_acquire();
    ASSERT_TRUE(a0 && a1);
    ASSERT_TRUE((*armed)->release(*a1).is_ok());
    armed->reset();
  }
}

TEST(LaneArmedLaunch, OptionErrors) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  PipelineOptions o;
  o.lanes = 1;
  o.src_width = 64;
  o.src_height = 48;
  o.armed_launch = true;
  o.use_cuda_graph = false;
  auto direct = Pipeline::build(engine, o);
  ASSERT_FALSE(direct.is_ok());
  EXPECT_EQ(direct.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(direct.status().message().find("use_cuda_graph"), std::string::npos) << direct.status().to_string();
  o.use_cuda_graph = true;
  o.lanes = 5;
  auto many = Pipeline::build(engine, o);
  ASSERT_FALSE(many.is_ok());
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("at most 4"), std::string::npos) << many.status().to_string();
}

}  // namespace
}  // namespace ws
