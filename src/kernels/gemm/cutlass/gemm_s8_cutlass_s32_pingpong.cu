// One CUTLASS instantiation (sm_90a): s32 output, pingpong_128x128x128, cluster 2x1x1. See gemm_s8_cutlass_kernel.cuh.
#include "kernels/gemm/cutlass/gemm_s8_cutlass_kernel.cuh"

namespace ws::kernels::cutlass_sm90 {

RunResult s32_pingpong_128x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes, std::unique_ptr<PlanState>* plan) {
  using Cfg = GemmS8Config<int32_t, false, PingpongTile, Cluster2x1, Pingpong, PingpongEpi>;
  return plan_config<Cfg, false>(r, workspace, workspace_bytes, plan);
}

}  // namespace ws::kernels::cutlass_sm90
