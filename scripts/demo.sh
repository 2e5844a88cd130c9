#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine, GPU or not: install what is missing, build, fetch the
# EfficientNet-Lite0 ImageNet model, labels and the four scikit-image photos, then classify them.
#   scripts/demo.sh [extra classify args, e.g. --topk 3 --json]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${WS_CACHE_DIR:-$HOME/.cache/warpstream}"
"$ROOT/scripts/install-deps.sh"
WS_BUILD_TARGETS=warpstream "$ROOT/scripts/build.sh"  # the CLI only: the test binaries are scripts/test.sh's
"$ROOT/scripts/fetch-assets.sh"
exec "${WS_BUILD_DIR:-$ROOT/build}/warpstream" classify \
  --model "$CACHE/models/efficientnet_lite0.onnx" --labels "$CACHE/labels/imagenet_classes.txt" \
  "$CACHE"/images/{chelsea,coffee,rocket,astronaut}.png "$@"
