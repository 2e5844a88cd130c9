#!/usr/bin/env bash
# Run HERE (network): downloads the Python wheels the GPU machine lacks into ./.whl (ignored by git), so that
#   run(command="bash scripts/device.sh ltx", carry=[".debs", ".whl", ...])
# can install them there (scripts/lib/device-common.sh does it into /tmp/site). Today: diffusers 0.42.1 (the
# LTX-Video transformer the goldens and the peer come from) and importlib_metadata (its one missing dependency
# on that image; torch, safetensors, huggingface-hub, httpx ... are there). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
for spec in diffusers==0.42.1 importlib_metadata; do
  name=${spec%%=*}
  ls .whl/ | grep -qi "^${name//-/_}-" && continue
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
    --platform any -d .whl "$spec"
done
ls -la .whl
