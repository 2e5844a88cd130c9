# Sourced by the device-side A/B scripts (experiments/aux_stream_ab.sh, bench_state_ab.sh): the repository root as the
# working directory, the device machine's environment (scripts/lib/device-env.sh), the carried archives unpacked as
# scripts/lib/device-common.sh does, $O (where results go: $OUT, else /tmp) and $B (the build, default build-dev).
# ab_need_build FILE: stops with a message (also appended to FILE) when $B has no warpstream binary.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/device-env.sh
for a in .carry/*.txz; do n=$(basename "$a" .txz); [ -d ".$n" ] || tar -xJf "$a"; done
O=${OUT:-/tmp}
B=${WS_BUILD_DIR:-build-dev}
ab_need_build() { [ -x "$B/warpstream" ] || { echo "no $B/warpstream: run scripts/device.sh first" | tee -a "$1"; exit 1; }; }
# ab_resnet50 FILE: sets M (WS_RESNET50_DIR, else $T) and exports ResNet-50 there unless it is there already; stops with a
# message (also appended to FILE) when the export fails. Needs $T.
ab_resnet50() {
  M=${WS_RESNET50_DIR:-$T}
  [ -f $M/resnet50.onnx ] || timeout 240 python3 tools/export_resnet50.py --out-dir $M > $T/export.txt 2>&1
  [ -f $M/resnet50.onnx ] || { echo "resnet50 export failed: $(tail -2 $T/export.txt)" | tee -a "$1"; exit 1; }
}
# ab_start RESULTS_NAME TMP_DIR: R=$O/RESULTS_NAME (emptied), T=TMP_DIR (made), the build checked, ResNet-50 exported (M).
ab_start() {
  R=$O/$1; : > "$R"
  T=$2; mkdir -p "$T"
  ab_need_build "$R"
  ab_resnet50 "$R"
}
# ab_gpu_tests FILTER LOG [EXTRA_GREP]: ws_gpu_tests --gtest_filter=FILTER into LOG (240 s cap); one line into $R with rc,
# gtest's PASSED/FAILED lines and the lines matching EXTRA_GREP. Set variables for the tests in front of the call.
ab_gpu_tests() {
  timeout 240 $B/tests/ws_gpu_tests --gtest_filter="$1" > "$2" 2>&1
  echo "ws_gpu_tests $1 rc=$? $(grep -E "^\[  (PASSED|FAILED)  \]${3:+|$3}" "$2" | tr '\n' ' ')" | tee -a "$R"
}
