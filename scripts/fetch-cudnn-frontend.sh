#!/usr/bin/env bash
# Fetches the cudnn-frontend C++ headers (header-only, MIT) into <repo>/.cudnn_frontend/include (ignored) from
# the PyPI wheel nvidia-cudnn-frontend (1.x; the wheel carries include/cudnn_frontend*.h and include/cudnn_frontend/).
# The headers are the same in every platform's wheel, so any wheel of the pinned version will do.
# Used by CMake (cmake/cudnn_frontend.cmake auto-detects the directory; override with -DWS_CUDNN_FRONTEND_DIR=...)
# for the fused SDPA of the GPU LTX block (src/flow/models/). About 3 MiB. Idempotent: a present copy of the
# same version is kept (delete .cudnn_frontend/ or set WS_CUDNN_FRONTEND_FORCE=1 to fetch again).
# Needs cuDNN >= 9 at run time for SDPA (cudnn-frontend 1.x compiles against cudnn.h of the toolkit or wheel).
set -eu
VER=${WS_CUDNN_FRONTEND_VERSION:-1.32.0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="$ROOT/.cudnn_frontend"
if [ -z "${WS_CUDNN_FRONTEND_FORCE:-}" ] && [ -f "$DEST/include/cudnn_frontend.h" ] \
   && [ "$(cat "$DEST/VERSION" 2>/dev/null)" = "$VER" ]; then
  echo "cudnn-frontend $VER headers already in $DEST/include"
  exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# --no-deps --only-binary: the wheel only; any platform tag of this version carries the same headers.
if ! python3 -m pip download --no-deps --only-binary=:all: "nvidia-cudnn-frontend==$VER" -d "$TMP" >/dev/null; then
  python3 -m pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.11 \
    "nvidia-cudnn-frontend==$VER" -d "$TMP" >/dev/null
fi
WHL=$(ls "$TMP"/nvidia_cudnn_frontend-*.whl | head -1)
python3 - "$WHL" "$TMP/x" <<'PY'
import sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.startswith("include/") and not n.endswith("/")]
    if not any(n == "include/cudnn_frontend.h" for n in names):
        sys.exit(f"error: {whl} has no include/cudnn_frontend.h (not a cudnn-frontend 1.x wheel?)")
    for n in names:
        z.extract(n, out)
PY
rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp"
cp -r "$TMP/x/include" "$DEST.tmp/include"
echo "$VER" > "$DEST.tmp/VERSION"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "cudnn-frontend $VER headers in $DEST/include ($(du -sh "$DEST" | cut -f1))"
