#pragma once
/// \file gemm_s8_variants.h
/// Names of the INT8 GEMM backends the `warpstream gemm` driver runs (host-only, no CUDA: the CLI validates
/// --variant in CPU builds too). Operation names follow DESIGN.md (general -> specific).

#include <string>
#include <string_view>
#include <vector>

#include "warpstream/dtype.h"

namespace ws::kernels {

enum class GemmBackendKind { kNaive, kTiled, kMma, kCutlass, kCublasEx, kCublasLt };

struct GemmBackendInfo {
  std::string name;
  GemmBackendKind kind;
  int k_depth = 0, stride = 0;  ///< tiled
  int tile = 0;                 ///< mma: 0 = 128x128x64_s4, 1 = 128x256x64_s3; cutlass: 0 = pingpong, 1 = coop
  DType out = DType::kInt32;    ///< mma/cutlass output: kInt32, or kFloat16 / kBFloat16 (scaled epilogue)
};

inline std::vector<GemmBackendInfo> gemm_backends() {
  std::vector<GemmBackendInfo> v;
  v.push_back({"gemm_s8s8s32_dp4a_naive", GemmBackendKind::kNaive});
  for (int s : {65, 68})
    for (int kd : {32, 64, 128})
      v.push_back({"gemm_s8s8s32_dp4a_tiled_64x64x" + std::to_string(kd) + "_s" + std::to_string(s),
                   GemmBackendKind::kTiled, kd, s});
  const char* tiles[] = {"128x128x64_s4", "128x256x64_s3"};
  for (int t = 0; t < 2; ++t) {
    v.push_back({std::string("gemm_s8s8s32_mma_") + tiles[t], GemmBackendKind::kMma, 0, 0, t, DType::kInt32});
    v.push_back({std::string("gemm_s8s8f16_mma_") + tiles[t] + "_scaled", GemmBackendKind::kMma, 0, 0, t, DType::kFloat16});
    v.push_back({std::string("gemm_s8s8bf16_mma_") + tiles[t] + "_scaled", GemmBackendKind::kMma, 0, 0, t, DType::kBFloat16});
  }
  // CUTLASS 3.x sm_90a (TMA + wgmma, warp-specialised); listed even when not built (then "n/a: not built").
  const char* sched[] = {"pingpong_128x128x128_c2x1", "coop_256x128x128_c2x1"};
  for (int t = 0; t < 2; ++t) {
    v.push_back({std::string("cutlass_s8s8s32_sm90a_") + sched[t], GemmBackendKind::kCutlass, 0, 0, t, DType::kInt32});
    v.push_back({std::string("cutlass_s8s8f16_sm90a_") + sched[t] + "_scaled", GemmBackendKind::kCutlass, 0, 0, t, DType::kFloat16});
    v.push_back({std::string("cutlass_s8s8bf16_sm90a_") + sched[t] + "_scaled", GemmBackendKind::kCutlass, 0, 0, t, DType::kBFloat16});
  }
  v.push_back({"cublas_gemmex_s8s8s32_nn", GemmBackendKind::kCublasEx});
  v.push_back({"cublaslt_s8s8s32_tn", GemmBackendKind::kCublasLt});
  return v;
}

/// True when `filter` is empty, equals a backend name, or is a prefix/substring group ("dp4a_tiled", "mma");
/// a comma-separated filter matches when any of its parts does ("cutlass_s8s8s32,mma_128x128").
inline bool gemm_variant_matches(std::string_view filter, std::string_view name) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (start <= filter.size()) {
    size_t end = filter.find(',', start);
    if (end == std::string_view::npos) end = filter.size();
    std::string_view part = filter.substr(start, end - start);
    if (!part.empty() && name.find(part) != std::string_view::npos) return true;
    start = end + 1;
  }
  return false;
}
inline bool gemm_variant_known(std::string_view filter) {
  if (filter.empty()) return true;
  for (auto& b : gemm_backends())
    if (gemm_variant_matches(filter, b.name)) return true;
  return false;
}

}  // namespace ws::kernels
