#pragma once
/// \file pdl.cuh
/// Programmatic dependent launch (PDL, CUDA 12 programming guide §"Programmatic Dependent Launch and
/// Synchronization"; Hopper, compute capability 9.0+) for WarpStream's own kernels.
///
/// A kernel launched with `pdl = true` (launch_kernel below: the launch attribute
/// cudaLaunchAttributeProgrammaticStreamSerialization) may start while the kernel before it on the stream (or
/// before it in a captured CUDA graph: a programmatic edge) is still running; its blocks get resident, run
/// their prologue, then block in `pdl_wait()` until that predecessor has completed and its memory is
/// visible. What overlaps is the launch latency and block scheduling of one kernel with the tail of the other —
/// the per-node gap of a graph of many small kernels (EfficientNet-Lite0: 72).
///
/// The contract every kernel in src/kernels that may be launched with pdl = true keeps:
/// - `pdl_allow_dependents()` once its main work is done: after the k-loop of a GEMM, before its epilogue; at the
///   end of a grid-stride loop (lets the *next* kernel be scheduled while this one drains; safe anywhere because
///   that kernel waits in its own pdl_wait() for this whole grid to finish — griddepcontrol.wait waits for
///   completion and memory flush of the prerequisite grid, not for the trigger). Not at the start: triggered
///   there, the dependents' blocks take SM slots while this grid still has blocks to run (device runs 40 and 44:
///   EfficientNet-Lite0 16–20 µs slower with PDL than without);
/// - `pdl_wait()` before the first global-memory access, read or write (so write-after-read hazards on a reused
///   arena range are covered as well as read-after-write).
/// Both are no-ops when the kernel was launched without the attribute and below sm_90 (compiled out).
/// Reads of constant data written at build (weights, packed fragments, bias) may precede pdl_wait(): no kernel of the
/// frame writes them (kernels::pooled_gemv prefetches its weight tile, kernels::stem7x7_maxpool stages its weights).
/// Exceptions, by design: the input wavefront's waiting kernels (warpstream/row_signal.h) read their input only after
/// its rows' flags and call pdl_wait() at their end instead; the stem publishing its rows triggers at block start.
/// Test: tests/gpu/cuda_engine_pdl_test.cpp (ws_gpu_tests --gtest_filter='CudaEnginePdl*').
#include <cuda_runtime.h>

#include <utility>

namespace ws::kernels::device {

/// griddepcontrol.launch_dependents: the dependent grid may be scheduled once every block of this grid has
/// executed this (or exited).
__device__ __forceinline__ void pdl_allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// griddepcontrol.wait: blocks until the prerequisite grids have completed and their memory operations are
/// visible. Returns at once when the kernel was launched without a programmatic dependency.
/// Built with WS_PDL_TRIGGER_AFTER_WAIT (an experiment, experiments/pdl_early_ab.sh): also triggers the dependents right
/// after the wait, so the next kernel is scheduled and runs its prologue while this one works. It cannot cascade down
/// the graph (the next kernel triggers only once its own wait has returned), unlike a trigger at block start (runs 40/44).
/// Measured in device run 95 (H100, alternated rows): no gain — EfficientNet-Lite0 GPU p50 229.4 against 226.2 µs (device
/// frame), ResNet-50 312.6 against 312.9; the lab's trivial layer costs 2.1 µs per boundary against 0.89 (the early
/// dependents take SM slots). Kept only as the A/B's build flag; the default stays the trigger after the main loop.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#ifdef WS_PDL_TRIGGER_AFTER_WAIT
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
#endif
}

}  // namespace ws::kernels::device

namespace ws::kernels {

/// Launches `kernel` on `stream` (capturable) with the programmatic-stream-serialization attribute when `pdl`,
/// as a plain launch otherwise. The kernel must keep the contract above. Returns the launch's error (also left
/// for cudaGetLastError, as a <<<>>> launch does).
/// The same with thread-block clusters (1, 1, cluster_z) along grid z (compute capability 9.0+; grid.z a multiple of
/// cluster_z). cluster_z 1 is a plain launch with no cluster attribute: a (1, 1, 1) cluster costs ~0.3 µs more per
/// graph edge (experiments/pdl_cluster_00_launch.cu, device run 86). Sizes above 8 need the kernel's
/// cudaFuncAttributeNonPortableClusterSizeAllowed set first.
template <typename... KernelArgs, typename... Args>
cudaError_t launch_kernel_cluster(bool pdl, unsigned cluster_z, void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem_bytes,
                                  cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2] = {};
  unsigned n = 0;
  if (cluster_z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = 1;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = cluster_z;
    ++n;
  }
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = n ? attr : nullptr;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

template <typename... KernelArgs, typename... Args>
cudaError_t launch_kernel(bool pdl, void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem_bytes,
                          cudaStream_t stream, Args&&... args) {
  return launch_kernel_cluster(pdl, 1, kernel, grid, block, smem_bytes, stream, std::forward<Args>(args)...);
}

}  // namespace ws::kernels
