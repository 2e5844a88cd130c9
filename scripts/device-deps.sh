#!/usr/bin/env bash
# Run HERE (the Debian bookworm dev machine, which has network access to apt):
# downloads the .deb files the main CMake needs into ./.debs (ignored by git), so that a `run`
# on the device machine (no network, no Debian dev packages) can carry them (`carry: [".debs"]`)
# and unpack them with scripts/lib/device-env.sh. Idempotent: skips packages already downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
grep -qx '/.debs/' .git/info/exclude 2>/dev/null || echo '/.debs/' >> .git/info/exclude
# Headers + CMake configs + shared libraries (runtime libs: the device image may lack them).
PKGS=(
  libonnx-dev libonnx1 libonnxifi          # ONNX 1.12 (CMake config ONNXConfig.cmake)
  libprotobuf-dev libprotobuf32 libprotobuf-lite32   # protobuf 3.21 (FindProtobuf module)
  libpng-dev libpng16-16 zlib1g-dev zlib1g  # FindPNG needs ZLIB
  libjpeg62-turbo-dev libjpeg62-turbo libjpeg-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev googletest                   # static libgtest.a + GTestConfig.cmake
  libssl-dev                                # OpenSSL headers (bench: model SHA-256); runtime = the image's libcrypto.so.3
)
cd .debs
for p in "${PKGS[@]}"; do
  if ls "${p}"_*.deb >/dev/null 2>&1; then continue; fi
  apt-get download "$p"
done
du -sh . && ls
