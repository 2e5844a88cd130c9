# Shared helpers for scripts/device.sh (sourced, never run). On the GPU machine, from the repo root.
# Provides: the carried Debian packages on the compiler/loader paths (lib/device-env.sh), ONE build
# configuration (build-dev: Release, Ninja, sm_90, CUTLASS when .cutlass/ is carried, cudnn-frontend when
# .cudnn_frontend/ is carried), the summary table (row), a deadline (left), and the log directory $L whose
# content is packed into $OUT/logs.tgz at exit. The summary is printed last and kept in $OUT/summary.txt.
START=$(date +%s)
OUT=${OUT:-/tmp/ws-device-out}
L=${WS_LOG_DIR:-/tmp/ws-device-logs}
B=${WS_BUILD_DIR:-build-dev}
BUDGET=${WS_DEVICE_BUDGET_S:-580}       # one device call may run 600 s: stages check left() against this
mkdir -p "$OUT" "$L"
SUM=$L/summary.txt
: > "$SUM"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$SUM"; }
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }
ws_finish() {
  cp "$SUM" "$OUT/summary.txt"
  tar -czf "$OUT/logs.tgz" -C "$(dirname "$L")" "$(basename "$L")" 2>/dev/null
  echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"
}
trap ws_finish EXIT
export PYTHONUNBUFFERED=1

# Compressed carries (scripts/pack-carry.sh): .carry/NAME.txz -> ./.NAME when that folder was not carried itself.
for a in .carry/*.txz; do
  [ -f "$a" ] || continue
  n=$(basename "$a" .txz); [ -d ".$n" ] || tar -xJf "$a"
done
source scripts/lib/device-env.sh
{ date -u; nvidia-smi; nvcc --version; cmake --version | head -1; git rev-parse HEAD 2>/dev/null; uname -a
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1; } > "$L/env.txt" 2>&1
# Carried wheels (.whl: diffusers + importlib_metadata for the LTX goldens/peer) into a private site dir.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > "$L/wheels.txt" 2>&1 && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,pcie.link.gen.current --format=csv,noheader 2>&1 | head -1)"
row "commit" "$(git rev-parse --short HEAD 2>/dev/null) (git HEAD where the tree was copied; uncommitted changes included)"

ws_configure() {
  [ -f "$B/build.ninja" ] && return 0
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 ${WS_CMAKE_ARGS:-} \
    > "$L/configure.txt" 2>&1
  local rc=$?
  row "configure ($B)" "rc=$rc $(grep -E 'CUTLASS|cudnn-frontend|cuDNN' "$L/configure.txt" | sed 's/^-- //' | tr '\n' ';' | cut -c1-150)"
  return $rc
}
# ws_build TARGET... : one build directory for every suite of the call; targets accumulate.
ws_build() {
  ws_configure || return 1
  timeout "${WS_BUILD_TIMEOUT_S:-420}" ninja -C "$B" -k 0 "$@" >> "$L/build.txt" 2>&1
  local rc=$?
  row "build $*" "rc=$rc ($(elapsed) s)"
  [ $rc -eq 0 ] || grep -E 'error|FAILED' "$L/build.txt" | head -20
  return $rc
}
GT=$B/tests/ws_gpu_tests
WS=$B/warpstream
# gtest_result FILE : "N passed, M failed, K skipped" from a gtest log.
gtest_result() {
  awk '/^\[  PASSED  \] [0-9]+ test/{p=$4} /^\[  FAILED  \] [0-9]+ test/{f=$4} /^\[  SKIPPED \] [0-9]+ test/{k=$4}
       END{printf "%d passed, %d failed, %d skipped", p, f, k}' "$1"
}
