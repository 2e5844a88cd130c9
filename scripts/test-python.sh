#!/usr/bin/env bash
# The Python tests (python/tests, pytest) against the extension built INTO an existing CMake build
# directory (${WS_BUILD_DIR:-build}, made by scripts/build.sh): reconfigures it with WS_BUILD_PYTHON=ON
# and the venv's python (scripts/install-deps.sh), builds only the extension and its stubs
# (<build>/python/warpstream), then runs pytest with PYTHONPATH=<build>/python. The C++ side the tests
# compare with is the CLI of the same build (<build>/warpstream).
# The extension links the CPU modules only (WS_PYTHON_CUDA=OFF), so in a CUDA build directory only those are
# recompiled as position-independent code; WS_PYTHON_CUDA=ON scripts/test-python.sh includes the CUDA executor
# and lanes (recompiles the CUDA modules as PIC too) and runs python/tests/test_cuda.py on a GPU machine.
#   scripts/test-python.sh [extra pytest args, e.g. -k errors]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${WS_BUILD_DIR:-$ROOT/build}"
CACHE_DIR="${WS_CACHE_DIR:-$HOME/.cache/warpstream}"
PY="${WS_PYTHON:-$CACHE_DIR/venv/bin/python}"
log() { printf '[test-python] %s\n' "$*"; }
[ -f "$BUILD/CMakeCache.txt" ] || { echo "[test-python] ERROR: no CMake build in $BUILD (run scripts/build.sh first)" >&2; exit 2; }
[ -x "$PY" ] || { echo "[test-python] ERROR: $PY not found (run scripts/install-deps.sh)" >&2; exit 2; }
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
start=$SECONDS
log "configure $BUILD with WS_BUILD_PYTHON=ON, WS_PYTHON_CUDA=${WS_PYTHON_CUDA:-OFF} ($PY)"
cmake -S "$ROOT" -B "$BUILD" -DWS_BUILD_PYTHON=ON -DWS_PYTHON_CUDA="${WS_PYTHON_CUDA:-OFF}" -DPython_EXECUTABLE="$PY" >/dev/null
log "build _warpstream + stubs"
cmake --build "$BUILD" -j"$(nproc)" --target _warpstream _warpstream_stub
log "pytest python/tests (build $((SECONDS - start)) s)"
cd "$ROOT"
PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" WS_BUILD_DIR="$BUILD" WS_CLI="$BUILD/warpstream" \
  "$PY" -m pytest -q -p no:cacheprovider "$ROOT/python/tests" "$@"
log "done in $((SECONDS - start)) s"
