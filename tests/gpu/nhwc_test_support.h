#pragma once
// Helpers of the channels-last GPU tests (cudnn_fe_conv_test.cpp, conv_nhwc_test.cpp): fp16-rounded random operands
// (seed printed), NHWC → NCHW for the CPU reference, a device fp16 buffer filled from / read back to floats.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda_engine_test_support.h"  // random_values, add_random_conv, import_builder
#include "engine/ir/model_builder.h"
#include "support/cuda_check.h"        // upload_sync
#include "support/seed.h"

namespace ws::test {

inline std::vector<float> random_half(size_t n, const std::string& label, float lo, float hi) {
  std::vector<float> v = test::random_values(n, test::test_seed(label), lo, hi);
  for (float& f : v) f = __half2float(__float2half_rn(f));  // what the device holds
  return v;
}

// NHWC [n][h][w][c] -> NCHW, for the reference.
inline std::vector<float> to_nchw(const std::vector<float>& v, int64_t n, int64_t h, int64_t w, int64_t c) {
  std::vector<float> o(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) o[size_t(((i * c + ch) * h + y) * w + x)] = v[size_t(((i * h + y) * w + x) * c + ch)];
  return o;
}

struct DevHalf {
  __half* p = nullptr;
  explicit DevHalf(const std::vector<float>& v) {
    std::vector<__half> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(h.size(), 1) * sizeof(__half)), cudaSuccess);
    EXPECT_EQ(upload_sync(p, h.data(), h.size() * sizeof(__half)), cudaSuccess);
  }
  ~DevHalf() { cudaFree(p); }
  std::vector<float> read(size_t n) const {
    std::vector<__half> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(__half), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<float> o(n);
    for (size_t i = 0; i < n; ++i) o[i] = __half2float(h[i]);
    return o;
  }
};

/// A ResNet bottleneck with identity shortcut as one graph: x [1, c, hw, hw] → 1x1 c→mid + ReLU → 3x3 mid + ReLU →
/// 1x1 mid→c, + x, ReLU, repeated `blocks` times (node names "b<i>_c1" ...; one block: "c1", "c2", "c3"). Random weights.
inline ir::Graph bottleneck_graph(int64_t c, int64_t mid, int64_t hw, int blocks, const std::string& name) {
  ir::ModelBuilder b{13, name};
  b.input("x", ir::DType::kFloat32, {1, c, hw, hw});
  std::string t = "x";
  for (int i = 0; i < blocks; ++i) {
    const std::string p = blocks == 1 ? "" : "b" + std::to_string(i) + "_";
    add_random_conv(b, p + "c1", t, p + "a", {mid, c, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1);
    b.node("Relu", {p + "a"}, {p + "ar"}, p + "r1");
    add_random_conv(b, p + "c2", p + "ar", p + "bb", {mid, mid, 3, 3}, {1, 1}, {1, 1, 1, 1}, 1);
    b.node("Relu", {p + "bb"}, {p + "br"}, p + "r2");
    add_random_conv(b, p + "c3", p + "br", p + "c", {c, mid, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1);
    b.node("Add", {p + "c", t}, {p + "s"}, p + "add");
    b.node("Relu", {p + "s"}, {p + "y"}, p + "r3");
    t = p + "y";
  }
  b.output(t);
  return import_builder(b);
}

}  // namespace ws::test
