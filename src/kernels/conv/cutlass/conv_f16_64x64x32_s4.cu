// CUTLASS conv2d fprop instantiations (sm_90a build of Sm80 kernels): NHWC fp16, threadblock tile 64x64x32 (M pixels x
// N channels x K), 4-stage pipeline, 4 warps of 32x32; bias + ReLU and bias only. What they compute, the
// thread mapping and how to test and time them: conv_cutlass_kernel.cuh.
#include "kernels/conv/cutlass/conv_cutlass_kernel.cuh"

namespace ws::kernels::cutlass_conv {

RunResult f16_relu_64x64x32_s4(const ConvArgs& a, bool launch, size_t* semaphore_ints) {
  return run_config<ConvConfig<64, 64, 32, 32, 32, 4, true>>(a, launch, semaphore_ints);
}

RunResult f16_linear_64x64x32_s4(const ConvArgs& a, bool launch, size_t* semaphore_ints) {
  return run_config<ConvConfig<64, 64, 32, 32, 32, 4, false>>(a, launch, semaphore_ints);
}

float f16_relu_epilogue_on_host(float acc, float src, int k, int count) {
  return epilogue_on_host<ConvConfig<64, 64, 32, 32, 32, 4, true>>(acc, src, k, count);
}

float f16_linear_epilogue_on_host(float acc, float src, int k, int count) {
  return epilogue_on_host<ConvConfig<64, 64, 32, 32, 32, 4, false>>(acc, src, k, count);
}

}  // namespace ws::kernels::cutlass_conv
