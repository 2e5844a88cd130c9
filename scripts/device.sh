#!/usr/bin/env bash
# The one device entry point. On a GPU machine, from the repository root:
#   bash scripts/device.sh SUITE [SUITE...]
# Suites (run in the order given, sharing one build in build-dev/ and one 580 s budget):
#   test           build the CLI + GPU tests, run every GPU test (ctest label gpu = ws_gpu_tests; the CUTLASS
#                  GEMM tests run, and must not skip, when .cutlass/ is carried); WS_GTEST_FILTER selects tests, and
#                  several ';'-separated filters run as separate processes (a kernel fault ends only its own part)
#   sanitize       compute-sanitizer memcheck, racecheck, synccheck, initcheck over the whole GPU suite, in
#                  parallel, with a canary per tool (scripts/lib/sanitize.sh: what each tool checks, exclusions).
#                  All four in one 580 s call do not finish (device run 10 of 2026-12-01); use two calls:
#                    WS_SANITIZE_TOOLS="memcheck racecheck" WS_SANITIZE_SHARDS_memcheck=5 WS_SANITIZE_SHARDS_racecheck=3 bash scripts/device.sh sanitize
#                    WS_SANITIZE_TOOLS="initcheck synccheck" WS_SANITIZE_SHARDS_initcheck=5 WS_SANITIZE_SHARDS_synccheck=3 bash scripts/device.sh sanitize
#   ltx            LTX-Video: diffusers goldens for one full-size 2B block (tools/ltx_goldens.py), the LTX GPU
#                  tests against them, `warpstream ltx-block` timing beside diffusers' block in the same run
#   ltx-model      LTX-Video whole transformer, 2B and 13B: diffusers goldens + time, GPU model tests,
#                  `warpstream ltx` resident vs streamed under a VRAM budget, a 13B checkpoint made on the device
#                  (tools/make_ltx_checkpoint.py), the diffusers peer (resident, group offload) and
#                  `warpstream compare` (scripts/lib/ltx-model.sh; ~8 min with WS_DEVICE_BUDGET_S=560)
#   bench-latency  `warpstream bench` matrix (EfficientNet-Lite0, ResNet-50) + PyTorch peers + floor + plots
#   bench-gemm     `warpstream gemm --check` and `--bench` (INT8 GEMM campaigns vs cuBLASLt)
#   bench-flow     Flow streamer tests, `warpstream h2d`, `warpstream overlap`
#   onnx           ONNX conformance (every suite under .onnxdata/) on the CUDA executor fp32 + fp16 and the CPU
#                  executor, and the torchvision zoo on CUDA (tools/zoo_check.py): counts table in $OUT/onnx-counts.md
#   evidence       test + bench-latency
#   python         the Python package with CUDA: extension built in build-dev, pytest python/tests (CUDA engine,
#                  zero-copy DLPack inputs, lanes, the diffusers LTXPipeline drop-in), Python-vs-C++ call overhead,
#                  `pip install .` (scripts/lib/python.sh; needs .whl: nanobind, scikit-build-core, diffusers)
# What the GPU machine needs that it cannot download, prepared HERE once:
#   bash scripts/device-deps.sh            -> .debs/            (Debian dev packages: ONNX, protobuf, GTest, ...)
#   bash scripts/bench-assets.sh           -> .assets/          (EfficientNet-Lite0, photo, peer packages)
#   bash scripts/fetch-cudnn-frontend.sh   -> .cudnn_frontend/  (cuDNN fused SDPA and the opt-in cuDNN graph convs; optional)
#   bash scripts/fetch-device-wheels.sh    -> .whl/             (diffusers, importlib_metadata, nanobind, scikit-build-core)
#   bash scripts/pack-carry.sh             -> .carry/           (xz of .cutlass, .onnxdata, .cudnn_frontend: one call carries all)
# In this workplace, through the device tool:
#   run(command="bash scripts/device.sh test sanitize", carry=[".debs", ".whl", ".carry", ".assets"])   (~60 MiB of 64)
# build-dev is configured once per machine, with WS_CMAKE_ARGS if set (e.g. -DWS_CUTLASS_GEMM=OFF: CUTLASS's conv kernels
# without its INT8 GEMM translation units, for calls that run no GEMM).
# Writes under $OUT: summary.txt (also printed last), logs.tgz (every log), plus suite files (compare.txt, ...).
# Never changes the GPU's settings. Exit status: 0 when every stage passed, else 1.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -ge 1 ] || { awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 2; }
source scripts/lib/device-common.sh
# With `python` among the suites, build-dev is configured once with the Python extension (WS_BUILD_PYTHON=ON,
# CUDA included; the module libraries become position-independent), so every suite of the call shares one build —
# only when python3 has its headers and nanobind (carried in .whl), so that a missing one cannot fail the others.
WS_PY_READY=""
case " $* " in *" python "*)
  if python3 -c 'import nanobind, os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
       > "$L/python-check.txt" 2>&1; then
    WS_PY_READY=1
    WS_CMAKE_ARGS="${WS_CMAKE_ARGS:-} -DWS_BUILD_PYTHON=ON -DWS_PYTHON_CUDA=ON -DWS_PYTHON_NOSTRIP=ON -DPython_EXECUTABLE=$(command -v python3)"
  fi ;;
esac
FAILED=0
mark() { [ "$1" -eq 0 ] || FAILED=1; }

suite_test() {
  ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
  # WS_GTEST_FILTER="A*:B*;C*" runs one test process per ';'-separated part (each capped at 300 s and at what is left),
  # so that a kernel fault in one part (a sticky CUDA error ends its process) cannot cost the others their results.
  local parts=() part i=0 rc
  if [ -n "${WS_GTEST_FILTER:-}" ]; then IFS=';' read -r -a parts <<< "$WS_GTEST_FILTER"; else parts=(""); fi
  : > "$L/gpu-tests.txt"
  local t
  for part in "${parts[@]}"; do
    part=${part//[[:space:]]/}
    [ -n "$part" ] || [ ${#parts[@]} -eq 1 ] || continue  # an empty part (";;", a trailing ';') is not "every test"
    i=$((i + 1))
    t=$(left)
    if [ "$t" -lt 30 ]; then row "gpu tests (ws_gpu_tests${part:+ $part})" "SKIPPED (budget: $t s left)"; FAILED=1; continue; fi
    timeout $(( t > 300 ? 300 : t )) "$GT" ${part:+"--gtest_filter=$part"} > "$L/gpu-tests-$i.txt" 2>&1
    rc=$?; mark $rc
    cat "$L/gpu-tests-$i.txt" >> "$L/gpu-tests.txt"
    if [ -n "$part" ] && ! grep -qE '^\[==========\] [1-9][0-9]* tests? from' "$L/gpu-tests-$i.txt"; then
      FAILED=1; row "gpu tests (ws_gpu_tests $part)" "rc=$rc: the filter ran no test"; continue
    fi
    row "gpu tests (ws_gpu_tests${part:+ $part})" "rc=$rc $(gtest_result "$L/gpu-tests-$i.txt") ($(elapsed) s)"
    grep -E '^\[  FAILED  \] [A-Za-z]' "$L/gpu-tests-$i.txt" | sort -u | head -20 | sed 's/^/    /' | tee -a "$SUM"
  done
  # CUTLASS carried -> the backend is built (ws_configure finds .cutlass/include) and its tests must run.
  if [ -f .cutlass/include/cutlass/cutlass.h ] && [ -z "${WS_GTEST_FILTER:-}" ]; then
    local cs; cs=$(grep -cE '^\[       OK \] GemmS8Gpu\.Cutlass' "$L/gpu-tests.txt")
    [ "$cs" -eq 2 ] || FAILED=1
    row "CUTLASS GEMM tests (.cutlass carried)" "$cs of 2 passed (GemmS8Gpu.Cutlass*; a skip or failure is in gpu-tests.txt)"
  fi
  # ONNX conformance and the zoo on the CUDA executor: the `onnx` suite (scripts/lib/onnx.sh).
}

suite_sanitize() {
  ws_build ws_gpu_tests || { FAILED=1; return; }
  source scripts/lib/sanitize.sh  # the four tools in parallel, their filters, canaries and the initcheck probe
}

suite_ltx() { source scripts/lib/ltx.sh; }
suite_ltx_model() { source scripts/lib/ltx-model.sh; }
suite_bench_latency() { ws_build warpstream exp_graph_launch_00_empty_kernel || { FAILED=1; return; }; source scripts/lib/bench-latency.sh; }
suite_bench_gemm() { source scripts/lib/bench-gemm.sh; }
suite_bench_flow() { source scripts/lib/bench-flow.sh; }
suite_python() { source scripts/lib/python.sh; }
suite_onnx() { source scripts/lib/onnx.sh; }

for s in "$@"; do
  case $s in
    test) suite_test ;;
    sanitize) suite_sanitize ;;
    ltx) suite_ltx ;;
    ltx-model) suite_ltx_model ;;
    bench-latency) suite_bench_latency ;;
    bench-gemm) suite_bench_gemm ;;
    bench-flow) suite_bench_flow ;;
    python) suite_python ;;
    onnx) suite_onnx ;;
    evidence) suite_test; suite_bench_latency ;;
    *) row "suite $s" "unknown (see scripts/device.sh's header)"; FAILED=1 ;;
  esac
done
exit $FAILED
