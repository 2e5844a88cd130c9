// CUTLASS conv2d fprop instantiations (sm_90a build of Sm80 kernels) for exactly 8 input channels (an RGB input padded
// to 8: CudaBuildOptions::hwc8_input): NHWC fp16, threadblock tile 64x64x32 (M pixels x N channels x K = 4 taps x 8
// channels), 4-stage pipeline, 4 warps of 32x32, IteratorAlgorithm::kFixedChannels; bias + ReLU and bias only; split 1
// only. What they compute, the thread mapping and how to test and time them: conv_cutlass_kernel.cuh.
#include "kernels/conv/cutlass/conv_cutlass_kernel.cuh"

namespace ws::kernels::cutlass_conv {

using cutlass::conv::IteratorAlgorithm;

RunResult f16_relu_64x64x32_s4_c8(const ConvArgs& a, bool launch, size_t* semaphore_ints) {
  if (a.splits != 1) return RunResult::kUnsupported;
  return run_config<ConvConfig<64, 64, 32, 32, 32, 4, true, IteratorAlgorithm::kFixedChannels>>(a, launch, semaphore_ints);
}

RunResult f16_linear_64x64x32_s4_c8(const ConvArgs& a, bool launch, size_t* semaphore_ints) {
  if (a.splits != 1) return RunResult::kUnsupported;
  return run_config<ConvConfig<64, 64, 32, 32, 32, 4, false, IteratorAlgorithm::kFixedChannels>>(a, launch, semaphore_ints);
}

}  // namespace ws::kernels::cutlass_conv
