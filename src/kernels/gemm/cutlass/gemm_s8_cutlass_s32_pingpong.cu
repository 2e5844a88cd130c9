// One CUTLASS instantiation (sm_90a): s32 output, pingpong_128x128x128, cluster 2x1x1. See gemm_s8_cutlass_kernel.cuh.
#include "kernels/gemm/cutlass/gemm_s8_cutlass_kernel.cuh"

namespace ws::kernels::cutlass_sm90 {

RunResult s32_pingpong_128x128x128(const RunArgs& r) {
  using Cfg = GemmS8Config<int32_t, false, PingpongTile, Cluster2x1, Pingpong, PingpongEpi>;
  return run_config<Cfg, false>(r);
}

}  // namespace ws::kernels::cutlass_sm90
