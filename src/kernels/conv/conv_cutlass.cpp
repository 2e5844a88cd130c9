// Dispatcher of the CUTLASS conv2d fprop tactic (see conv_cutlass.h). The kernels live in cutlass/*.cu (the CUTLASS
// static library compiled for sm_90a, only when the headers are found at configure time: WS_HAVE_CUTLASS_CONV).
#include "kernels/conv/conv_cutlass.h"

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/cuda_util.h"
#ifdef WS_HAVE_CUTLASS_CONV
#include "kernels/conv/cutlass/conv_cutlass_impl.h"
#endif

namespace ws::kernels {

const char* cutlass_conv_tile_name(CutlassConvTile t) {
  switch (t) {
    case CutlassConvTile::k64x64x32s4: return "64x64x32_s4";
    case CutlassConvTile::k64x64x64s3: return "64x64x64_s3";
    case CutlassConvTile::k64x64x32s4c8: return "64x64x32_s4_c8";
  }
  return "?";
}

int cutlass_conv_tile_k(CutlassConvTile t) { return t == CutlassConvTile::k64x64x64s3 ? 64 : 32; }

bool conv2d_cutlass_built() {
#ifdef WS_HAVE_CUTLASS_CONV
  return true;
#else
  return false;
#endif
}

namespace {

// What the CUTLASS form covers beyond validate_conv2d; empty when covered.
std::string not_covered(const Conv2dGeometry& g, CutlassConvTile tile, Activation act, int splits) {
  if (Status v = validate_conv2d(g); !v.is_ok()) return v.message();
  if (g.group != 1) return "grouped convs are not covered (group " + std::to_string(g.group) + ")";
  if (g.c_in % 8 != 0) return "c_in " + std::to_string(g.c_in) + " is not a multiple of 8 (16-byte fp16 loads)";
  if (g.c_out % 8 != 0) return "c_out " + std::to_string(g.c_out) + " is not a multiple of 8 (16-byte fp16 stores)";
  if (act != Activation::kRelu && act != Activation::kNone)
    return std::string("activation ") + activation_name(act) + " is not covered (ReLU or none)";
  if (splits < 1 || splits > kCutlassConvMaxSplits)
    return "splits " + std::to_string(splits) + " outside 1.." + std::to_string(kCutlassConvMaxSplits);
  if (tile == CutlassConvTile::k64x64x32s4c8 && (g.c_in != 8 || splits != 1))
    return "tile 64x64x32_s4_c8 (fixed channels) covers c_in 8 at split 1 only (c_in " + std::to_string(g.c_in) + ", splits " +
           std::to_string(splits) + ")";
  if (splits > 1 && g.c_in < int64_t{splits} * cutlass_conv_tile_k(tile))
    return "split-K " + std::to_string(splits) + " needs c_in >= " + std::to_string(splits * cutlass_conv_tile_k(tile)) + " (tile " +
           cutlass_conv_tile_name(tile) + ": each slice takes whole " + std::to_string(cutlass_conv_tile_k(tile)) + "-channel chunks)";
  // Every tensor under 2^31 bytes (CUTLASS's can_implement), checked here first so the int casts below are exact. The
  // products in double: exact below 2^53, and anything above that is far beyond the bound anyway.
  constexpr int64_t kMax = (int64_t{1} << 30) - 1;  // fp16 elements
  for (int64_t d : {g.n, g.in_h, g.in_w, g.c_in, g.c_out, g.kernel_h, g.kernel_w, g.out_h, g.out_w})
    if (d > kMax) return "a dimension of 2^30 or more (CUTLASS's 32-bit offsets)";
  const auto elems = [](int64_t a, int64_t b, int64_t c, int64_t d) { return double(a) * double(b) * double(c) * double(d); };
  if (elems(g.n, g.in_h, g.in_w, g.c_in) > double(kMax) || elems(g.c_out, g.kernel_h, g.kernel_w, g.c_in) > double(kMax) ||
      elems(g.n, g.out_h, g.out_w, g.c_out) > double(kMax))
    return "a tensor of 2^30 or more fp16 elements (CUTLASS's 32-bit offsets)";
  if (g.pad_top > kMax || g.pad_left > kMax || g.stride_h > kMax || g.stride_w > kMax || g.dilation_h > kMax || g.dilation_w > kMax)
    return "pads, strides or dilations beyond 2^30";
  return {};
}

#ifdef WS_HAVE_CUTLASS_CONV
cutlass_conv::ConvFn conv_fn(CutlassConvTile tile, Activation act) {
  using namespace cutlass_conv;
  const bool relu = act == Activation::kRelu;
  switch (tile) {
    case CutlassConvTile::k64x64x32s4: return relu ? f16_relu_64x64x32_s4 : f16_linear_64x64x32_s4;
    case CutlassConvTile::k64x64x64s3: return relu ? f16_relu_64x64x64_s3 : f16_linear_64x64x64_s3;
    case CutlassConvTile::k64x64x32s4c8: return relu ? f16_relu_64x64x32_s4_c8 : f16_linear_64x64x32_s4_c8;
  }
  return nullptr;
}

cutlass_conv::ConvArgs conv_args(const Conv2dGeometry& g, int splits) {
  cutlass_conv::ConvArgs a{};
  a.n = int(g.n); a.h = int(g.in_h); a.w = int(g.in_w); a.c = int(g.c_in); a.k = int(g.c_out);
  a.r = int(g.kernel_h); a.s = int(g.kernel_w); a.p = int(g.out_h); a.q = int(g.out_w);
  a.pad_h = int(g.pad_top); a.pad_w = int(g.pad_left); a.stride_h = int(g.stride_h); a.stride_w = int(g.stride_w);
  a.dilation_h = int(g.dilation_h); a.dilation_w = int(g.dilation_w);
  a.splits = splits;
  return a;
}

// Compute capability 9.0, learned once per device (the kernels are sm_90a SASS only).
Status require_sm90() {
  static std::atomic<int> cc[64];  // 0 = not yet known, else major·10 + minor
  int dev = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return invalid_argument("conv2d_cutlass: device ordinal " + std::to_string(dev) + " above 63");
  int v = cc[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0, minor = 0;
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    v = major * 10 + minor;
    cc[dev].store(v, std::memory_order_relaxed);
  }
  if (v != 90)
    return unsupported("conv2d_cutlass: the CUTLASS conv kernels are built for sm_90a; this GPU is compute capability " + std::to_string(v / 10) +
                       "." + std::to_string(v % 10));
  return Status::ok();
}
#endif

}  // namespace

Status conv2d_cutlass_check(const Conv2dGeometry& g, CutlassConvTile tile, Activation act, int splits, size_t* semaphore_ints) {
  if (semaphore_ints) *semaphore_ints = 0;
#ifndef WS_HAVE_CUTLASS_CONV
  (void)g, (void)tile, (void)act, (void)splits;
  return unsupported("conv2d_cutlass: not built (configure with the CUTLASS headers: scripts/fetch-cutlass-headers.sh or -DWS_CUTLASS_DIR)");
#else
  if (const std::string why = not_covered(g, tile, act, splits); !why.empty()) return invalid_argument("conv2d_cutlass: " + why);
  size_t sem = 0;
  const cutlass_conv::RunResult r = conv_fn(tile, act)(conv_args(g, splits), false, &sem);
  if (r != cutlass_conv::RunResult::kOk)
    return invalid_argument(std::string("conv2d_cutlass: CUTLASS can_implement() refused the problem (tile ") + cutlass_conv_tile_name(tile) +
                            ", splits " + std::to_string(splits) + ")");
  if (semaphore_ints) *semaphore_ints = sem;
  return Status::ok();
#endif
}

Result<float> conv2d_cutlass_epilogue_on_host(Activation act, float acc, float src, int k, int count) {
#ifndef WS_HAVE_CUTLASS_CONV
  (void)act, (void)acc, (void)src, (void)k, (void)count;
  return unsupported("conv2d_cutlass: not built");
#else
  if (act != Activation::kRelu && act != Activation::kNone) return invalid_argument("conv2d_cutlass_epilogue_on_host: ReLU or none");
  if (count < 1 || k < 0 || k >= count) return invalid_argument("conv2d_cutlass_epilogue_on_host: slice k outside 0..count-1");
  return act == Activation::kRelu ? cutlass_conv::f16_relu_epilogue_on_host(acc, src, k, count)
                                  : cutlass_conv::f16_linear_epilogue_on_host(acc, src, k, count);
#endif
}

Status conv2d_cutlass(const Conv2dGeometry& g, CutlassConvTile tile, int splits, const void* x, const void* w, const void* bias, void* y,
                      Activation act, int* semaphores, cudaStream_t stream, bool pdl) {
#ifndef WS_HAVE_CUTLASS_CONV
  (void)x, (void)w, (void)bias, (void)y, (void)semaphores, (void)stream, (void)pdl;
  return conv2d_cutlass_check(g, tile, act, splits);
#else
  size_t sem = 0;
  WS_RETURN_IF_ERROR(conv2d_cutlass_check(g, tile, act, splits, &sem));
  if (!x || !w || !bias || !y) return invalid_argument("conv2d_cutlass: null x, w, bias or y");
  const auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; };
  if (misaligned(x) || misaligned(w) || misaligned(bias) || misaligned(y))
    return invalid_argument("conv2d_cutlass: an operand (x, w, bias or y) is not 16-byte aligned");
  if (sem > 0 && !semaphores)
    return invalid_argument("conv2d_cutlass: split-K " + std::to_string(splits) + " needs " + std::to_string(sem) + " zeroed int semaphores");
  WS_RETURN_IF_ERROR(require_sm90());
  cutlass_conv::ConvArgs a = conv_args(g, splits);
  a.x = x; a.weight = w; a.bias = bias; a.y = y; a.semaphore = semaphores; a.stream = stream; a.pdl = pdl;
  switch (conv_fn(tile, act)(a, true, nullptr)) {
    case cutlass_conv::RunResult::kOk: return Status::ok();
    case cutlass_conv::RunResult::kUnsupported: return invalid_argument("conv2d_cutlass: CUTLASS refused the launch");
    case cutlass_conv::RunResult::kError: break;
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return internal_error("conv2d_cutlass: the launch failed without a CUDA error");
#endif
}

}  // namespace ws::kernels
