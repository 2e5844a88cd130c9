# Suite ltx of scripts/device.sh (sourced): LTX-Video on the GPU, checked against diffusers and timed beside it.
#  1. tools/ltx_goldens.py --case block-2b: one full-size 2B block (inner 2048 = 32x64, cross 2048, FF 8192) with
#     random bf16 weights, S = 6144 video tokens (grid 16x16x24), T = 128 text tokens; diffusers 0.42.1's own
#     forward dumps inputs/intermediates/outputs, and times its block (CUDA events, median/p99 of 50).
#  2. GPU tests: transformer kernels vs the CPU reference, the GPU block vs the CPU reference and vs the
#     full-size diffusers goldens (WS_LTX_GOLDENS), the whole model (tiny checkpoint; streamed == resident).
#  3. `warpstream ltx-block` on the same block: bf16 and fp8 weights, goldens check, CUDA-graph timing with a
#     per-stage breakdown; `warpstream transformer-kernels` per-kernel timings.
# Needs .whl carried (scripts/fetch-device-wheels.sh: diffusers) and .cudnn_frontend (cuDNN fused SDPA).
# Under $OUT: ltx.txt (goldens line, tests, block timings side by side).
LX=$OUT/ltx.txt; : > "$LX"
ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
G=/tmp/ltx_block_2b
timeout 240 python3 tools/ltx_goldens.py --case block-2b --out $G --device cuda --dtype bfloat16 --time 50 \
  > "$L/ltx-goldens.txt" 2>&1
rc=$?; mark $rc
row "diffusers goldens block-2b" "rc=$rc $(grep '^ltx_goldens:' "$L/ltx-goldens.txt" | cut -c1-160)"
[ $rc -eq 0 ] || tail -5 "$L/ltx-goldens.txt" | tee -a "$LX"
WS_LTX_GOLDENS=$G WS_LTX_BLOCK_DIR=$G timeout 240 "$GT" --gtest_filter='TransformerKernels*:Ltx*' > "$L/ltx-tests.txt" 2>&1
rc=$?; mark $rc
row "gpu tests TransformerKernels*:Ltx*" "rc=$rc $(gtest_result "$L/ltx-tests.txt") ($(elapsed) s)"
grep -E '^\[  FAILED  \] [A-Za-z]|cosine|cos=|max-abs|attention:' "$L/ltx-tests.txt" | head -60 >> "$LX"
for w in bf16 fp8 int8; do
  [ "$(left)" -gt 40 ] || { row "ltx-block $w" "SKIPPED (budget)"; continue; }
  gold=""; [ $w = bf16 ] && gold="--goldens $G"
  timeout 90 "$WS" ltx-block --model $G/block.safetensors $gold --weights $w --profile \
    --json "$L/ltx-block-$w.json" > "$L/ltx-block-$w.txt" 2>&1
  rc=$?; mark $rc
  row "warpstream ltx-block --weights $w" "rc=$rc $(grep -iE 'median' "$L/ltx-block-$w.txt" | head -1 | cut -c1-120)"
  { echo "## ltx-block $w"; cat "$L/ltx-block-$w.txt"; } >> "$LX"
done
[ -f $G/timing.json ] && { echo "## diffusers block timing"; cat $G/timing.json; echo; } >> "$LX"
if [ "$(left)" -gt 40 ]; then
  timeout 60 "$WS" transformer-kernels > "$L/transformer-kernels.txt" 2>&1
  row "warpstream transformer-kernels" "rc=$? ($(elapsed) s)"
  { echo "## transformer-kernels (2B shapes)"; cat "$L/transformer-kernels.txt"; } >> "$LX"
fi
