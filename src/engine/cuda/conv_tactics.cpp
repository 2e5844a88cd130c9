// Our conv kernels as Conv tactics: see conv_tactics.h.
#include "engine/cuda/conv_tactics.h"

#include <array>

#include "engine/cuda/op_util.h"

namespace ws::cudaexec {

int ws_conv_splits(WsConv i) {
  switch (i) {
    case WsConv::kPointwise32Split4: case WsConv::kPointwise64Split4: case WsConv::kFp8Pointwise32Split4: case WsConv::kFp8Pointwise64Split4: return 4;
    case WsConv::kPointwise32Split8: case WsConv::kFp8Pointwise32Split8: return 8;
    case WsConv::kPointwise32Split16: case WsConv::kFp8Pointwise32Split16: return 16;
    default: return 1;
  }
}

const char* ws_conv_key(WsConv i) {  // timing-cache "impl" value
  switch (i) {
    case WsConv::kDepthwise: return "ws_depthwise";
    case WsConv::kDepthwise4: return "ws_depthwise_x4";
    case WsConv::kPointwise64: return "ws_pointwise_64x64";
    case WsConv::kPointwise32: return "ws_pointwise_32x32";
    case WsConv::kDirect: return "ws_direct";
    case WsConv::kPointwise32Split4: return "ws_pointwise_32x32_splitk4";
    case WsConv::kPointwise32Split8: return "ws_pointwise_32x32_splitk8";
    case WsConv::kPointwise32Split16: return "ws_pointwise_32x32_splitk16";
    case WsConv::kPointwise64Split4: return "ws_pointwise_64x64_splitk4";
    case WsConv::kFp8Pointwise64: return "ws_pointwise_fp8_64x64";
    case WsConv::kFp8Pointwise32: return "ws_pointwise_fp8_32x32";
    case WsConv::kFp8Pointwise32Split4: return "ws_pointwise_fp8_32x32_splitk4";
    case WsConv::kFp8Pointwise32Split8: return "ws_pointwise_fp8_32x32_splitk8";
    case WsConv::kFp8Pointwise32Split16: return "ws_pointwise_fp8_32x32_splitk16";
    case WsConv::kFp8Pointwise64Split4: return "ws_pointwise_fp8_64x64_splitk4";
  }
  return "?";
}

bool ws_conv_is_fp8(WsConv i) {
  switch (i) {
    case WsConv::kFp8Pointwise64: case WsConv::kFp8Pointwise32: case WsConv::kFp8Pointwise32Split4: case WsConv::kFp8Pointwise32Split8:
    case WsConv::kFp8Pointwise32Split16: case WsConv::kFp8Pointwise64Split4: return true;
    default: return false;
  }
}

kernels::Conv2dGeometry conv_geometry(const BindContext& c, const ir::Shape& x, const ir::Shape& wt, const ir::Shape& y) {
  const Window2d win = window_of(c.node, x, y, {wt[2], wt[3]});
  kernels::Conv2dGeometry g;
  g.n = x[0]; g.c_in = x[1]; g.in_h = x[2]; g.in_w = x[3];
  g.c_out = y[1]; g.out_h = y[2]; g.out_w = y[3];
  g.group = attr_i(c.node, "group", 1);
  g.kernel_h = wt[2]; g.kernel_w = wt[3];
  g.stride_h = win.s[0]; g.stride_w = win.s[1];
  g.dilation_h = win.d[0]; g.dilation_w = win.d[1];
  g.pad_top = win.pb[0]; g.pad_left = win.pb[1]; g.pad_bottom = win.pe[0]; g.pad_right = win.pe[1];
  return g;
}

namespace {
// Split-K tactics of a pointwise conv, {32x32 split 4, 64x64 split 4, 32x32 split 8, 32x32 split 16}: where the tile
// grid is small next to the SM count and K is deep enough to split (8 needs K >= 256, 16 needs K >= 512).
void push_split_k(const kernels::Conv2dGeometry& g, std::vector<WsConv>& r, const std::array<WsConv, 4>& splits) {
  const int64_t n_hw = g.out_h * g.out_w, blocks32 = g.n * ((n_hw + 31) / 32) * ((g.c_out + 31) / 32);
  if (g.c_in < 128 || blocks32 >= 264) return;
  r.push_back(splits[0]);
  r.push_back(splits[1]);
  if (g.c_in >= 256) r.push_back(splits[2]);
  if (g.c_in >= 512) r.push_back(splits[3]);
}
}  // namespace

std::vector<WsConv> ws_conv_candidates(const BindContext& c, const kernels::Conv2dGeometry& g, bool tensor_cores) {
  std::vector<WsConv> r;
  if (!(c.options.tactic_sources & kTacticWarpStream) || !kernels::validate_conv2d(g).is_ok()) return r;
  const bool dw = kernels::conv2d_depthwise_applicable(g);
  if (dw) {
    r.push_back(WsConv::kDepthwise);
    if (g.out_w >= 4) r.push_back(WsConv::kDepthwise4);
  }
  if (kernels::conv2d_pointwise_applicable(g) && g.n <= 65535 && (c.precision == Precision::kFloat32 || tensor_cores)) {
    r.push_back(WsConv::kPointwise64);
    r.push_back(WsConv::kPointwise32);
    push_split_k(g, r, {WsConv::kPointwise32Split4, WsConv::kPointwise64Split4, WsConv::kPointwise32Split8, WsConv::kPointwise32Split16});
  }
  const int64_t reduction = g.c_in / g.group * g.kernel_h * g.kernel_w;
  if (r.empty() || (!dw && reduction <= kDirectMaxReduction)) r.push_back(WsConv::kDirect);
  return r;
}

std::vector<DwPwTactic> dwpw_candidates(const kernels::Conv2dGeometry& pw) {
  using kernels::PointwiseTile;
  std::vector<WsConv> split;
  push_split_k(pw, split, {WsConv::kPointwise32Split4, WsConv::kPointwise64Split4, WsConv::kPointwise32Split8, WsConv::kPointwise32Split16});
  std::vector<DwPwTactic> r = {{PointwiseTile::k64x64, 1}, {PointwiseTile::k32x32, 1}};
  for (WsConv o : split) r.push_back({o == WsConv::kPointwise64Split4 ? PointwiseTile::k64x64 : PointwiseTile::k32x32, ws_conv_splits(o)});
  return r;
}

std::vector<WsConv> ws_conv_fp8_candidates(const BindContext& c, const kernels::Conv2dGeometry& g) {
  std::vector<WsConv> r;
  if (!(c.options.tactic_sources & kTacticWarpStream) || !kernels::validate_conv2d(g).is_ok() || !kernels::conv2d_pointwise_applicable(g) ||
      g.n > 65535)
    return r;
  r = {WsConv::kFp8Pointwise64, WsConv::kFp8Pointwise32};
  push_split_k(g, r, {WsConv::kFp8Pointwise32Split4, WsConv::kFp8Pointwise64Split4, WsConv::kFp8Pointwise32Split8, WsConv::kFp8Pointwise32Split16});
  return r;
}

}  // namespace ws::cudaexec
