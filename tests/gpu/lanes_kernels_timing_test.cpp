// Microbenchmark of the lane kernels (prints only, asserts nothing about time; disabled by default):
//   ws_gpu_tests --gtest_also_run_disabled_tests --gtest_filter='LanesKernelsTiming*'
// Each launch is bracketed by its own pair of events and synchronised (closed loop, no pipelining),
// after 50 warm-up launches; median, p99 and max of 1000 launches in µs. The source image is not
// rotated (1920x1080 RGB = 6 MB stays in the 60 MB L2 for the device case): a floor, not a lane figure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "support/cuda_check.h"
#include "cuda/cuda_util.h"
#include "kernels/preprocess/preprocess_rgb8.h"
#include "kernels/topk/topk.h"
#include "lanes_gpu_support.h"

namespace ws {
namespace {

void time_launches(const char* name, const std::function<Status(cudaStream_t)>& launch) {
  auto stream = cuda::Stream::create();
  auto e0 = cuda::Event::create();
  auto e1 = cuda::Event::create();
  ASSERT_TRUE(stream.is_ok() && e0.is_ok() && e1.is_ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(launch(stream->get()).is_ok());
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  std::vector<double> us;
  us.reserve(1000);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(cudaEventRecord(e0->get(), stream->get()), cudaSuccess);
    ASSERT_TRUE(launch(stream->get()).is_ok());
    ASSERT_EQ(cudaEventRecord(e1->get(), stream->get()), cudaSuccess);
    ASSERT_EQ(cudaEventSynchronize(e1->get()), cudaSuccess);
    auto ms = cuda::elapsed_ms(*e0, *e1);
    ASSERT_TRUE(ms.is_ok());
    us.push_back(double(*ms) * 1000.0);
  }
  std::sort(us.begin(), us.end());
  std::printf("timing %-52s median %8.2f us  p99 %8.2f us  max %8.2f us  (n=1000, events)\n", name, us[500],
              us[989], us.back());
}

TEST(LanesKernelsTiming, DISABLED_Preprocess1080pTo224) {
  WS_REQUIRE_LANES_GPU();
  const int64_t w = 1920, h = 1080, bytes = w * h * 3;
  auto dev = cuda::DeviceBuffer::allocate(size_t(bytes));
  auto mapped = cuda::PinnedBuffer::allocate(size_t(bytes), cudaHostAllocMapped);
  auto out = cuda::DeviceBuffer::allocate(3 * 224 * 224 * 4);
  ASSERT_TRUE(dev.is_ok() && mapped.is_ok() && out.is_ok());
  ASSERT_EQ(::ws::test::memset_sync(dev->get(), 0x7B, size_t(bytes)), cudaSuccess);
  for (int64_t i = 0; i < bytes; ++i) mapped->as<uint8_t>()[i] = uint8_t(i * 31);
  const kernels::PreprocessNormalize n;
  using kernels::PreprocessPath;
  for (auto dt : {DType::kFloat32, DType::kFloat16})
    for (PreprocessPath path : {PreprocessPath::kStaged, PreprocessPath::kDirect}) {
      const char* pn = path == PreprocessPath::kStaged ? "staged" : "direct";
      char name[128];
      std::snprintf(name, sizeof name, "preprocess_rgb8 1920x1080->224x224 %s %s, device src", dtype_name(dt).c_str(), pn);
      time_launches(name, [&](cudaStream_t s) {
        return kernels::preprocess_rgb8_to_nchw(dev->as<const uint8_t>(), h, w, 3 * w, out->get(), dt, 224, 224, n, s, path);
      });
      std::snprintf(name, sizeof name, "preprocess_rgb8 1920x1080->224x224 %s %s, mapped src", dtype_name(dt).c_str(), pn);
      time_launches(name, [&](cudaStream_t s) {
        return kernels::preprocess_rgb8_to_nchw(static_cast<const uint8_t*>(mapped->device_ptr()), h, w, 3 * w, out->get(), dt, 224,
                                                224, n, s, path);
      });
    }
  // the bytes a 224-row bilinear resize of this frame reads (2 source rows per destination row), copied host -> device
  // by the copy engine in one call: the PCIe figure the mapped rows above compare with
  const size_t tap_bytes = size_t(2 * 224 * 3 * w);
  auto dst = cuda::DeviceBuffer::allocate(tap_bytes);
  ASSERT_TRUE(dst.is_ok());
  time_launches("memcpy H2D 2x224 rows of 1920x3 bytes (copy engine)", [&](cudaStream_t s) -> Status {
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst->get(), mapped->get(), tap_bytes, cudaMemcpyHostToDevice, s));
    return Status::ok();
  });
}

// The kHWC8 form (preprocess_rgb8_to_nhwc8: fp16 [1, 224, 224, 8], one 16-byte store per pixel), which an engine built
// with CudaBuildOptions::hwc8_input_port takes directly: compare with the fp16 NCHW rows above plus the engine's
// reformat kernel it replaces (≈ 3 µs, docs/cuda-executor.md).
TEST(LanesKernelsTiming, DISABLED_Preprocess1080pTo224Nhwc8) {
  WS_REQUIRE_LANES_GPU();
  const int64_t w = 1920, h = 1080, bytes = w * h * 3;
  auto dev = cuda::DeviceBuffer::allocate(size_t(bytes));
  auto mapped = cuda::PinnedBuffer::allocate(size_t(bytes), cudaHostAllocMapped);
  auto out = cuda::DeviceBuffer::allocate(224 * 224 * 8 * 2);
  ASSERT_TRUE(dev.is_ok() && mapped.is_ok() && out.is_ok());
  ASSERT_EQ(::ws::test::memset_sync(dev->get(), 0x7B, size_t(bytes)), cudaSuccess);
  for (int64_t i = 0; i < bytes; ++i) mapped->as<uint8_t>()[i] = uint8_t(i * 31);
  const kernels::PreprocessNormalize n;
  using kernels::PreprocessPath;
  for (PreprocessPath path : {PreprocessPath::kStaged, PreprocessPath::kDirect}) {
    const char* pn = path == PreprocessPath::kStaged ? "staged" : "direct";
    char name[128];
    std::snprintf(name, sizeof name, "preprocess_rgb8_nhwc8 1920x1080->224x224 float16 %s, device src", pn);
    time_launches(name, [&](cudaStream_t s) {
      return kernels::preprocess_rgb8_to_nhwc8(dev->as<const uint8_t>(), h, w, 3 * w, out->get(), DType::kFloat16, 224, 224, n, s, path);
    });
    std::snprintf(name, sizeof name, "preprocess_rgb8_nhwc8 1920x1080->224x224 float16 %s, mapped src", pn);
    time_launches(name, [&](cudaStream_t s) {
      return kernels::preprocess_rgb8_to_nhwc8(static_cast<const uint8_t*>(mapped->device_ptr()), h, w, 3 * w, out->get(),
                                               DType::kFloat16, 224, 224, n, s, path);
    });
  }
}

TEST(LanesKernelsTiming, DISABLED_TopK) {
  WS_REQUIRE_LANES_GPU();
  auto logits = cuda::DeviceBuffer::allocate(21843 * 4);
  auto result = cuda::PinnedBuffer::allocate(32 * sizeof(kernels::TopKPair), cudaHostAllocMapped);
  ASSERT_TRUE(logits.is_ok() && result.is_ok());
  std::vector<float> v(21843);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((i * 7919) % 10007) * 0.001f;
  ASSERT_EQ(::ws::test::upload_sync(logits->get(), v.data(), v.size() * 4), cudaSuccess);
  auto* out = static_cast<kernels::TopKPair*>(result->device_ptr());
  for (int64_t classes : {1000, 21843})
    for (int k : {1, 5, 32}) {
      char name[128];
      std::snprintf(name, sizeof name, "topk %lld classes K=%d -> mapped", (long long)classes, k);
      time_launches(name, [&](cudaStream_t s) { return kernels::topk(logits->as<const float>(), classes, k, out, s); });
    }
}

}  // namespace
}  // namespace ws
