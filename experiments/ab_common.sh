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
