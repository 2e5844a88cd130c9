// GPU Top-K (src/kernels/topk) vs the CPU reference ws::ref::topk: exact equality of indices and scores
// (bitwise: NaN == NaN with the same payload, −0 != +0) on random logits with planted ties, NaNs, ±inf and
// signed zeros, for 10, 1000 and 21843 classes and K in {1, 5, 32} (K > classes → error), plus degenerate
// vectors (all NaN, all equal, NaN/−inf mixes). Results are written into mapped pinned memory, poisoned
// with 0xFF beforehand, and read after the stream has synchronised; entries past K must stay poisoned.
// Random logits are fresh per run; the seed is printed (WS_SEED=<n> replays).
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/topk/topk.h"
#include "lanes_gpu_support.h"
#include "reference/reference.h"

namespace ws {
namespace {

static_assert(sizeof(kernels::TopKPair) == sizeof(ref::TopKEntry));
static_assert(offsetof(kernels::TopKPair, index) == offsetof(ref::TopKEntry, index));
static_assert(kernels::kTopKMax == ref::kMaxTopK);

constexpr float kInf = std::numeric_limits<float>::infinity();

float nan_with_payload(uint32_t payload, bool negative) {
  uint32_t b = 0x7FC00000u | (payload & 0x003FFFFFu) | (negative ? 0x80000000u : 0u);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// Random logits with planted structure: ties at the top and in the middle, NaNs (several payloads and
/// signs), ±inf, −0/+0 pairs.
std::vector<float> planted_logits(int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(classes));
  for (float& v : x) v = normal(rng);
  auto pick = [&] { return size_t(rng() % uint64_t(classes)); };
  const size_t nplant = std::max<size_t>(1, size_t(classes) / 50);
  // ties with the current maximum (several copies) and with a middle value
  float mx = x[0];
  for (float v : x) mx = std::max(mx, v);
  for (size_t i = 0; i < std::min<size_t>(6, nplant + 2); ++i) x[pick()] = mx;
  const float mid = x[pick()];
  for (size_t i = 0; i < nplant; ++i) x[pick()] = mid;
  // NaNs, infinities, signed zeros
  for (size_t i = 0; i < nplant; ++i) x[pick()] = nan_with_payload(uint32_t(rng()), rng() & 1);
  x[pick()] = -kInf;
  x[pick()] = -kInf;
  if (rng() & 1) x[pick()] = kInf;
  x[pick()] = 0.0f;
  x[pick()] = -0.0f;
  return x;
}

/// Runs the GPU Top-K into mapped memory and compares with the reference; returns a one-line summary.
void check_topk(const std::vector<float>& logits, int k, const std::string& label) {
  SCOPED_TRACE(label + " K=" + std::to_string(k));
  const int64_t classes = int64_t(logits.size());
  std::vector<ref::TopKEntry> want(static_cast<size_t>(k));
  const Status rs = ref::topk(logits.data(), classes, k, want.data());
  ASSERT_TRUE(rs.is_ok()) << rs.to_string();

  auto dlogits = cuda::DeviceBuffer::allocate(logits.size() * sizeof(float));
  ASSERT_TRUE(dlogits.is_ok());
  ASSERT_EQ(::ws::test::upload_sync(dlogits->get(), logits.data(), logits.size() * 4), cudaSuccess);
  auto result = cuda::PinnedBuffer::allocate((kernels::kTopKMax + 1) * sizeof(kernels::TopKPair), cudaHostAllocMapped);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::memset(result->get(), 0xFF, result->bytes());  // poison: NaN score, index -1
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream.is_ok());
  const Status st = kernels::topk(dlogits->as<const float>(), classes, k,
                                  static_cast<kernels::TopKPair*>(result->device_ptr()), stream->get());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);

  const auto* got = result->as<const kernels::TopKPair>();
  for (int i = 0; i < k; ++i) {
    uint32_t gb, wb;
    std::memcpy(&gb, &got[i].score, 4);
    std::memcpy(&wb, &want[i].score, 4);
    EXPECT_EQ(got[i].index, want[i].index) << "rank " << i;
    EXPECT_EQ(gb, wb) << "rank " << i << ": score " << got[i].score << " vs " << want[i].score;
    if (got[i].index != want[i].index || gb != wb) break;
  }
  const auto* raw = static_cast<const uint8_t*>(result->get());
  for (size_t b = size_t(k) * sizeof(kernels::TopKPair); b < result->bytes(); ++b)
    ASSERT_EQ(raw[b], 0xFF) << "wrote past K at byte " << b;
}

TEST(TopKGpu, RandomPlantedLogitsMatchReferenceExactly) {
  WS_REQUIRE_LANES_GPU();
  int checked = 0;
  for (int64_t classes : {10, 1000, 21843})
    for (int k : {1, 5, 32}) {
      if (k > classes) continue;  // covered by InvalidArguments
      for (int trial = 0; trial < 4; ++trial) {
        const std::string label = std::to_string(classes) + " classes trial " + std::to_string(trial);
        check_topk(planted_logits(classes, test::seed_for(label)), k, label);
        ++checked;
      }
    }
  for (int trial = 0; trial < 4; ++trial) {  // 10 classes, K = all of them: every NaN and -inf is selected
    const std::string label = "10 classes all-K trial " + std::to_string(trial);
    check_topk(planted_logits(10, test::seed_for(label)), 10, label);
    ++checked;
  }
  std::printf("top-k: %d random planted vectors matched the reference bitwise\n", checked);
}

TEST(TopKGpu, DegenerateVectors) {
  WS_REQUIRE_LANES_GPU();
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  check_topk(std::vector<float>(40, qnan), 32, "all NaN");
  check_topk(std::vector<float>(1000, 1.25f), 32, "all equal");
  check_topk(std::vector<float>(21843, -kInf), 5, "all -inf");
  {
    std::vector<float> v(1000, qnan);
    for (int i = 0; i < 1000; i += 97) v[size_t(i)] = -kInf;
    v[500] = 2.0f;
    v[13] = -0.0f;
    v[12] = 0.0f;
    v[999] = 2.0f;
    check_topk(v, 32, "NaN/-inf mix with 4 finite");  // finite first, then NaN and -inf by index
  }
  {
    std::vector<float> v(300);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 7);  // heavy ties
    check_topk(v, 32, "ties mod 7");
    check_topk(std::vector<float>{3.0f}, 1, "one class");
  }
  {  // the maximum in the last slot of the last strided pass
    std::vector<float> v(21843, 0.5f);
    v.back() = 9.0f;
    v[256] = 9.0f;
    check_topk(v, 5, "max at the end");
  }
}

TEST(TopKGpu, InvalidArguments) {
  WS_REQUIRE_LANES_GPU();
  auto logits = cuda::DeviceBuffer::allocate(64 * sizeof(float));
  auto out = cuda::DeviceBuffer::allocate(64 * sizeof(kernels::TopKPair));
  ASSERT_TRUE(logits.is_ok() && out.is_ok());
  const auto* l = logits->as<const float>();
  auto* o = out->as<kernels::TopKPair>();
  EXPECT_EQ(kernels::topk(l, 64, 0, o, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::topk(l, 64, 33, o, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::topk(l, 10, 32, o, nullptr).code(), StatusCode::kInvalidArgument);  // K > classes
  EXPECT_EQ(kernels::topk(l, 0, 1, o, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::topk(nullptr, 64, 1, o, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::topk(l, 64, 1, nullptr, nullptr).code(), StatusCode::kInvalidArgument);
  const Status s = kernels::topk(l, 10, 32, o, nullptr);
  EXPECT_NE(s.message().find("exceeds the number of classes 10"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ws
