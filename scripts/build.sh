#!/usr/bin/env bash
# Configure and build WarpStream (Release) into ${WS_BUILD_DIR:-build} (every target, or WS_BUILD_TARGETS). CUDA sources are compiled
# when nvcc is found (for sm_75/61 and sm_90 by default); the CPU parts build without it.
#   scripts/build.sh [extra cmake args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${WS_BUILD_DIR:-$ROOT/build}"
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# WS_BUILD_TARGETS="warpstream ..." builds only those targets (the demo needs the CLI alone); default: all.
targets=()
for t in ${WS_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD" -j"$(nproc)" ${targets[@]+"${targets[@]}"}
