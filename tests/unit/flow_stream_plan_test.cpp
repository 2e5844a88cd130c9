// CPU tests of the streaming ring planner (flow/host/stream_plan.h): ring arithmetic, layout, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "flow/host/stream_plan.h"

namespace ws::flow {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(FlowRing, SlotIsLayerModS) {
  for (int s = 1; s <= 5; ++s)
    for (int i = 0; i < 40; ++i) {
      EXPECT_EQ(ring_slot(i, s), i % s);
      EXPECT_GE(ring_slot(i, s), 0);
      EXPECT_LT(ring_slot(i, s), s);
    }
}

TEST(FlowRing, PreviousUserSharesTheSlot) {
  for (int s = 1; s <= 4; ++s)
    for (int i = 0; i < 20; ++i) {
      int p = ring_previous_user(i, s);
      if (i < s) {
        EXPECT_EQ(p, -1) << "layer " << i << " S " << s;
      } else {
        EXPECT_EQ(p, i - s);
        EXPECT_EQ(ring_slot(p, s), ring_slot(i, s));
        // No layer strictly between p and i uses the same slot: the slot is reused as late as possible.
        for (int q = p + 1; q < i; ++q) EXPECT_NE(ring_slot(q, s), ring_slot(i, s));
      }
    }
}

TEST(FlowRing, PrefetchWindowHoldsDistinctSlots) {
  // While layer i computes, layers i .. i+S-1 occupy the ring: they must all be in different slots.
  for (int s = 1; s <= 4; ++s)
    for (int l = 1; l <= 9; ++l)
      for (int i = 0; i < l; ++i) {
        int last = ring_prefetch_limit(i, s, l);
        EXPECT_EQ(last, std::min(i + s - 1, l - 1));
        std::set<int> used;
        for (int j = i; j <= last; ++j) used.insert(ring_slot(j, s));
        EXPECT_EQ(static_cast<int>(used.size()), last - i + 1);
      }
  EXPECT_EQ(ring_prefetch_limit(0, 1, 5), 0);  // S = 1: nothing ahead (sequential)
  EXPECT_EQ(ring_prefetch_limit(2, 3, 10), 4); // triple buffering: two layers ahead
}

TEST(FlowRing, RoundUp) {
  EXPECT_EQ(round_up(0, 256), 0u);
  EXPECT_EQ(round_up(1, 256), 256u);
  EXPECT_EQ(round_up(256, 256), 256u);
  EXPECT_EQ(round_up(257, 256), 512u);
  EXPECT_EQ(round_up(7, 1), 7u);
}

TEST(FlowStreamPlan, TripleBufferLayout) {
  std::vector<uint64_t> layers = {64 * kMiB, 32 * kMiB, 64 * kMiB, 10 * kMiB + 1, 64 * kMiB};
  auto r = build_stream_plan(layers, 1024 * kMiB, 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const StreamPlan& p = *r;
  EXPECT_EQ(p.slots, 3);
  EXPECT_EQ(p.layers(), 5);
  EXPECT_EQ(p.largest_layer_bytes, 64 * kMiB);
  EXPECT_EQ(p.slot_bytes, 64 * kMiB);
  EXPECT_EQ(p.ring_bytes, 3 * 64 * kMiB);
  EXPECT_EQ(p.peak_device_bytes, 3 * 64 * kMiB);
  EXPECT_EQ(p.budget_bytes, 1024 * kMiB);
  EXPECT_EQ(p.total_layer_bytes, 64 * kMiB + 32 * kMiB + 64 * kMiB + 10 * kMiB + 1 + 64 * kMiB);
  ASSERT_EQ(p.slot_offsets.size(), 3u);
  EXPECT_EQ(p.slot_offsets[0], 0u);
  EXPECT_EQ(p.slot_offsets[1], 64 * kMiB);
  EXPECT_EQ(p.slot_offsets[2], 128 * kMiB);
  EXPECT_EQ(p.layer_slot, (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_EQ(p.layer_offset(4), 64 * kMiB);
  for (int i = 0; i < p.layers(); ++i) {
    EXPECT_EQ(p.layer_offset(i) % p.alignment, 0u);
    EXPECT_LE(p.layer_offset(i) + p.layer_bytes[static_cast<size_t>(i)], p.ring_bytes);
  }
  EXPECT_NE(p.describe().find("S=3"), std::string::npos) << p.describe();
}

TEST(FlowStreamPlan, SlotsRoundedToAlignment) {
  auto r = build_stream_plan({1000, 3000, 17}, 1 << 20, 2);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->largest_layer_bytes, 3000u);
  EXPECT_EQ(r->slot_bytes, 3072u);  // 12 x 256
  EXPECT_EQ(r->slot_offsets[1], 3072u);
  EXPECT_EQ(r->ring_bytes, 6144u);
  auto r1 = build_stream_plan({1000, 3000}, 1 << 20, 2, 1);
  ASSERT_TRUE(r1.is_ok());
  EXPECT_EQ(r1->slot_bytes, 3000u);
}

TEST(FlowStreamPlan, ExactBudgetAccepted) {
  auto r = build_stream_plan({4 * kMiB, 4 * kMiB}, 8 * kMiB, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->ring_bytes, 8 * kMiB);
}

TEST(FlowStreamPlan, SingleSlotAndMoreSlotsThanLayers) {
  auto one = build_stream_plan({100, 200, 300}, 1 << 20, 1);
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one->layer_slot, (std::vector<int>{0, 0, 0}));
  auto many = build_stream_plan({100}, 1 << 20, 4);
  ASSERT_TRUE(many.is_ok());
  EXPECT_EQ(many->layer_slot, (std::vector<int>{0}));
  EXPECT_EQ(many->ring_bytes, 4u * 256u);
}

TEST(FlowStreamPlan, RefusesSmallBudgetStatingBothNumbers) {
  // S x largest = 3 x 64 MiB = 201326592 bytes; budget 128 MiB = 134217728 bytes.
  auto r = build_stream_plan({16 * kMiB, 64 * kMiB, 8 * kMiB}, 128 * kMiB, 3);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("134217728"), std::string::npos) << m;  // the budget
  EXPECT_NE(m.find("201326592"), std::string::npos) << m;  // S x largest layer
  EXPECT_NE(m.find("128.00 MiB"), std::string::npos) << m;
  EXPECT_NE(m.find("192.00 MiB"), std::string::npos) << m;
  EXPECT_NE(m.find("layer 1"), std::string::npos) << m;  // which layer is the largest
  // One byte short is refused too.
  auto r2 = build_stream_plan({4 * kMiB, 4 * kMiB}, 8 * kMiB - 1, 2);
  ASSERT_FALSE(r2.is_ok());
  EXPECT_EQ(r2.status().code(), StatusCode::kResourceExhausted);
}

TEST(FlowStreamPlan, RefusesInvalidArguments) {
  auto empty = build_stream_plan({}, 1 << 30, 2);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  for (int s : {0, -1}) {
    auto r = build_stream_plan({1024}, 1 << 30, s);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(">= 1"), std::string::npos) << r.status().message();
  }
  auto zero = build_stream_plan({1024, 0, 5}, 1 << 30, 2);
  ASSERT_FALSE(zero.is_ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("layer 1"), std::string::npos) << zero.status().message();

  auto align = build_stream_plan({1024}, 1 << 30, 2, 100);
  ASSERT_FALSE(align.is_ok());
  EXPECT_EQ(align.status().code(), StatusCode::kInvalidArgument);
}

TEST(FlowStreamPlan, OverflowRefused) {
  auto r = build_stream_plan({UINT64_MAX / 2}, UINT64_MAX, 3, 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(FlowFormat, Bytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64 * kMiB), "64.00 MiB");
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

}  // namespace
}  // namespace ws::flow
