# Suite ltx-model of scripts/device.sh (sourced): the whole LTX-Video 2B transformer (28 blocks, bf16) on the GPU,
# resident and with block weights streamed from one pinned host copy under a 1 GiB budget, beside diffusers.
#  1. tools/ltx_goldens.py --case model-2b: random bf16 weights (diffusers' key names, config.json), S = 6144
#     (grid 16x16x24), T = 128; diffusers' resident forward output + its time (CUDA events, median of --time N).
#  2. GPU tests LtxModelGpu* (vs the CPU reference, tiny diffusers goldens, streamed == resident bit for bit,
#     budget refusals) and FullSize2BDiffusers against (1) via WS_LTX_MODEL_DIR; FlowStreamer*.
#  3. `warpstream ltx` batch 1 and 2: resident vs --vram-budget 1GiB in one process (ratio, bit equality,
#     slots, streamed bytes, H2D GB/s, timeline of copy waits).
# Needs .whl carried (diffusers). Under $OUT: ltx-model.txt.
LM=$OUT/ltx-model.txt; : > "$LM"
ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
G=/tmp/ltx_model_2b
timeout 300 python3 tools/ltx_goldens.py --case model-2b --out $G --device cuda --dtype bfloat16 --time 10 \
  > "$L/ltx-model-goldens.txt" 2>&1
rc=$?; mark $rc
row "diffusers goldens model-2b" "rc=$rc $(grep '^ltx_goldens:' "$L/ltx-model-goldens.txt" | cut -c1-170)"
[ $rc -eq 0 ] || tail -5 "$L/ltx-model-goldens.txt" | tee -a "$LM"
WS_LTX_MODEL_DIR=$G timeout 240 "$GT" --gtest_filter='LtxModelGpu*:FlowStreamer*' > "$L/ltx-model-tests.txt" 2>&1
rc=$?; mark $rc
row "gpu tests LtxModelGpu*:FlowStreamer*" "rc=$rc $(gtest_result "$L/ltx-model-tests.txt") ($(elapsed) s)"
grep -E '^\[  FAILED  \] [A-Za-z]|cosine|max-abs|slots|zero-copy|bit' "$L/ltx-model-tests.txt" | head -40 >> "$LM"
for b in 1 2; do
  [ "$(left)" -gt 45 ] || { row "ltx batch $b" "SKIPPED (budget)"; continue; }
  timeout 150 "$WS" ltx --checkpoint $G --grid 16x16x24 --text-tokens 128 --batch $b --vram-budget 1GiB \
    --compare-resident --timeline --iterations ${WS_LTX_ITERS:-10} --json "$L/ltx-b$b.json" > "$L/ltx-b$b.txt" 2>&1
  rc=$?; mark $rc
  row "warpstream ltx batch $b (1 GiB vs resident)" "rc=$rc $(grep -iE 'ratio' "$L/ltx-b$b.txt" | head -1 | cut -c1-110)"
  { echo "## warpstream ltx batch $b"; cat "$L/ltx-b$b.txt"; } >> "$LM"
done
[ -f $G/timing.json ] && { echo "## diffusers model timing"; cat $G/timing.json; echo; } >> "$LM"
