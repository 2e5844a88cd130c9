// GPU fused preprocess (src/kernels/preprocess) vs the CPU reference ws::ref::preprocess_rgb8_to_nchw.
// float32: bit-identical expected (the kernel evaluates the reference's expressions with explicit
// round-to-nearest intrinsics); the bar max|diff| <= 1e-5 is asserted too and the actual max is
// printed. fp16: identical to the reference rounded to nearest-even (__float2half_rn). The NHWC8 variant
// (preprocess_rgb8_to_nhwc8, TensorFormat::kHWC8): element [pixel·8 + c] == __float2half_rn(ref[c][pixel]) for
// c < 3, and channels 3..7 exactly +0.
// Sources: device memory and mapped pinned host memory (the device alias), row pitch with padding.
// Outputs are poisoned with 0xFF bytes (NaN in fp32 and fp16) and guarded by a poisoned tail.
// Random images are fresh per run; the seed is printed (WS_SEED=<n> replays).
// Hand cases: latency-anchors C11 (ramp 10x10 → 5x5), C12 (coordinate modes), C13 (per-channel std).
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/cuda_check.h"
#include "cuda/cuda_util.h"
#include "kernels/preprocess/preprocess_rgb8.h"
#include "lanes_gpu_support.h"
#include "reference/reference.h"

namespace ws {
namespace {

enum class Source { kDevice, kMapped };
const char* source_name(Source s) { return s == Source::kDevice ? "device" : "mapped"; }

constexpr size_t kGuardElems = 64;  // poisoned tail after the output tensor

struct Image {
  int64_t h = 0, w = 0, pitch = 0;
  std::vector<uint8_t> bytes;  // h * pitch (padding bytes random too)
};

Image random_image(int64_t w, int64_t h, int64_t pad, uint64_t seed) {
  Image im{h, w, 3 * w + pad, {}};
  im.bytes.resize(size_t(h * im.pitch));
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < im.bytes.size(); i += 8) {
    const uint64_t r = rng();
    for (size_t j = 0; j < 8 && i + j < im.bytes.size(); ++j) im.bytes[i + j] = uint8_t(r >> (8 * j));
  }
  return im;
}


/// Uploads an image into device or mapped memory and keeps it alive.
struct SourceBuffer {
  cuda::DeviceBuffer dev;
  cuda::PinnedBuffer pinned;
  const uint8_t* ptr = nullptr;  // device-visible
};

SourceBuffer upload(const Image& im, Source where) {
  SourceBuffer s;
  if (where == Source::kDevice) {
    auto b = cuda::DeviceBuffer::allocate(im.bytes.size());
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    if (!b.is_ok()) return s;
    s.dev = std::move(b).value();
    EXPECT_EQ(::ws::test::upload_sync(s.dev.get(), im.bytes.data(), im.bytes.size()), cudaSuccess);
    s.ptr = s.dev.as<const uint8_t>();
  } else {
    auto b = cuda::PinnedBuffer::allocate(im.bytes.size(), cudaHostAllocMapped);
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    if (!b.is_ok()) return s;
    s.pinned = std::move(b).value();
    std::memcpy(s.pinned.get(), im.bytes.data(), im.bytes.size());
    s.ptr = static_cast<const uint8_t*>(s.pinned.device_ptr());
  }
  return s;
}

/// Runs the kernel into a poisoned buffer; returns the output (3*dst_h*dst_w elements, raw bits in
/// uint32 for fp32 / uint16 for fp16) and checks the guard tail. Empty on failure (already reported).
template <typename Bits>
std::vector<Bits> run_gpu(const SourceBuffer& src, const Image& im, int64_t dst_w, int64_t dst_h, DType dt,
                          const ref::Normalize& norm, kernels::PreprocessPath path = kernels::PreprocessPath::kAuto) {
  const size_t n = size_t(3 * dst_h * dst_w);
  auto out = cuda::DeviceBuffer::allocate((n + kGuardElems) * sizeof(Bits));
  EXPECT_TRUE(out.is_ok());
  if (!out.is_ok() || !src.ptr) return {};
  EXPECT_EQ(::ws::test::memset_sync(out->get(), 0xFF, out->bytes()), cudaSuccess);
  auto stream = cuda::Stream::create();
  EXPECT_TRUE(stream.is_ok());
  const Status st = kernels::preprocess_rgb8_to_nchw(src.ptr, im.h, im.w, im.pitch, out->get(), dt, dst_h, dst_w,
                                                     norm, stream->get(), path);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  std::vector<Bits> all(n + kGuardElems);
  EXPECT_EQ(cudaMemcpy(all.data(), out->get(), out->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = n; i < all.size(); ++i) {
    EXPECT_EQ(all[i], Bits(~Bits(0))) << "write past the output tensor at element " << i;
    if (all[i] != Bits(~Bits(0))) break;
  }
  all.resize(n);
  return all;
}

std::vector<float> reference(const Image& im, int64_t dst_w, int64_t dst_h, const ref::Normalize& norm) {
  std::vector<float> want(size_t(3 * dst_h * dst_w), std::nanf(""));
  const Status st =
      ref::preprocess_rgb8_to_nchw(im.bytes.data(), im.h, im.w, im.pitch, want.data(), dst_h, dst_w, norm);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return want;
}

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
uint16_t half_bits(__half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
__half bits_to_half(uint16_t b) {
  __half h;
  std::memcpy(&h, &b, 2);
  return h;
}

/// The kernels' paths a source of `src_w` pixels can take (kernels::PreprocessPath): both, or direct only when its rows
/// are wider than the staged limit.
std::vector<kernels::PreprocessPath> paths_for(int64_t src_w) {
  if (3 * src_w <= kernels::kPreprocessStagedMaxRowBytes) return {kernels::PreprocessPath::kStaged, kernels::PreprocessPath::kDirect};
  return {kernels::PreprocessPath::kDirect};
}
const char* path_name(kernels::PreprocessPath p) {
  return p == kernels::PreprocessPath::kStaged ? "staged" : p == kernels::PreprocessPath::kDirect ? "direct" : "auto";
}

/// Compares one configuration in fp32 and fp16 against the reference, on one kernel path; prints the measured differences.
void check_case_on(int64_t src_w, int64_t src_h, int64_t dst_w, int64_t dst_h, int64_t pad, Source where, const ref::Normalize& norm,
                   kernels::PreprocessPath path) {
  const std::string label = std::to_string(src_w) + "x" + std::to_string(src_h) + "+pad" + std::to_string(pad) +
                            " -> " + std::to_string(dst_w) + "x" + std::to_string(dst_h) + " from " +
                            source_name(where) + ", " + path_name(path);
  SCOPED_TRACE(label);
  const Image im = random_image(src_w, src_h, pad, test::seed_for("image " + std::to_string(src_w) + "x" +
                                                                   std::to_string(src_h) + "+" + std::to_string(pad)));
  const std::vector<float> want = reference(im, dst_w, dst_h, norm);
  const SourceBuffer src = upload(im, where);

  // float32: bitwise, and the 1e-5 bar.
  const std::vector<uint32_t> got32 = run_gpu<uint32_t>(src, im, dst_w, dst_h, DType::kFloat32, norm, path);
  ASSERT_EQ(got32.size(), want.size());
  double max_diff = 0;
  size_t not_bitwise = 0, first_bad = SIZE_MAX;
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = bits_to_float(got32[i]);
    const double d = std::isnan(g) ? INFINITY : std::fabs(double(g) - double(want[i]));
    max_diff = std::max(max_diff, d);
    if (got32[i] != float_bits(want[i])) {
      ++not_bitwise;
      if (first_bad == SIZE_MAX) first_bad = i;
    }
  }
  // fp16: exactly the reference rounded to nearest-even.
  const std::vector<uint16_t> got16 = run_gpu<uint16_t>(src, im, dst_w, dst_h, DType::kFloat16, norm, path);
  ASSERT_EQ(got16.size(), want.size());
  size_t half_bad = 0;
  double half_max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const uint16_t expect = half_bits(__float2half_rn(want[i]));
    half_bad += got16[i] != expect;
    const float g = __half2float(bits_to_half(got16[i]));
    half_max_diff = std::max(half_max_diff, std::isnan(g) ? INFINITY : std::fabs(double(g) - double(want[i])));
  }
  std::printf("preprocess %-40s fp32 max|diff| %.3g, %zu/%zu not bit-identical; fp16 max|diff| %.3g, %zu not "
              "RN(ref)\n",
              label.c_str(), max_diff, not_bitwise, want.size(), half_max_diff, half_bad);
  EXPECT_LE(max_diff, 1e-5);
  EXPECT_EQ(not_bitwise, 0u) << "first at element " << first_bad << ": got "
                             << (first_bad == SIZE_MAX ? 0.f : bits_to_float(got32[first_bad])) << " want "
                             << (first_bad == SIZE_MAX ? 0.f : want[first_bad]);
  EXPECT_EQ(half_bad, 0u);
  // |half(x) - x| <= 2^-11 |x| for normal x (values here are within ±3).
  EXPECT_LE(half_max_diff, 3.0 * 0.00048828125 + 1e-7);
}

/// check_case_on every path the source can take.
void check_case(int64_t src_w, int64_t src_h, int64_t dst_w, int64_t dst_h, int64_t pad, Source where, const ref::Normalize& norm = {}) {
  for (kernels::PreprocessPath path : paths_for(src_w)) check_case_on(src_w, src_h, dst_w, dst_h, pad, where, norm, path);
}

TEST(PreprocessGpu, RandomImagesTo224FromDeviceAndMapped) {
  WS_REQUIRE_LANES_GPU();
  // 5000 pixels: rows wider than the staged path takes (direct only); 4096: the widest staged rows
  const int64_t sizes[][2] = {{1, 1}, {7, 3}, {3, 5}, {1920, 1080}, {4000, 3000}, {4096, 33}, {5000, 41}};
  for (Source where : {Source::kDevice, Source::kMapped})
    for (const auto& s : sizes) check_case(s[0], s[1], 224, 224, 0, where);
}

TEST(PreprocessGpu, OddDestinationsAndPaddedRows) {
  WS_REQUIRE_LANES_GPU();
  struct C {
    int64_t sw, sh, dw, dh, pad;
  };
  const C cases[] = {{1920, 1080, 1, 1, 0},  {1920, 1080, 13, 7, 5}, {7, 3, 31, 17, 1},   {3, 5, 2, 2, 0},
                     {640, 480, 225, 223, 13}, {640, 480, 300, 169, 0}, {101, 37, 224, 224, 3}, {224, 224, 224, 224, 0},
                     {1, 9, 5, 33, 2},        {4000, 3000, 1, 224, 0}};
  for (Source where : {Source::kDevice, Source::kMapped})
    for (const C& c : cases) check_case(c.sw, c.sh, c.dw, c.dh, c.pad, where);
}

/// Runs preprocess_rgb8_to_nhwc8 into a poisoned fp16 buffer; returns dst_h·dst_w·8 raw half bits and checks the
/// guard tail. Empty on failure (already reported).
std::vector<uint16_t> run_gpu_nhwc8(const SourceBuffer& src, const Image& im, int64_t dst_w, int64_t dst_h,
                                    const ref::Normalize& norm, kernels::PreprocessPath path = kernels::PreprocessPath::kAuto) {
  const size_t n = size_t(8 * dst_h * dst_w);
  auto out = cuda::DeviceBuffer::allocate((n + kGuardElems) * sizeof(uint16_t));
  EXPECT_TRUE(out.is_ok());
  if (!out.is_ok() || !src.ptr) return {};
  EXPECT_EQ(::ws::test::memset_sync(out->get(), 0xFF, out->bytes()), cudaSuccess);  // NaN everywhere, padding too
  auto stream = cuda::Stream::create();
  EXPECT_TRUE(stream.is_ok());
  const Status st = kernels::preprocess_rgb8_to_nhwc8(src.ptr, im.h, im.w, im.pitch, out->get(), DType::kFloat16, dst_h,
                                                      dst_w, norm, stream->get(), path);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  std::vector<uint16_t> all(n + kGuardElems);
  EXPECT_EQ(cudaMemcpy(all.data(), out->get(), out->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = n; i < all.size(); ++i) {
    EXPECT_EQ(all[i], uint16_t(0xFFFF)) << "write past the output tensor at element " << i;
    if (all[i] != 0xFFFF) break;
  }
  all.resize(n);
  return all;
}

/// The NHWC8 layout of one configuration against the NCHW reference: [pixel·8 + c] == RN_half(ref[c·plane + pixel]) for
/// c < 3 (bit for bit), and the 5 padding channels exactly +0 (the poison must be overwritten on every call).
void check_nhwc8_case_on(int64_t src_w, int64_t src_h, int64_t dst_w, int64_t dst_h, int64_t pad, Source where,
                         const ref::Normalize& norm, kernels::PreprocessPath path) {
  const std::string label = std::to_string(src_w) + "x" + std::to_string(src_h) + "+pad" + std::to_string(pad) +
                            " -> " + std::to_string(dst_w) + "x" + std::to_string(dst_h) + " NHWC8 from " + source_name(where) +
                            ", " + path_name(path);
  SCOPED_TRACE(label);
  const Image im = random_image(src_w, src_h, pad, test::seed_for("nhwc8 image " + std::to_string(src_w) + "x" +
                                                                   std::to_string(src_h) + "+" + std::to_string(pad)));
  const std::vector<float> want = reference(im, dst_w, dst_h, norm);
  const SourceBuffer src = upload(im, where);
  const std::vector<uint16_t> got = run_gpu_nhwc8(src, im, dst_w, dst_h, norm, path);
  const size_t plane = size_t(dst_w * dst_h);
  ASSERT_EQ(got.size(), plane * 8);
  size_t value_bad = 0, pad_bad = 0, first_value = SIZE_MAX, first_pad = SIZE_MAX;
  for (size_t px = 0; px < plane; ++px)
    for (size_t c = 0; c < 8; ++c) {
      const uint16_t g = got[px * 8 + c];
      if (c < 3) {
        if (g != half_bits(__float2half_rn(want[c * plane + px])) && value_bad++ == 0) first_value = px * 8 + c;
      } else if (g != 0 && pad_bad++ == 0) {
        first_pad = px * 8 + c;
      }
    }
  std::printf("preprocess %-46s fp16 %zu/%zu values not RN(ref), %zu padding channels not 0\n", label.c_str(), value_bad,
              plane * 3, pad_bad);
  EXPECT_EQ(value_bad, 0u) << "first at element " << first_value << " (pixel " << first_value / 8 << ", channel "
                           << first_value % 8 << "): got bits " << (first_value == SIZE_MAX ? 0 : got[first_value]) << " want "
                           << (first_value == SIZE_MAX ? 0.f : want[(first_value % 8) * plane + first_value / 8]);
  EXPECT_EQ(pad_bad, 0u) << "first at element " << first_pad << ": bits "
                         << (first_pad == SIZE_MAX ? 0 : got[first_pad]);
}

/// check_nhwc8_case_on every path the source can take.
void check_nhwc8_case(int64_t src_w, int64_t src_h, int64_t dst_w, int64_t dst_h, int64_t pad, Source where,
                      const ref::Normalize& norm = {}) {
  for (kernels::PreprocessPath path : paths_for(src_w)) check_nhwc8_case_on(src_w, src_h, dst_w, dst_h, pad, where, norm, path);
}

TEST(PreprocessGpu, Nhwc8MatchesTheReferenceRoundedToHalf) {
  WS_REQUIRE_LANES_GPU();
  struct C {
    int64_t sw, sh, dw, dh, pad;
  };
  const C cases[] = {{1, 1, 1, 1, 0},         {7, 3, 224, 224, 0},    {1920, 1080, 224, 224, 0}, {1920, 1080, 13, 7, 5},
                     {7, 3, 31, 17, 1},       {640, 480, 225, 223, 13}, {101, 37, 33, 9, 3},      {1, 9, 5, 33, 2},
                     {4000, 3000, 1, 224, 0}, {224, 224, 224, 224, 0}, {5000, 41, 224, 224, 7}};
  for (Source where : {Source::kDevice, Source::kMapped})
    for (const C& c : cases) check_nhwc8_case(c.sw, c.sh, c.dw, c.dh, c.pad, where);
  // a per-channel normalisation other than ImageNet's: the channels must not be swapped in the 16-byte pixel
  check_nhwc8_case(37, 29, 19, 23, 0, Source::kDevice, ref::Normalize{{0.1f, 0.5f, 0.9f}, {2.0f, 3.0f, 5.0f}});
}

TEST(PreprocessGpu, Nhwc8InvalidArgumentsAreRejected) {
  WS_REQUIRE_LANES_GPU();
  auto out = cuda::DeviceBuffer::allocate(4 * 4 * 8 * sizeof(uint16_t) + 64);
  auto img = cuda::DeviceBuffer::allocate(64);
  ASSERT_TRUE(out.is_ok() && img.is_ok());
  ASSERT_EQ(::ws::test::memset_sync(img->get(), 0x40, 64), cudaSuccess);
  const auto* p = img->as<const uint8_t>();
  const kernels::PreprocessNormalize n;
  auto call = [&](const uint8_t* src, int64_t sh, int64_t sw, int64_t pitch, void* o, DType dt, int64_t dh, int64_t dw) {
    return kernels::preprocess_rgb8_to_nhwc8(src, sh, sw, pitch, o, dt, dh, dw, n, nullptr);
  };
  void* o = out->get();
  const Status f32 = call(p, 4, 4, 12, o, DType::kFloat32, 4, 4);
  EXPECT_EQ(f32.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f32.message().find("float16 only"), std::string::npos) << f32.to_string();
  const Status misaligned = call(p, 4, 4, 12, static_cast<char*>(o) + 2, DType::kFloat16, 4, 4);
  EXPECT_EQ(misaligned.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(misaligned.message().find("16-byte"), std::string::npos) << misaligned.to_string();
  EXPECT_EQ(call(p, 0, 4, 12, o, DType::kFloat16, 4, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(p, 4, 4, 11, o, DType::kFloat16, 4, 4).code(), StatusCode::kInvalidArgument);  // pitch < 3*w
  EXPECT_EQ(call(nullptr, 4, 4, 12, o, DType::kFloat16, 4, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(p, 4, 4, 12, nullptr, DType::kFloat16, 4, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(p, 4, 4, 12, o, DType::kFloat16, 4, kernels::kPreprocessMaxDstExtent + 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(p, 4, 4, 12, o, DType::kFloat16, 4, 4).code(), StatusCode::kOk);
  // the row-staged path named for rows wider than it takes: refused, naming the limit (nothing read: 1 row of 5000 px)
  const Status wide = kernels::preprocess_rgb8_to_nhwc8(p, 1, 5000, 15000, o, DType::kFloat16, 1, 1, n, nullptr,
                                                        kernels::PreprocessPath::kStaged);
  EXPECT_EQ(wide.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wide.message().find("row-staged"), std::string::npos) << wide.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(PreprocessGpu, InvalidArgumentsAreRejected) {
  WS_REQUIRE_LANES_GPU();
  auto out = cuda::DeviceBuffer::allocate(3 * 4 * 4 * sizeof(float));
  auto img = cuda::DeviceBuffer::allocate(64);
  ASSERT_TRUE(out.is_ok() && img.is_ok());
  // The one valid call below runs the kernel: give it defined pixels (compute-sanitizer initcheck, run 08).
  ASSERT_EQ(::ws::test::memset_sync(img->get(), 0x40, 64), cudaSuccess);
  const auto* p = img->as<const uint8_t>();
  const kernels::PreprocessNormalize n;
  auto code = [&](const uint8_t* src, int64_t sh, int64_t sw, int64_t pitch, void* o, int64_t dh, int64_t dw) {
    return kernels::preprocess_rgb8_to_nchw(src, sh, sw, pitch, o, DType::kFloat32, dh, dw, n, nullptr).code();
  };
  EXPECT_EQ(code(p, 0, 4, 12, out->get(), 4, 4), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 0, 12, out->get(), 4, 4), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 4, 12, out->get(), 0, 4), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 4, 12, out->get(), 4, -1), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 4, 11, out->get(), 4, 4), StatusCode::kInvalidArgument);  // pitch < 3*w
  EXPECT_EQ(code(nullptr, 4, 4, 12, out->get(), 4, 4), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 4, 12, nullptr, 4, 4), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 4, 12, out->get(), kernels::kPreprocessMaxDstExtent + 1, 4), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, 4, 4, 12, out->get(), 4, 4), StatusCode::kOk);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// ---- hand cases (latency-anchors.md) -------------------------------------------------------------

/// Gray image (R = G = B = v[y][x]) → resample with mean 0, inv_std 1, fp32, from device memory.
/// Returns the resampled pixel values ×255 as computed (out = v·(1/255)), plus the raw outputs.
struct Resampled {
  std::vector<float> out;  // [3, dh, dw]
};
Resampled resample_gray(const std::vector<std::vector<int>>& v, int64_t dw, int64_t dh,
                        const ref::Normalize& norm = {{0, 0, 0}, {1, 1, 1}}, Source where = Source::kDevice) {
  Image im;
  im.h = int64_t(v.size());
  im.w = int64_t(v[0].size());
  im.pitch = 3 * im.w;
  im.bytes.resize(size_t(im.h * im.pitch));
  for (int64_t y = 0; y < im.h; ++y)
    for (int64_t x = 0; x < im.w; ++x)
      for (int c = 0; c < 3; ++c) im.bytes[size_t(y * im.pitch + x * 3 + c)] = uint8_t(v[y][x]);
  const SourceBuffer src = upload(im, where);
  const std::vector<uint32_t> bits = run_gpu<uint32_t>(src, im, dw, dh, DType::kFloat32, norm);
  Resampled r;
  for (uint32_t b : bits) r.out.push_back(bits_to_float(b));
  const std::vector<float> want = reference(im, dw, dh, norm);
  EXPECT_EQ(std::memcmp(r.out.data(), want.data(), want.size() * 4), 0) << "GPU differs from the CPU reference";
  return r;
}

/// Expect every channel of pixel (dy, dx) to be exactly float(v)·(1/255) and within 1e-5 of v in pixel units.
void expect_pixels(const Resampled& r, int64_t dw, int64_t dh, const std::vector<std::vector<double>>& want) {
  const int64_t plane = dw * dh;
  for (int64_t y = 0; y < int64_t(want.size()); ++y)
    for (int64_t x = 0; x < dw; ++x)
      for (int c = 0; c < 3; ++c) {
        const float got = r.out[size_t(c * plane + y * dw + x)];
        EXPECT_EQ(got, float(want[y][x]) * (1.0f / 255.0f)) << "pixel (" << y << "," << x << ") channel " << c;
        EXPECT_NEAR(double(got) * 255.0, want[y][x], 1e-5) << "pixel (" << y << "," << x << ")";
      }
}

TEST(PreprocessGpu, C11HalfPixelBilinearIsNotPillowAntialias) {
  WS_REQUIRE_LANES_GPU();
  std::vector<std::vector<int>> ramp(10, std::vector<int>(10));
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x) ramp[y][x] = 10 * y + x;
  const Resampled r = resample_gray(ramp, 5, 5);
  std::vector<std::vector<double>> want(5, std::vector<double>(5));
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x) want[y][x] = 20.0 * y + 2.0 * x + 5.5;  // row 0 = 5.5 … 13.5, row 4 = 85.5 … 93.5
  expect_pixels(r, 5, 5, want);
  EXPECT_NEAR(r.out[0] * 255.0, 5.5, 1e-5);
  EXPECT_GT(std::fabs(r.out[0] * 255.0 - 7.857143), 1.0) << "Pillow's antialiased 'bilinear' value";
  EXPECT_NEAR(r.out[4 * 5 + 4] * 255.0, 93.5, 1e-5);
}

TEST(PreprocessGpu, C12HalfPixelCoordinateCases) {
  WS_REQUIRE_LANES_GPU();
  {  // 1x10 [0..9] → 1x1: half_pixel 4.5 (pytorch_half_pixel / align_corners / asymmetric give 0)
    std::vector<std::vector<int>> row(1, std::vector<int>(10));
    for (int x = 0; x < 10; ++x) row[0][x] = x;
    expect_pixels(resample_gray(row, 1, 1), 1, 1, {{4.5}});
  }
  {  // 3x5 ramp v = 10y + x → 2x2: [[3.25, 5.75], [18.25, 20.75]]
    std::vector<std::vector<int>> ramp(3, std::vector<int>(5));
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 5; ++x) ramp[y][x] = 10 * y + x;
    expect_pixels(resample_gray(ramp, 2, 2), 2, 2, {{3.25, 5.75}, {18.25, 20.75}});
  }
  {  // 2x2 [[0,10],[20,30]] → 4x4, row 0 = [0, 2.5, 7.5, 10] (negative source coordinates clamp to 0)
    const Resampled r = resample_gray({{0, 10}, {20, 30}}, 4, 4, {{0, 0, 0}, {1, 1, 1}}, Source::kMapped);
    expect_pixels(r, 4, 4, {{0, 2.5, 7.5, 10}, {5, 7.5, 12.5, 15}, {15, 17.5, 22.5, 25}, {20, 22.5, 27.5, 30}});
  }
  {  // 6x6 → 2x2 half_pixel samples exact pixels (1,1), (1,4), (4,1), (4,4) (royinx/CUDA_Resize#3, = cv2)
    std::mt19937 rng(uint32_t(test::seed_for("c12-6x6")));
    std::vector<std::vector<int>> img(6, std::vector<int>(6));
    for (auto& r : img)
      for (int& p : r) p = int(rng() & 255);
    img[1][1] = 80;
    img[1][4] = 78;
    img[4][1] = 19;
    img[4][4] = 40;
    expect_pixels(resample_gray(img, 2, 2), 2, 2, {{80, 78}, {19, 40}});
  }
}

TEST(PreprocessGpu, C13PerChannelStdNotScalar) {
  WS_REQUIRE_LANES_GPU();
  const ref::Normalize imagenet;  // mean 0.485/0.456/0.406, std 0.229/0.224/0.225
  struct C {
    uint8_t rgb[3];
    double want[3];
  };
  const C cases[] = {{{0, 0, 0}, {-2.117904, -2.035714, -1.804444}},
                     {{255, 255, 255}, {2.248908, 2.428571, 2.640000}},
                     {{124, 116, 104}, {0.005566, -0.004902, 0.008192}}};
  const double mean[3] = {0.485, 0.456, 0.406}, std_[3] = {0.229, 0.224, 0.225};
  for (const C& c : cases) {
    for (Source where : {Source::kDevice, Source::kMapped}) {
      Image im{1, 1, 3, {c.rgb[0], c.rgb[1], c.rgb[2]}};
      const SourceBuffer src = upload(im, where);
      const std::vector<uint32_t> bits = run_gpu<uint32_t>(src, im, 1, 1, DType::kFloat32, imagenet);
      ASSERT_EQ(bits.size(), 3u);
      for (int ch = 0; ch < 3; ++ch) {
        const double got = bits_to_float(bits[ch]);
        const double exact = (c.rgb[ch] / 255.0 - mean[ch]) / std_[ch];
        EXPECT_NEAR(got, c.want[ch], 1e-6) << "rgb " << int(c.rgb[ch]) << " channel " << ch;
        EXPECT_NEAR(got, exact, 1e-6) << "rgb " << int(c.rgb[ch]) << " channel " << ch;
      }
      if (c.rgb[0] == 255) {  // a scalar std (mean 0.226) would give R = 2.2788
        const double got_r = bits_to_float(bits[0]);
        EXPECT_GT(std::fabs(got_r - 2.2788), 0.02);
      }
    }
  }
}

}  // namespace
}  // namespace ws
