#pragma once
// Internal to src/reference: a convolution/pooling window's spatial geometry padded to rank 3 with
// leading extents 1, so 1-D, 2-D and 3-D cases run through the same loops.

#include <cstdint>

namespace ws::ref::detail {

struct WindowGeometry {
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
};

/// P is ConvParams or PoolParams (same spatial fields).
template <typename P>
WindowGeometry make_window_geometry(const P& p) {
  WindowGeometry g;
  const int lead = 3 - p.rank;
  for (int i = 0; i < 3; ++i) {
    const int j = i - lead;
    const bool real = j >= 0;
    g.in[i] = real ? p.in[j] : 1;
    g.k[i] = real ? p.kernel[j] : 1;
    g.s[i] = real ? p.stride[j] : 1;
    g.d[i] = real ? p.dilation[j] : 1;
    g.pb[i] = real ? p.pad_begin[j] : 0;
    g.pe[i] = real ? p.pad_end[j] : 0;
    g.out[i] = real ? p.out[j] : 1;
  }
  return g;
}

}  // namespace ws::ref::detail
