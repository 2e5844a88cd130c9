// One CUTLASS instantiation (sm_90a): f16 output, pingpong_128x128x128, cluster 2x1x1. See gemm_s8_cutlass_kernel.cuh.
#include "kernels/gemm/cutlass/gemm_s8_cutlass_kernel.cuh"

namespace ws::kernels::cutlass_sm90 {

RunResult f16_pingpong_128x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes, std::unique_ptr<PlanState>* plan) {
  using Cfg = GemmS8Config<cutlass::half_t, true, PingpongTile, Cluster2x1, Pingpong, PingpongEpi>;
  return plan_config<Cfg, true>(r, workspace, workspace_bytes, plan);
}

}  // namespace ws::kernels::cutlass_sm90
