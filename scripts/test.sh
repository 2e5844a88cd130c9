#!/usr/bin/env bash
# The test suite on a fresh Debian 12 machine: install what is missing, build, fetch the model
# assets (the EfficientNet peer tests need them), then run ctest. GPU tests (label "gpu") skip
# themselves without a device; `bash scripts/device.sh test` runs them on a GPU machine.
#   scripts/test.sh [extra ctest args, e.g. -L cpu or -R onnx]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${WS_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh"
"$ROOT/scripts/fetch-assets.sh"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
"$ROOT/scripts/test-python.sh"   # Python binding tests (python/tests): builds the extension into $BUILD, runs pytest
