#!/usr/bin/env bash
# Run HERE (network): downloads the Python wheels the GPU machine lacks into ./.whl (ignored by git), so that
#   run(command="bash scripts/device.sh ltx", carry=[".debs", ".whl", ...])
# can install them there (scripts/lib/device-common.sh does it into /tmp/site). Today: diffusers 0.42.1 (the
# LTX-Video transformer the goldens and the peer come from) and importlib_metadata (its one missing dependency
# on that image; torch, safetensors, huggingface-hub, httpx ... are there); nanobind and scikit-build-core for
# the `python` suite (the extension's build and `pip install .`; pinned so the device builds with what CI uses;
# their dependencies packaging and pathspec, and pytest, are on that image). All pure-Python (< 7 MB). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)  # worktrees too
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
mkdir -p .whl
for spec in diffusers==0.42.1 importlib_metadata nanobind==3.1.0 scikit-build-core==0.11.6; do
  name=${spec%%=*}
  ls .whl/ | grep -qi "^${name//-/_}-" && continue
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
    --platform any -d .whl "$spec"
done
ls -la .whl
