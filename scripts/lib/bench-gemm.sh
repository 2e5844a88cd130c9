# Suite bench-gemm of scripts/device.sh (sourced): the INT8 GEMM family (issue 5). Builds the CLI and the GPU
# tests, runs the GEMM GPU tests, `warpstream gemm --check` (exhaustive vs the INT64 CPU oracle), the campaign
# `warpstream gemm --bench` (vs cuBLASLt / cublasGemmEx; the CUTLASS sm_90a backend when .cutlass/ is carried:
# scripts/fetch-cutlass-headers.sh), ptxas spill counts, and compute-sanitizer memcheck on `--check`.
# Under $OUT: check.json, bench.json, bench.txt.
ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
for f in gemm_s8_dp4a gemm_s8_mma; do
  nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Isrc -Iinclude -c src/kernels/gemm/$f.cu \
    -o /tmp/$f.o > "$L/ptxas-sm90-$f.txt" 2>&1
done
row "ptxas spills (sm_90)" "$(grep -h -o '[0-9]* bytes spill stores' $L/ptxas-sm90-*.txt | sort | uniq -c | tr '\n' ';')"
timeout 120 "$GT" --gtest_filter='GemmS8*' > "$L/gemm-tests.txt" 2>&1
rc=$?; mark $rc; row "ws_gpu_tests GemmS8*" "rc=$rc $(gtest_result "$L/gemm-tests.txt")"
timeout 150 "$WS" gemm --check --json "$OUT/check.json" > "$L/gemm-check.txt" 2>&1
rc=$?; mark $rc; row "gemm --check" "rc=$rc $(grep -E '^check:' "$L/gemm-check.txt") ($(elapsed) s)"
t=$(( $(left) - 90 )); [ $t -gt 300 ] && t=300
if [ $t -gt 30 ]; then
  timeout $t "$WS" gemm --bench ${WS_GEMM_BENCH_ARGS:-} --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  row "gemm --bench" "rc=$? ($(elapsed) s)"
  python3 tools/gemm_bench_summary.py "$OUT/bench.json" | tee -a "$SUM"
else
  row "gemm --bench" "SKIPPED (budget)"
fi
timeout 75 compute-sanitizer --tool memcheck --error-exitcode 3 "$WS" gemm --check --iters 1 > "$L/gemm-memcheck.txt" 2>&1
rc=$?; mark $rc; row "memcheck gemm --check" "rc=$rc $(grep -E 'ERROR SUMMARY' "$L/gemm-memcheck.txt" | tail -1)"
