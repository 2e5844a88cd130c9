#!/usr/bin/env bash
# The one device entry point. On a GPU machine, from the repository root:
#   bash scripts/device.sh SUITE [SUITE...]
# Suites (run in the order given, sharing one build in build-dev/ and one 580 s budget):
#   test           build the CLI + GPU tests, run every GPU test (ctest label gpu = ws_gpu_tests)
#   sanitize       compute-sanitizer memcheck, racecheck, synccheck, initcheck over the whole GPU suite
#   ltx            LTX-Video: diffusers goldens for one full-size 2B block (tools/ltx_goldens.py), the LTX GPU
#                  tests against them, `warpstream ltx-block` timing beside diffusers' block in the same run
#   ltx-model      LTX-Video whole transformer, 2B and 13B: diffusers goldens + time, GPU model tests,
#                  `warpstream ltx` resident vs streamed under a VRAM budget, a 13B checkpoint made on the device
#                  (tools/make_ltx_checkpoint.py), the diffusers peer (resident, group offload) and
#                  `warpstream compare` (scripts/lib/ltx-model.sh; ~8 min with WS_DEVICE_BUDGET_S=560)
#   bench-latency  `warpstream bench` matrix (EfficientNet-Lite0, ResNet-50) + PyTorch peers + floor + plots
#   bench-gemm     `warpstream gemm --check` and `--bench` (INT8 GEMM campaigns vs cuBLASLt)
#   bench-flow     Flow streamer tests, `warpstream h2d`, `warpstream overlap`
#   evidence       test + bench-latency
# What the GPU machine needs that it cannot download, prepared HERE once:
#   bash scripts/device-deps.sh            -> .debs/            (Debian dev packages: ONNX, protobuf, GTest, ...)
#   bash scripts/bench-assets.sh           -> .assets/          (EfficientNet-Lite0, photo, peer packages)
#   bash scripts/fetch-cudnn-frontend.sh   -> .cudnn_frontend/  (cuDNN fused SDPA; optional)
#   bash scripts/fetch-device-wheels.sh    -> .whl/             (diffusers + importlib_metadata, for `ltx`)
# In this workplace, through the device tool:
#   run(command="bash scripts/device.sh test sanitize", carry=[".debs", ".assets", ".whl", ".cudnn_frontend"])
# Writes under $OUT: summary.txt (also printed last), logs.tgz (every log), plus suite files (compare.txt, ...).
# Never changes the GPU's settings. Exit status: 0 when every stage passed, else 1.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -ge 1 ] || { sed -n '2,22p' "$0"; exit 2; }
source scripts/lib/device-common.sh
FAILED=0
mark() { [ "$1" -eq 0 ] || FAILED=1; }

suite_test() {
  ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
  timeout $(( $(left) > 300 ? 300 : $(left) )) "$GT" ${WS_GTEST_FILTER:+--gtest_filter=$WS_GTEST_FILTER} \
    > "$L/gpu-tests.txt" 2>&1
  local rc=$?; mark $rc
  row "gpu tests (ws_gpu_tests)" "rc=$rc $(gtest_result "$L/gpu-tests.txt") ($(elapsed) s)"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$L/gpu-tests.txt" | sort -u | head -20 | sed 's/^/    /' | tee -a "$SUM"
  # ONNX conformance on the CUDA executor, for the suites carried in .onnxdata/ (copies of Debian
  # libonnx-testdata's data/<suite>; the image has none): fp32 gates, fp16 is reported.
  for d in .onnxdata/*/; do
    [ -d "$d" ] && [ "$(left)" -gt 60 ] || continue
    local suite; suite=$(basename "$d")
    for prec in fp32 fp16; do
      timeout 120 "$WS" onnx-test --device cuda --precision $prec "$d" > "$L/onnx-cuda-$suite-$prec.txt" 2>&1
      local rc2=$?; [ $prec = fp32 ] && mark $rc2
      row "onnx-test --device cuda $prec $suite" "rc=$rc2 $(grep -iE 'passed|failed' "$L/onnx-cuda-$suite-$prec.txt" | tail -1 | cut -c1-100)"
    done
  done
}

suite_sanitize() {
  ws_build ws_gpu_tests || { FAILED=1; return; }
  # Death tests re-execute the binary (they hang under the sanitizer); DISABLED_ timing tests stay off.
  # Per tool: WS_SANITIZE_FILTER_<tool> (default WS_SANITIZE_FILTER, default: the whole suite) and
  # WS_SANITIZE_SECONDS_<tool> (default: a third of what is left, at most 150 s). A tool cut by its time
  # limit counts as a failure (rc 124) — narrow its filter rather than read a partial run as clean.
  local all=${WS_SANITIZE_FILTER:--DeviceInit.FreshProcess*}
  for tool in ${WS_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
    local fvar=WS_SANITIZE_FILTER_$tool svar=WS_SANITIZE_SECONDS_$tool
    local filter=${!fvar:-$all}
    local t=${!svar:-$(( $(left) / 3 ))}; [ -z "${!svar:-}" ] && [ $t -gt 150 ] && t=150
    [ $t -gt $(( $(left) - 5 )) ] && t=$(( $(left) - 5 ))
    if [ $t -lt 20 ]; then row "compute-sanitizer $tool" "SKIPPED (budget)"; FAILED=1; continue; fi
    timeout $t compute-sanitizer --tool $tool --error-exitcode 3 "$GT" --gtest_filter="$filter" \
      > "$L/sanitize-$tool.txt" 2>&1
    local rc=$?; mark $rc
    row "compute-sanitizer $tool" "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/sanitize-$tool.txt" | tail -1) $(gtest_result "$L/sanitize-$tool.txt") filter=${filter:0:60} ($(elapsed) s)"
  done
}

suite_ltx() { source scripts/lib/ltx.sh; }
suite_ltx_model() { source scripts/lib/ltx-model.sh; }
suite_bench_latency() { ws_build warpstream exp_graph_launch_00_empty_kernel || { FAILED=1; return; }; source scripts/lib/bench-latency.sh; }
suite_bench_gemm() { source scripts/lib/bench-gemm.sh; }
suite_bench_flow() { source scripts/lib/bench-flow.sh; }

for s in "$@"; do
  case $s in
    test) suite_test ;;
    sanitize) suite_sanitize ;;
    ltx) suite_ltx ;;
    ltx-model) suite_ltx_model ;;
    bench-latency) suite_bench_latency ;;
    bench-gemm) suite_bench_gemm ;;
    bench-flow) suite_bench_flow ;;
    evidence) suite_test; suite_bench_latency ;;
    *) row "suite $s" "unknown (see scripts/device.sh's header)"; FAILED=1 ;;
  esac
done
exit $FAILED
