// conv_transpose.cpp — ConvTranspose-11 (https://onnx.ai/onnx/operators/onnx__ConvTranspose.html):
// every input element scatters kernel × weight into the output at o = i·stride − pad_begin + k·dilation.
// Spatial rank 1..3 handled as 3-D with unit extents.
#include "reference/ops_ext.h"

namespace ws::ref {

void conv_transpose_nd(const float* x, const float* w, const float* bias, float* y, const ConvTransposeParams& p) {
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t in_sp = p.in[0] * p.in[1] * p.in[2];
  const int64_t out_sp = p.out[0] * p.out[1] * p.out[2];
  const int64_t k_sp = p.kernel[0] * p.kernel[1] * p.kernel[2];
  for (int64_t b = 0; b < p.n; ++b) {
    float* yb = y + b * p.c_out * out_sp;
    for (int64_t co = 0; co < p.c_out; ++co)
      for (int64_t o = 0; o < out_sp; ++o) yb[co * out_sp + o] = bias ? bias[co] : 0.0f;
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t cil = 0; cil < cin_g; ++cil) {
        const int64_t ci = g * cin_g + cil;
        const float* xc = x + (b * p.c_in + ci) * in_sp;
        for (int64_t col = 0; col < cout_g; ++col) {
          const int64_t co = g * cout_g + col;
          const float* wk = w + (ci * cout_g + col) * k_sp;
          float* yc = yb + co * out_sp;
          for (int64_t i0 = 0; i0 < p.in[0]; ++i0)
            for (int64_t i1 = 0; i1 < p.in[1]; ++i1)
              for (int64_t i2 = 0; i2 < p.in[2]; ++i2) {
                const float xv = xc[(i0 * p.in[1] + i1) * p.in[2] + i2];
                for (int64_t k0 = 0; k0 < p.kernel[0]; ++k0) {
                  const int64_t o0 = i0 * p.stride[0] - p.pad_begin[0] + k0 * p.dilation[0];
                  if (o0 < 0 || o0 >= p.out[0]) continue;
                  for (int64_t k1 = 0; k1 < p.kernel[1]; ++k1) {
                    const int64_t o1 = i1 * p.stride[1] - p.pad_begin[1] + k1 * p.dilation[1];
                    if (o1 < 0 || o1 >= p.out[1]) continue;
                    for (int64_t k2 = 0; k2 < p.kernel[2]; ++k2) {
                      const int64_t o2 = i2 * p.stride[2] - p.pad_begin[2] + k2 * p.dilation[2];
                      if (o2 < 0 || o2 >= p.out[2]) continue;
                      yc[(o0 * p.out[1] + o1) * p.out[2] + o2] += xv * wk[(k0 * p.kernel[1] + k1) * p.kernel[2] + k2];
                    }
                  }
                }
              }
        }
      }
  }
}

}  // namespace ws::ref
