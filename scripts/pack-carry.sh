#!/usr/bin/env bash
# Run HERE after the fetch scripts: packs the text-heavy device assets into .carry/ as xz tarballs so that
# one device call can carry them all within the 64 MiB a call may take (CUTLASS headers 27 MB -> ~1 MB,
# the ONNX suites 40 MB -> ~6 MB, cudnn-frontend 3 MB -> 0.3 MB). scripts/lib/device-common.sh unpacks each
# .carry/NAME.txz into ./.NAME on the GPU machine when ./.NAME is absent.
#   bash scripts/pack-carry.sh            (then carry=[".debs", ".whl", ".carry", ".assets"])
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry
for d in cutlass onnxdata cudnn_frontend; do
  if [ -d ".$d" ]; then
    tar -cf - ".$d" | xz -T2 -6 > ".carry/$d.txz.tmp" && mv ".carry/$d.txz.tmp" ".carry/$d.txz"
  else
    echo "[pack-carry] .$d absent: skipped" >&2
  fi
done
du -ch .carry/* .debs .whl .assets 2>/dev/null | tail -n 20
