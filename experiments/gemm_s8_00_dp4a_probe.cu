// VRAMFlow stage 00: does native signed INT8 DP4A work here? Runs the src/kernels probe on known vectors
// (-128 / 127 included) and prints every result beside the CPU value. Exit 1 on any mismatch.
// SASS: `cuobjdump --dump-sass <binary> | grep IDP.4A` (scripts/device-check-gemm.sh does this per arch).
// Build: the CMake target exp_gemm_s8_00_dp4a_probe (CUDA builds only).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"

static int32_t word(int x0, int x1, int x2, int x3) {
  return int32_t(uint32_t(uint8_t(x0)) | uint32_t(uint8_t(x1)) << 8 | uint32_t(uint8_t(x2)) << 16 |
                 uint32_t(uint8_t(x3)) << 24);
}

int main() {
  std::vector<int32_t> a = {word(-128, -128, -128, -128), word(127, 127, 127, 127), word(-128, 127, 0, 1),
                            word(-1, -1, -1, -1)};
  std::vector<int32_t> b = {word(-128, -128, -128, -128), word(-128, -128, -128, -128), word(127, -128, -1, 5),
                            word(127, 127, 127, 127)};
  std::vector<int32_t> c = {0, 7, -3, 0}, out(a.size());
  int32_t *da, *db, *dc, *dout;
  size_t bytes = a.size() * 4;
  if (cudaMalloc(&da, bytes) || cudaMalloc(&db, bytes) || cudaMalloc(&dc, bytes) || cudaMalloc(&dout, bytes)) {
    std::printf("no device\n");
    return 1;
  }
  cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c.data(), bytes, cudaMemcpyHostToDevice);
  ws::Status st = ws::kernels::dp4a_probe(da, db, dc, dout, int(a.size()), nullptr);
  if (!st.is_ok() || cudaMemcpy(out.data(), dout, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("probe failed: %s\n", st.to_string().c_str());
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t want = c[i];
    for (int q = 0; q < 4; ++q) want += int64_t(int8_t(uint32_t(a[i]) >> (8 * q))) * int8_t(uint32_t(b[i]) >> (8 * q));
    std::printf("dp4a[%zu] = %d (cpu %lld) %s\n", i, out[i], (long long)want, out[i] == want ? "ok" : "MISMATCH");
    bad += out[i] != want;
  }
  return bad ? 1 : 0;
}
