// Lane state machine (Free → Acquired → Submitted → Completed → Free), backpressure and build-option
// errors of ws::Pipeline (include/warpstream/lanes.h), on the demo model. Every refused call must
// return kFailedPrecondition (or the documented code) and change nothing: the lane still works after.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <thread>

#include "cuda/cuda_util.h"
#include "lanes_pipeline_support.h"

namespace ws {
namespace {

constexpr int64_t kW = 45, kH = 37;

std::unique_ptr<Pipeline> make_pipeline(std::shared_ptr<CudaEngine> engine, int lanes, bool graph = true,
                                        LaneInput input = LaneInput::kMapped) {
  PipelineOptions o;
  o.lanes = lanes;
  o.src_width = kW;
  o.src_height = kH;
  o.k = 3;
  o.use_cuda_graph = graph;
  o.input = input;
  auto p = Pipeline::build(std::move(engine), o);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p ? std::move(p).value() : nullptr;
}

/// One full, valid cycle on `lane` (fills the slot with `fill`).
void run_cycle(Pipeline& p, Lane lane, uint8_t fill) {
  auto in = p.input(lane);
  ASSERT_EQ(in.size(), size_t(kW * kH * 3));
  std::fill(in.begin(), in.end(), fill);
  ASSERT_TRUE(p.submit(lane, kW, kH).is_ok());
  auto top = p.wait(lane);
  ASSERT_TRUE(top.is_ok()) << top.status().to_string();
  ASSERT_EQ(top->size(), 3u);
  ASSERT_TRUE(p.release(lane).is_ok());
}

TEST(LaneStateMachine, HappyPathAndStates) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  auto p = make_pipeline(engine, 2);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->lane_count(), 2u);
  auto lane = p->try_acquire();
  ASSERT_TRUE(lane);
  EXPECT_EQ(p->state(lane->index), LaneState::kAcquired);
  std::fill(p->input(*lane).begin(), p->input(*lane).end(), uint8_t{7});
  ASSERT_TRUE(p->submit(*lane, kW, kH).is_ok());
  EXPECT_EQ(p->state(lane->index), LaneState::kSubmitted);
  auto top = p->wait(*lane);
  ASSERT_TRUE(top.is_ok()) << top.status().to_string();
  EXPECT_EQ(p->state(lane->index), LaneState::kCompleted);
  // Waiting again on a Completed lane returns the same pairs.
  auto again = p->wait(*lane);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->data(), top->data());
  auto ms = p->gpu_time_ms(*lane);
  ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0f);
  ASSERT_TRUE(p->release(*lane).is_ok());
  EXPECT_EQ(p->state(lane->index), LaneState::kFree);
}

TEST(LaneStateMachine, SubmitOnLaneNotAcquired) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  auto p = make_pipeline(engine, 2);
  ASSERT_TRUE(p);
  // A handle for a lane nobody acquired.
  Status s = p->submit(Lane{0, 0}, kW, kH);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  EXPECT_EQ(p->state(0), LaneState::kFree);
  // A lane index that does not exist.
  s = p->submit(Lane{7, 1}, kW, kH);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  // Submitting twice (the lane is Submitted, not Acquired).
  auto lane = p->try_acquire();
  ASSERT_TRUE(lane);
  ASSERT_TRUE(p->submit(*lane, kW, kH).is_ok());
  s = p->submit(*lane, kW, kH);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  EXPECT_NE(s.message().find("submitted"), std::string::npos) << s.message();
  ASSERT_TRUE(p->wait(*lane).is_ok());
  // Submitting a Completed lane (not released, not re-acquired).
  s = p->submit(*lane, kW, kH);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  ASSERT_TRUE(p->release(*lane).is_ok());
  // A released handle.
  s = p->submit(*lane, kW, kH);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  EXPECT_TRUE(p->input(*lane).empty());
}

TEST(LaneStateMachine, AcquireReuseOfBusyLane) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  auto p = make_pipeline(engine, 2);
  ASSERT_TRUE(p);
  auto lane = p->acquire(1);
  ASSERT_TRUE(lane.is_ok()) << lane.status().to_string();
  EXPECT_EQ(lane->index, 1u);
  auto busy = p->acquire(1);  // Acquired
  EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition) << busy.status().to_string();
  ASSERT_TRUE(p->submit(*lane, kW, kH).is_ok());
  busy = p->acquire(1);  // Submitted
  EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition) << busy.status().to_string();
  ASSERT_TRUE(p->wait(*lane).is_ok());
  busy = p->acquire(1);  // Completed
  EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition) << busy.status().to_string();
  EXPECT_EQ(p->acquire(5).status().code(), StatusCode::kInvalidArgument);
  // try_acquire skips the busy lane.
  auto other = p->try_acquire();
  ASSERT_TRUE(other);
  EXPECT_EQ(other->index, 0u);
  ASSERT_TRUE(p->release(*lane).is_ok());
  ASSERT_TRUE(p->release(*other).is_ok());
  // After release the lane is acquirable again, and the old handle is stale.
  auto fresh = p->acquire(1);
  ASSERT_TRUE(fresh.is_ok());
  EXPECT_NE(fresh->generation, lane->generation);
  Status s = p->submit(*lane, kW, kH);  // stale handle of the same lane, now re-acquired
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  EXPECT_EQ(p->release(*lane).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p->state(1), LaneState::kAcquired);  // the stale calls changed nothing
  run_cycle(*p, *fresh, 3);
}

TEST(LaneStateMachine, WaitOnLaneNeverSubmitted) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  auto p = make_pipeline(engine, 1);
  ASSERT_TRUE(p);
  auto w = p->wait(Lane{0, 0});  // Free
  EXPECT_EQ(w.status().code(), StatusCode::kFailedPrecondition) << w.status().to_string();
  auto lane = p->try_acquire();
  ASSERT_TRUE(lane);
  w = p->wait(*lane);  // Acquired, never submitted
  EXPECT_EQ(w.status().code(), StatusCode::kFailedPrecondition) << w.status().to_string();
  EXPECT_NE(w.status().message().find("acquired"), std::string::npos) << w.status().message();
  EXPECT_EQ(p->gpu_time_ms(*lane).status().code(), StatusCode::kFailedPrecondition);
  std::vector<float> logits(size_t(p->classes()));
  EXPECT_EQ(p->copy_logits(*lane, logits).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p->state(0), LaneState::kAcquired);
  run_cycle(*p, *lane, 9);
}

TEST(LaneStateMachine, ReleaseTwice) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  auto p = make_pipeline(engine, 1);
  ASSERT_TRUE(p);
  auto lane = p->try_acquire();
  ASSERT_TRUE(lane);
  ASSERT_TRUE(p->submit(*lane, kW, kH).is_ok());
  // Release while Submitted: refused (wait first).
  Status s = p->release(*lane);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  ASSERT_TRUE(p->wait(*lane).is_ok());
  ASSERT_TRUE(p->release(*lane).is_ok());
  s = p->release(*lane);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  // Abandoning an acquired lane before submit is allowed (Acquired → Free), once.
  auto l2 = p->try_acquire();
  ASSERT_TRUE(l2);
  EXPECT_TRUE(p->release(*l2).is_ok());
  EXPECT_EQ(p->release(*l2).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p->state(0), LaneState::kFree);
}

TEST(LaneStateMachine, FrameSizeErrors) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  for (bool graph : {true, false}) {
    SCOPED_TRACE(graph ? "graph" : "direct");
    auto p = make_pipeline(engine, 1, graph);
    ASSERT_TRUE(p);
    auto lane = p->try_acquire();
    ASSERT_TRUE(lane);
    Status s = p->submit(*lane, kW + 1, kH);  // larger than the slot
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
    s = p->submit(*lane, 0, kH);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    s = p->submit(*lane, kW - 4, kH - 2);  // smaller: graph mode refuses, direct runs it
    if (graph) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      EXPECT_EQ(p->state(0), LaneState::kAcquired);
      ASSERT_TRUE(p->release(*lane).is_ok());
    } else {
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_TRUE(p->wait(*lane).is_ok());
      ASSERT_TRUE(p->release(*lane).is_ok());
    }
  }
}

TEST(LaneBackpressure, AllLanesBusy) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  constexpr int kLanes = 3;
  auto p = make_pipeline(engine, kLanes);
  ASSERT_TRUE(p);
  std::vector<Lane> lanes;
  std::set<uint32_t> indices;
  for (int i = 0; i < kLanes; ++i) {
    auto l = p->try_acquire();
    ASSERT_TRUE(l) << "lane " << i;
    lanes.push_back(*l);
    indices.insert(l->index);
  }
  EXPECT_EQ(indices.size(), size_t(kLanes));
  EXPECT_FALSE(p->try_acquire()) << "every lane acquired: try_acquire must return nothing";
  for (auto& l : lanes) ASSERT_TRUE(p->submit(l, kW, kH).is_ok());
  EXPECT_FALSE(p->try_acquire()) << "every lane submitted";
  ASSERT_TRUE(p->wait(lanes[1]).is_ok());
  EXPECT_FALSE(p->try_acquire()) << "a Completed lane is still busy until released";
  ASSERT_TRUE(p->release(lanes[1]).is_ok());
  auto again = p->try_acquire();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->index, lanes[1].index);
  EXPECT_FALSE(p->try_acquire());
  ASSERT_TRUE(p->release(*again).is_ok());
  for (size_t i : {size_t(0), size_t(2)}) {
    ASSERT_TRUE(p->wait(lanes[i]).is_ok());
    ASSERT_TRUE(p->release(lanes[i]).is_ok());
  }
  for (int i = 0; i < kLanes; ++i) EXPECT_EQ(p->state(size_t(i)), LaneState::kFree);
}

// Producers on several threads: try_acquire is lock-free and never hands one lane to two owners.
TEST(LaneBackpressure, ConcurrentProducers) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  constexpr int kLanes = 2, kThreads = 4;
  int kFrames = 200;  // WS_LANES_PRODUCER_FRAMES=<n> shortens it (sanitizer runs)
  if (const char* e = std::getenv("WS_LANES_PRODUCER_FRAMES"); e && *e) kFrames = std::max(1, std::atoi(e));
  auto p = make_pipeline(engine, kLanes);
  ASSERT_TRUE(p);
  std::atomic<int> owners[kLanes] = {};
  std::atomic<int> errors{0}, done{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int frames = 0;
      while (frames < kFrames) {
        auto lane = p->try_acquire();
        if (!lane) { refused.fetch_add(1); std::this_thread::yield(); continue; }
        if (owners[lane->index].fetch_add(1) != 0) errors.fetch_add(1);
        auto in = p->input(*lane);
        std::fill(in.begin(), in.end(), uint8_t(t));
        if (!p->submit(*lane, kW, kH).is_ok()) errors.fetch_add(1);
        if (!p->wait(*lane).is_ok()) errors.fetch_add(1);
        owners[lane->index].fetch_sub(1);
        if (!p->release(*lane).is_ok()) errors.fetch_add(1);
        ++frames;
      }
      done.fetch_add(frames);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(done.load(), kThreads * kFrames);
  std::printf("lanes: %d producers, %d lanes, %d frames, %d refused try_acquire (backpressure)\n", kThreads, kLanes,
              done.load(), refused.load());
}

TEST(PipelineBuild, OptionErrors) {
  WS_DEMO_ENGINE_OR_FAIL(engine, Precision::kFloat32);
  PipelineOptions good;
  good.lanes = 1;
  good.src_width = kW;
  good.src_height = kH;
  good.k = 3;
  auto expect_code = [&](PipelineOptions o, StatusCode code, const char* what) {
    auto p = Pipeline::build(engine, o);
    EXPECT_EQ(p.status().code(), code) << what << ": " << p.status().to_string();
  };
  { auto o = good; o.lanes = 0; expect_code(o, StatusCode::kInvalidArgument, "lanes 0"); }
  { auto o = good; o.src_width = 0; expect_code(o, StatusCode::kInvalidArgument, "width 0"); }
  { auto o = good; o.k = 0; expect_code(o, StatusCode::kInvalidArgument, "k 0"); }
  { auto o = good; o.k = 11; expect_code(o, StatusCode::kInvalidArgument, "k > classes (10)"); }
  { auto o = good; o.k = 33; expect_code(o, StatusCode::kInvalidArgument, "k > 32"); }
  { auto o = good; o.input = LaneInput::kDevice; expect_code(o, StatusCode::kInvalidArgument, "device without pointers"); }
  { auto o = good; o.input = LaneInput::kDevice; o.device_inputs = {nullptr}; expect_code(o, StatusCode::kInvalidArgument, "null device pointer"); }
  { auto o = good; o.device_inputs = {&good}; expect_code(o, StatusCode::kInvalidArgument, "pointers without device mode"); }
  EXPECT_EQ(Pipeline::build(nullptr, good).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_lane_input("zero-copy").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*parse_lane_input("copy"), LaneInput::kCopy);
  auto ok = Pipeline::build(engine, good);
  EXPECT_TRUE(ok.is_ok()) << ok.status().to_string();
}

}  // namespace
}  // namespace ws
