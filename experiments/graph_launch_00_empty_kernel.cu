// graph_launch_00_empty_kernel: per-node launch cost of a CUDA Graph of empty kernels (the launch term of
// the latency floor in tools/model_floor.py, issue 4 item 7).
// Computes: for chains of N ∈ {1, 2, 5, 10, 20, 50, 100, 200, 400} empty-kernel nodes (captured on a
// non-blocking stream, one instantiated graph each), the GPU time of one replay (events around
// cudaGraphLaunch) and the host time submit → cudaStreamSynchronize returned; per-node cost = least-squares
// slope of GPU time p50 over N (and of host p50), intercept = the fixed cost of one launch.
// Thread mapping: each node is one block of 32 threads that does nothing (the kernel writes nothing).
// Test: nothing to verify (no outputs); every CUDA call checked. Time: median of --reps replays after
// 50 warm-ups, per N.   ./exp_graph_launch_00_empty_kernel [reps=500] [json_out]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "lab_check.h"

__global__ void empty_kernel() {}

static double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = (v.size() - 1) * q / 100.0;
  const size_t lo = static_cast<size_t>(h);
  return lo + 1 < v.size() ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v.back();
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 500;
  const char* json = argc > 2 ? argv[2] : nullptr;
  const int ns[] = {1, 2, 5, 10, 20, 50, 100, 200, 400};
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("graph of N empty kernels on %s: median / p99 of %d replays after 50 warm-ups\n", prop.name, reps);
  std::printf("%6s %12s %12s %12s %12s %12s\n", "N", "gpu_p50_us", "gpu_p99_us", "host_p50_us", "host_p99_us", "gpu_us/node");
  std::vector<double> xs, gy, hy;
  FILE* jf = json ? std::fopen(json, "w") : nullptr;
  if (jf) std::fprintf(jf, "{\"device\": \"%s\", \"reps\": %d, \"rows\": [", prop.name, reps);
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k) {
    const int n = ns[k];
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, s>>>();
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < 50; ++i) CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<double> gpu, host;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      CHECK(cudaEventRecord(e0, s));
      CHECK(cudaGraphLaunch(ge, s));
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaStreamSynchronize(s));
      const auto t1 = std::chrono::steady_clock::now();
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      gpu.push_back(ms * 1e3);
      host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    const double g50 = pct(gpu, 50), g99 = pct(gpu, 99), h50 = pct(host, 50), h99 = pct(host, 99);
    std::printf("%6d %12.2f %12.2f %12.2f %12.2f %12.3f\n", n, g50, g99, h50, h99, g50 / n);
    if (jf)
      std::fprintf(jf, "%s{\"nodes\": %d, \"gpu_p50_us\": %.3f, \"gpu_p99_us\": %.3f, \"host_p50_us\": %.3f, \"host_p99_us\": %.3f}",
                   k ? ", " : "", n, g50, g99, h50, h99);
    xs.push_back(n);
    gy.push_back(g50);
    hy.push_back(h50);
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
  }
  auto slope = [&](const std::vector<double>& y, double* icept) {
    double mx = 0, my = 0;
    for (size_t i = 0; i < xs.size(); ++i) mx += xs[i], my += y[i];
    mx /= xs.size();
    my /= xs.size();
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < xs.size(); ++i) sxy += (xs[i] - mx) * (y[i] - my), sxx += (xs[i] - mx) * (xs[i] - mx);
    const double b = sxy / sxx;
    *icept = my - b * mx;
    return b;
  };
  double gi = 0, hi = 0;
  const double gs = slope(gy, &gi), hs = slope(hy, &hi);
  std::printf("fit over N: GPU %.3f us/node + %.2f us; host submit->done %.3f us/node + %.2f us\n", gs, gi, hs, hi);
  if (jf) {
    std::fprintf(jf, "], \"gpu_us_per_node\": %.4f, \"gpu_intercept_us\": %.3f, \"host_us_per_node\": %.4f, \"host_intercept_us\": %.3f}\n",
                 gs, gi, hs, hi);
    std::fclose(jf);
  }
  return 0;
}
