#!/usr/bin/env bash
# Fetches the CUTLASS C++ headers (header-only) into .cutlass/include (ignored) from the PyPI wheel
# nvidia-cutlass (its cutlass_library/source/include holds cutlass/ and cute/). 4.2.0 = CUTLASS 4.2, which
# supports CUDA 13 (sm_90a: TMA + wgmma). Used by CMake (auto-detected) and carried to the device (~27 MiB).
set -eu
VER=${WS_CUTLASS_VERSION:-4.2.0.0}
TMP=$(mktemp -d)
python3 -m pip download --no-deps "nvidia-cutlass==$VER" -d "$TMP" >/dev/null
python3 -m zipfile -e "$TMP"/nvidia_cutlass-*.whl "$TMP/x"
rm -rf .cutlass && mkdir -p .cutlass
cp -r "$TMP/x/cutlass_library/source/include" .cutlass/include
rm -rf "$TMP"
du -sh .cutlass
