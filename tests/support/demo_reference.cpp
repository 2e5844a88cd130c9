#include "support/demo_reference.h"

#include <gtest/gtest.h>

#include "reference/pad.h"
#include "reference/reference.h"
#include "support/test_util.h"

namespace ws::test {

std::map<std::string, DemoTensor> evaluate_demo_reference(const onnx::ModelProto& model,
                                                          const std::vector<float>& input) {
  auto w = [&](const char* name) { return initializer_floats(model, name); };
  std::map<std::string, DemoTensor> t;
  auto make = [&](const std::string& name, std::vector<int64_t> shape) -> std::vector<float>& {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    DemoTensor& d = t[name];
    d.shape = std::move(shape);
    d.values.assign(static_cast<size_t>(n), 0.0f);
    return d.values;
  };

  // conv1: 3→8, k3, s1, pads 1 → [1,8,32,32]
  ref::ConvParams c1;
  c1.rank = 2; c1.n = 1; c1.c_in = 3; c1.c_out = 8; c1.groups = 1;
  c1.in[0] = c1.in[1] = 32; c1.kernel[0] = c1.kernel[1] = 3;
  c1.pad_begin[0] = c1.pad_begin[1] = c1.pad_end[0] = c1.pad_end[1] = 1;
  c1.out[0] = c1.out[1] = 32;
  auto cw1 = w("conv1.weight"), cb1 = w("conv1.bias");
  ref::conv_nd(input.data(), cw1.data(), cb1.data(), make("conv1", {1, 8, 32, 32}).data(), c1);

  // bn1 (eps 1e-5), relu1
  auto s = w("bn1.scale"), b = w("bn1.bias"), m = w("bn1.mean"), v = w("bn1.var");
  ref::batch_norm_inference(t["conv1"].values.data(), s.data(), b.data(), m.data(), v.data(), 1e-5f,
                            make("bn1", {1, 8, 32, 32}).data(), 1, 8, 32 * 32);
  ref::unary(ref::UnaryOp::kRelu, t["bn1"].values.data(), make("relu1", {1, 8, 32, 32}).data(), 8 * 32 * 32);

  // pad2: 1 px of zeros on H and W → [1,8,34,34]
  const std::vector<int64_t> x_dims{1, 8, 32, 32}, pads{0, 0, 1, 1, 0, 0, 1, 1};
  ref::pad(t["relu1"].values.data(), x_dims, pads, ref::PadMode::kConstant, 0.0f, make("pad2", {1, 8, 34, 34}).data());

  // conv2: depthwise (group 8), k3, s2, no pads: (34 − 3)/2 + 1 = 16 → [1,8,16,16]
  ref::ConvParams c2;
  c2.rank = 2; c2.n = 1; c2.c_in = 8; c2.c_out = 8; c2.groups = 8;
  c2.in[0] = c2.in[1] = 34; c2.kernel[0] = c2.kernel[1] = 3; c2.stride[0] = c2.stride[1] = 2;
  c2.out[0] = c2.out[1] = 16;
  auto cw2 = w("conv2.weight"), cb2 = w("conv2.bias");
  ref::conv_nd(t["pad2"].values.data(), cw2.data(), cb2.data(), make("conv2", {1, 8, 16, 16}).data(), c2);

  // clip2 [0, 6]
  ref::UnaryParams clip;
  clip.min = 0.0f; clip.max = 6.0f;
  ref::unary(ref::UnaryOp::kClip, t["conv2"].values.data(), make("clip2", {1, 8, 16, 16}).data(), 8 * 256, clip);

  // conv3: 1×1, 8→16 → [1,16,16,16]; hsw3
  ref::ConvParams c3;
  c3.rank = 2; c3.n = 1; c3.c_in = 8; c3.c_out = 16; c3.groups = 1;
  c3.in[0] = c3.in[1] = 16; c3.out[0] = c3.out[1] = 16;
  auto cw3 = w("conv3.weight"), cb3 = w("conv3.bias");
  ref::conv_nd(t["clip2"].values.data(), cw3.data(), cb3.data(), make("conv3", {1, 16, 16, 16}).data(), c3);
  ref::unary(ref::UnaryOp::kHardSwish, t["conv3"].values.data(), make("hsw3", {1, 16, 16, 16}).data(), 16 * 256);

  // pool4: MaxPool k2 s2 → [1,16,8,8]
  ref::PoolParams p4;
  p4.rank = 2; p4.n = 1; p4.c = 16; p4.in[0] = p4.in[1] = 16; p4.kernel[0] = p4.kernel[1] = 2;
  p4.stride[0] = p4.stride[1] = 2; p4.out[0] = p4.out[1] = 8;
  ref::max_pool_nd(t["hsw3"].values.data(), make("pool4", {1, 16, 8, 8}).data(), nullptr, 0, p4);

  // avg5: AveragePool k3 s1 pads 1, count_include_pad 0 → [1,16,8,8]
  ref::PoolParams p5;
  p5.rank = 2; p5.n = 1; p5.c = 16; p5.in[0] = p5.in[1] = 8; p5.kernel[0] = p5.kernel[1] = 3;
  p5.pad_begin[0] = p5.pad_begin[1] = p5.pad_end[0] = p5.pad_end[1] = 1; p5.out[0] = p5.out[1] = 8;
  p5.count_include_pad = false;
  ref::average_pool_nd(t["pool4"].values.data(), make("avg5", {1, 16, 8, 8}).data(), p5);

  // gap6 → [1,16,1,1]; flat6 → [1,16]
  ref::global_average_pool(t["avg5"].values.data(), make("gap6", {1, 16, 1, 1}).data(), 1, 16, 64);
  make("flat6", {1, 16}) = t["gap6"].values;

  // fc: Gemm transB = 1, W stored [10,16], bias [10] → logits [1,10]
  auto fw = w("fc.weight"), fb = w("fc.bias");
  const std::vector<int64_t> c_dims{10};
  ref::gemm(t["flat6"].values.data(), fw.data(), fb.data(), c_dims, make("logits", {1, 10}).data(), 1, 10, 16, false,
            true, 1.0f, 1.0f);
  return t;
}

void write_demo_model(const std::string& path, const ir::DemoModelOptions& options) {
  std::string bytes;
  ASSERT_TRUE(ir::make_demo_model(options).SerializeToString(&bytes));
  write_file(path, bytes);
}

}  // namespace ws::test
