// Fused image preprocess: RGB8 interleaved [src_h, src_w, 3] (device memory or mapped pinned host
// memory) → bilinear, pixel-centre aligned (half_pixel, no antialias) → ×1/255 → (x − mean[c])·inv_std[c]
// → written straight into the network input tensor, in one of two layouts:
//   preprocess_rgb8_to_nchw:  NCHW [1, 3, dst_h, dst_w] float32 or fp16;
//   preprocess_rgb8_to_nhwc8: fp16 [1, dst_h, dst_w, 8] (TensorFormat::kHWC8: channels 3..7 zero), for an engine
//                             input taken in kHWC8 (CudaBuildOptions::hwc8_input_port).
// Thread mapping, row-staged (source rows up to kPreprocessStagedMaxRowBytes): one block of 256 threads per destination row dy;
// the block first copies the two source rows it samples (y0, y1) into shared memory with 16-byte loads, consecutive
// threads on consecutive vectors (a warp reads 512 contiguous bytes: full 128-byte lines, the widest PCIe reads a
// mapped source gets, all issued before any is used), then each thread computes pixels dx = tid, tid + 256, ...
// from shared memory. Row-publishing form (a ws::RowSignal given; the lanes' input wavefront): the same kernel on
// min(dst_h, kPreprocessPublishBlocks) blocks, block b taking rows b, b + grid, ... in order; it triggers its PDL
// dependents at block start and publishes each row once written (kernels/row_signal.cuh), so the network's stem,
// launched early, starts on the top rows while the bottom ones still cross PCIe. Wider sources: one thread per destination pixel reading the source directly, block 32×8,
// grid ceil(dst_w/32) × ceil(dst_h/8). Stores: NCHW: warps write consecutive elements of one row of each plane;
// NHWC8: each thread one 16-byte store per pixel (3 values + 5 zeros).
// Exactness: the expressions and their order are those of src/reference/preprocess.cpp; every float
// operation is an explicit round-to-nearest intrinsic (__fmul_rn/__fadd_rn/__fsub_rn), which nvcc
// never contracts into an FMA whatever -fmad says, and scale_x/scale_y/1/255 are computed on the host
// exactly as the reference does. So float32 output is bit-identical to the reference, and each fp16 value
// (both layouts) is __float2half_rn of it.
// Test: tests/gpu/preprocess_test.cpp (ws_gpu_tests --gtest_filter='PreprocessGpu*'); the publishing form:
// tests/gpu/row_signal_test.cpp ('RowSignal*').
// Time: ws_gpu_tests --gtest_also_run_disabled_tests --gtest_filter='LanesKernelsTiming*'.
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include <algorithm>

#include "cuda/cuda_util.h"
#include "kernels/pdl.cuh"
#include "kernels/preprocess/preprocess_rgb8.h"
#include "kernels/row_signal.cuh"

namespace ws::kernels {
namespace {

constexpr int kBlockX = 32, kBlockY = 8;
constexpr int kStagedThreads = 256;

struct Params {
  float scale_x, scale_y;  // (float)src / (float)dst, rounded on the host like the reference
  float max_x, max_y;      // (float)(src - 1)
  float inv255;            // 1.0f / 255.0f
  float mean[3], inv_std[3];
};

__device__ __forceinline__ void store(float* out, int64_t i, float v) { out[i] = v; }
__device__ __forceinline__ void store(__half* out, int64_t i, float v) { out[i] = __float2half_rn(v); }

// Bilinear taps of one destination coordinate d (a row or a column): the reference's expressions, in its order.
//   sc = ((float)d + 0.5f) * scale - 0.5f, clamped to [0, src_n - 1]; c0 = floor(sc), c1 = min(c0 + 1, src_n - 1).
__device__ __forceinline__ void source_coord(int d, float scale, float max_c, int src_n, int& c0, int& c1, float& f) {
  float sc = __fsub_rn(__fmul_rn(__fadd_rn(float(d), 0.5f), scale), 0.5f);
  sc = fminf(fmaxf(sc, 0.0f), max_c);
  c0 = int(floorf(sc));
  c1 = min(c0 + 1, src_n - 1);
  f = __fsub_rn(sc, float(c0));
}

// The three normalised channels from source rows row0 (y0) and row1 (y1) at columns x0, x1 (global or shared memory).
__device__ __forceinline__ void bilinear3(const uint8_t* row0, const uint8_t* row1, int x0, int x1, float fx, float fy, const Params& p,
                                          float out[3]) {
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    const float p00 = float(row0[x0 * 3 + c]), p01 = float(row0[x1 * 3 + c]);
    const float p10 = float(row1[x0 * 3 + c]), p11 = float(row1[x1 * 3 + c]);
    const float top = __fadd_rn(p00, __fmul_rn(__fsub_rn(p01, p00), fx));
    const float bottom = __fadd_rn(p10, __fmul_rn(__fsub_rn(p11, p10), fx));
    const float v = __fadd_rn(top, __fmul_rn(__fsub_rn(bottom, top), fy));
    out[c] = __fmul_rn(__fsub_rn(__fmul_rn(v, p.inv255), p.mean[c]), p.inv_std[c]);
  }
}

// The three normalised channels of destination pixel (dx, dy), read straight from the source.
__device__ __forceinline__ void sample_pixel(const uint8_t* __restrict__ rgb, int src_h, int src_w, int64_t src_row_bytes,
                                             int dx, int dy, const Params& p, float out[3]) {
  int y0, y1, x0, x1;
  float fy, fx;
  source_coord(dy, p.scale_y, p.max_y, src_h, y0, y1, fy);
  source_coord(dx, p.scale_x, p.max_x, src_w, x0, x1, fx);
  bilinear3(rgb + int64_t(y0) * src_row_bytes, rgb + int64_t(y1) * src_row_bytes, x0, x1, fx, fy, p, out);
}

// Where a destination pixel's three values go (the kernel's store policy): NCHW planes of OutT ...
template <typename OutT>
struct NchwStore {
  OutT* __restrict__ out;
  int64_t plane;  // dst_h · dst_w
  __device__ __forceinline__ void operator()(int64_t o, const float v[3]) const {
#pragma unroll
    for (int c = 0; c < 3; ++c) store(out, c * plane + o, v[c]);
  }
};

// ... or fp16 [1, dst_h, dst_w, 8]: pixel o is one 16-byte vector {R, G, B, 0, 0, 0, 0, 0}.
struct Nhwc8Store {
  uint4* __restrict__ out;
  __device__ __forceinline__ void operator()(int64_t o, const float v[3]) const {
    // little-endian: channel 0 in the low half of px.x; channels 3..7 (the high half of px.y, px.z, px.w) +0
    uint4 px;
    px.x = unsigned(__half_as_ushort(__float2half_rn(v[0]))) | (unsigned(__half_as_ushort(__float2half_rn(v[1]))) << 16);
    px.y = unsigned(__half_as_ushort(__float2half_rn(v[2])));
    px.z = 0u;
    px.w = 0u;
    out[o] = px;
  }
};

template <class Store>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    preprocess_rgb8_kernel(const uint8_t* __restrict__ rgb, int src_h, int src_w, int64_t src_row_bytes, int dst_h, int dst_w, Params p,
                           Store store) {
  const int dx = blockIdx.x * kBlockX + threadIdx.x;
  const int dy = blockIdx.y * kBlockY + threadIdx.y;
  if (dx >= dst_w || dy >= dst_h) return;
  float v[3];
  sample_pixel(rgb, src_h, src_w, src_row_bytes, dx, dy, p, v);
  store(int64_t(dy) * dst_w + dx, v);
}

// Copies `n` bytes of one source row at `src` into `dst` + (src & 15) (so that 16-byte source vectors land 16-byte
// aligned): head bytes, then 16-byte vectors (consecutive threads, consecutive vectors), then tail bytes.
__device__ __forceinline__ void stage_row(const uint8_t* __restrict__ src, int n, uint8_t* dst) {
  const int mis = int(reinterpret_cast<uintptr_t>(src) & 15);
  const int head = min(n, (16 - mis) & 15);
  const int vecs = (n - head) / 16;
  const int tail_begin = head + vecs * 16;
  uint8_t* d = dst + mis;
  for (int i = threadIdx.x; i < head; i += blockDim.x) d[i] = src[i];
  const uint4* sv = reinterpret_cast<const uint4*>(src + head);
  uint4* dv = reinterpret_cast<uint4*>(d + head);
  for (int v = threadIdx.x; v < vecs; v += blockDim.x) dv[v] = sv[v];
  for (int i = tail_begin + int(threadIdx.x); i < n; i += blockDim.x) d[i] = src[i];
}

template <class Store>
__global__ void __launch_bounds__(kStagedThreads)
    preprocess_rgb8_staged_kernel(const uint8_t* __restrict__ rgb, int src_h, int src_w, int64_t src_row_bytes, int dst_h, int dst_w,
                                  Params p, Store store, RowSignal publish) {
  extern __shared__ __align__(16) uint8_t rows[];
  uint32_t target = 0;
  if (publish.flags) {  // the wavefront: the consumer (launched with PDL) may start now; it waits for each row's flag
    device::pdl_allow_dependents();
    target = device::row_target(publish);
  }
  const int n = 3 * src_w;
  const int stride = (n + 31) & ~15;  // one staged row: n bytes at offset (address & 15), 16-byte aligned rows
  // Rows dy = blockIdx.x, blockIdx.x + gridDim.x, ...: one row per block when the grid is dst_h blocks; a smaller grid
  // (the publishing form) takes the rows in order, so they become ready from the top while the link stays busy.
  for (int dy = blockIdx.x; dy < dst_h; dy += gridDim.x) {
    int y0, y1;
    float fy;
    source_coord(dy, p.scale_y, p.max_y, src_h, y0, y1, fy);
    const uint8_t* r0 = rgb + int64_t(y0) * src_row_bytes;
    const uint8_t* r1 = rgb + int64_t(y1) * src_row_bytes;
    if (dy != int(blockIdx.x)) __syncthreads();  // the previous row's readers are done with the staging buffer
    stage_row(r0, n, rows);
    if (y1 != y0) stage_row(r1, n, rows + stride);  // the last row (or a 1-row image) samples one source row twice
    __syncthreads();
    const uint8_t* row0 = rows + (reinterpret_cast<uintptr_t>(r0) & 15);
    const uint8_t* row1 = y1 != y0 ? rows + stride + (reinterpret_cast<uintptr_t>(r1) & 15) : row0;
    for (int dx = threadIdx.x; dx < dst_w; dx += blockDim.x) {
      int x0, x1;
      float fx;
      source_coord(dx, p.scale_x, p.max_x, src_w, x0, x1, fx);
      float v[3];
      bilinear3(row0, row1, x0, x1, fx, fy, p, v);
      store(int64_t(dy) * dst_w + dx, v);
    }
    if (publish.flags) device::publish_row(publish, dy, target);
  }
}

// The launchers' shared argument checks (kInvalidArgument naming the bad value). Messages are built only on the
// error paths: this runs per frame in direct enqueue (no allocation there).
Status check_args(const char* what, const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes, const void* out,
                  int64_t dst_h, int64_t dst_w) {
  auto dims = [&] {
    return "source " + std::to_string(src_w) + "x" + std::to_string(src_h) + ", destination " + std::to_string(dst_w) +
           "x" + std::to_string(dst_h);
  };
  if (src_h < 1 || src_w < 1 || dst_h < 1 || dst_w < 1)
    return invalid_argument(std::string(what) + ": image extents must be >= 1, got " + dims());
  if (src_h > kPreprocessMaxSrcExtent || src_w > kPreprocessMaxSrcExtent || dst_h > kPreprocessMaxDstExtent ||
      dst_w > kPreprocessMaxDstExtent)
    return invalid_argument(std::string(what) + ": extents too large (" + dims() + "; limits: source side <= " +
                            std::to_string(kPreprocessMaxSrcExtent) + ", destination side <= " +
                            std::to_string(kPreprocessMaxDstExtent) + ")");
  if (src_row_bytes < 3 * src_w)
    return invalid_argument(std::string(what) + ": row pitch " + std::to_string(src_row_bytes) +
                            " bytes is less than 3 * width = " + std::to_string(3 * src_w));
  if (!rgb || !out) return invalid_argument(std::string(what) + ": null image or output pointer");
  return Status::ok();
}

Params make_params(int64_t src_h, int64_t src_w, int64_t dst_h, int64_t dst_w, const PreprocessNormalize& norm) {
  Params p;
  p.scale_x = static_cast<float>(src_w) / static_cast<float>(dst_w);
  p.scale_y = static_cast<float>(src_h) / static_cast<float>(dst_h);
  p.max_x = static_cast<float>(src_w - 1);
  p.max_y = static_cast<float>(src_h - 1);
  p.inv255 = 1.0f / 255.0f;
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = norm.mean[c];
    p.inv_std[c] = norm.inv_std[c];
  }
  return p;
}

// One launch of the kernel with `store` on `stream` (arguments already checked).
template <class Store>
Status launch(const char* what, const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes, int64_t dst_h, int64_t dst_w,
              const PreprocessNormalize& norm, Store store, cudaStream_t stream, PreprocessPath path, const RowSignal& publish) {
  const Params p = make_params(src_h, src_w, dst_h, dst_w, norm);
  if (publish) {
    if (path == PreprocessPath::kDirect || 3 * src_w > kPreprocessStagedMaxRowBytes)
      return invalid_argument(std::string(what) + ": publishing rows (RowSignal) needs the row-staged path (source rows up to " +
                              std::to_string(kPreprocessStagedMaxRowBytes) + " bytes; this source's are " + std::to_string(3 * src_w) +
                              ", path " + (path == PreprocessPath::kDirect ? "kDirect" : "kAuto/kStaged") + ")");
    if (publish.rows != dst_h || !publish.epoch || !publish.error)
      return invalid_argument(std::string(what) + ": the RowSignal " +
                              (publish.rows != dst_h ? "has " + std::to_string(publish.rows) + " rows for a destination of " + std::to_string(dst_h) +
                                                           " rows"
                                                     : std::string("is incomplete")) +
                              (!publish.epoch ? ", no epoch word" : "") + (!publish.error ? ", no error word" : ""));
    const size_t smem = 2 * size_t((3 * src_w + 31) & ~int64_t{15});
    const unsigned grid = unsigned(std::min<int64_t>(dst_h, kPreprocessPublishBlocks));
    preprocess_rgb8_staged_kernel<Store><<<grid, kStagedThreads, smem, stream>>>(rgb, int(src_h), int(src_w), src_row_bytes, int(dst_h),
                                                                                int(dst_w), p, store, publish);
    WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
  }
  if (path == PreprocessPath::kStaged && 3 * src_w > kPreprocessStagedMaxRowBytes)
    return invalid_argument(std::string(what) + ": the row-staged path takes source rows up to " + std::to_string(kPreprocessStagedMaxRowBytes) +
                            " bytes; this source's are " + std::to_string(3 * src_w) + " (use PreprocessPath::kAuto)");
  if (path == PreprocessPath::kStaged || (path == PreprocessPath::kAuto && preprocess_staged_pays(src_w, dst_w))) {
    const size_t smem = 2 * size_t((3 * src_w + 31) & ~int64_t{15});
    preprocess_rgb8_staged_kernel<Store><<<unsigned(dst_h), kStagedThreads, smem, stream>>>(rgb, int(src_h), int(src_w), src_row_bytes,
                                                                                         int(dst_h), int(dst_w), p, store, RowSignal{});
    WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
  }
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(unsigned((dst_w + kBlockX - 1) / kBlockX), unsigned((dst_h + kBlockY - 1) / kBlockY));
  preprocess_rgb8_kernel<Store><<<grid, block, 0, stream>>>(rgb, int(src_h), int(src_w), src_row_bytes, int(dst_h), int(dst_w), p, store);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace

bool preprocess_staged_pays(int64_t src_w, int64_t dst_w) {
  return 3 * src_w <= kPreprocessStagedMaxRowBytes && src_w <= kPreprocessStagedMaxDownscale * dst_w;
}

Status preprocess_rgb8_to_nchw(const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes, void* out,
                               DType out_dtype, int64_t dst_h, int64_t dst_w, const PreprocessNormalize& norm,
                               cudaStream_t stream, PreprocessPath path, const RowSignal& publish) {
  WS_RETURN_IF_ERROR(check_args("preprocess (GPU)", rgb, src_h, src_w, src_row_bytes, out, dst_h, dst_w));
  if (out_dtype != DType::kFloat32 && out_dtype != DType::kFloat16)
    return invalid_argument("preprocess (GPU): output element type " + dtype_name(out_dtype) +
                            " (float32 or float16 only)");
  const int64_t plane = dst_h * dst_w;
  if (out_dtype == DType::kFloat16)
    return launch("preprocess (GPU)", rgb, src_h, src_w, src_row_bytes, dst_h, dst_w, norm,
                  NchwStore<__half>{static_cast<__half*>(out), plane}, stream, path, publish);
  return launch("preprocess (GPU)", rgb, src_h, src_w, src_row_bytes, dst_h, dst_w, norm, NchwStore<float>{static_cast<float*>(out), plane},
                stream, path, publish);
}

Status preprocess_rgb8_to_nhwc8(const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes, void* out,
                                DType out_dtype, int64_t dst_h, int64_t dst_w, const PreprocessNormalize& norm,
                                cudaStream_t stream, PreprocessPath path, const RowSignal& publish) {
  WS_RETURN_IF_ERROR(check_args("preprocess NHWC8 (GPU)", rgb, src_h, src_w, src_row_bytes, out, dst_h, dst_w));
  if (out_dtype != DType::kFloat16)
    return invalid_argument("preprocess NHWC8 (GPU): output element type " + dtype_name(out_dtype) +
                            " (float16 only: the kHWC8 port of an fp16 engine; a float32 engine takes NCHW, "
                            "preprocess_rgb8_to_nchw)");
  if (reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return invalid_argument("preprocess NHWC8 (GPU): output address is not 16-byte aligned (one 16-byte store per pixel)");
  return launch("preprocess NHWC8 (GPU)", rgb, src_h, src_w, src_row_bytes, dst_h, dst_w, norm, Nhwc8Store{static_cast<uint4*>(out)}, stream,
                path, publish);
}

}  // namespace ws::kernels
