#!/usr/bin/env bash
# Produce WarpStream's model/label/image/peer-output assets in the cache dir
# (never in the source tree) with the venv made by scripts/install-deps.sh.
#
#   scripts/fetch-assets.sh [--force]     # WS_CACHE_DIR overrides ~/.cache/warpstream
set -euo pipefail

die() { printf '[fetch-assets] ERROR: %s\n' "$*" >&2; exit 1; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${WS_CACHE_DIR:-$HOME/.cache/warpstream}"
PY="$CACHE_DIR/venv/bin/python"
unset PYTHONPATH PYTHONHOME || true

[ -x "$PY" ] || die "venv python $PY not found: run scripts/install-deps.sh first"
[ -r "$ROOT/tools/fetch_assets.py" ] || die "missing $ROOT/tools/fetch_assets.py"

rc=0
"$PY" "$ROOT/tools/fetch_assets.py" --cache-dir "$CACHE_DIR" "$@" || rc=$?
[ $rc -eq 0 ] || die "tools/fetch_assets.py failed (exit $rc)"
