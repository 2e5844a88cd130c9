# Suite ltx-model of scripts/device.sh (sourced): the whole LTX-Video 2B transformer (28 blocks, bf16) on the GPU,
# resident and with block weights streamed from one pinned host copy under a 1 GiB budget, beside diffusers.
#  1. tools/ltx_goldens.py --case model-2b: random bf16 weights (diffusers' key names, config.json), S = 6144
#     (grid 16x16x24), T = 128; diffusers' resident forward output + its time (CUDA events, median of --time N).
#  2. GPU tests LtxModelGpu* (vs the CPU reference, tiny diffusers goldens, streamed == resident bit for bit,
#     budget refusals) and FullSize2BDiffusers against (1) via WS_LTX_MODEL_DIR; FlowStreamer*.
#  3. `warpstream ltx` batch 1 (1 GiB) and 2 (1536 MiB), bf16, and batch 1 --stream-weights fp8 (1 GiB): resident
#     vs streamed in one process (ratio, bit equality, slots, streamed bytes, H2D GB/s, timeline of copy waits).
# Needs .whl carried (diffusers). Under $OUT: ltx-model.txt.
LM=$OUT/ltx-model.txt; : > "$LM"
ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
G=/tmp/ltx_model_2b
timeout 300 python3 tools/ltx_goldens.py --case model-2b --out $G --device cuda --dtype bfloat16 --time 20 \
  > "$L/ltx-model-goldens.txt" 2>&1
rc=$?; mark $rc
row "diffusers goldens model-2b" "rc=$rc $(grep '^ltx_goldens:' "$L/ltx-model-goldens.txt" | cut -c1-170)"
[ $rc -eq 0 ] || tail -5 "$L/ltx-model-goldens.txt" | tee -a "$LM"
WS_LTX_MODEL_DIR=$G timeout 240 "$GT" --gtest_filter='LtxModelGpu*:FlowStreamer*' > "$L/ltx-model-tests.txt" 2>&1
rc=$?; mark $rc
row "gpu tests LtxModelGpu*:FlowStreamer*" "rc=$rc $(gtest_result "$L/ltx-model-tests.txt") ($(elapsed) s)"
grep -E '^\[  FAILED  \] [A-Za-z]|cosine|max-abs|slots|zero-copy|bit' "$L/ltx-model-tests.txt" | head -40 >> "$LM"
# The budget covers everything now (weights + ring + staging + activations: one block arena shared by all blocks);
# batch 2's activations alone are ~1 GiB at S = 6144, so batch 2 gets 1536MiB. fp8: the ring carries fp8 block
# weights (half the bytes), dequantised into a bf16 staging image before each block; its resident twin holds the
# same dequantised weights (bit-identical expected).
for run in "1 1GiB bf16" "2 1536MiB bf16" "1 1GiB fp8"; do
  read -r b budget sw <<< "$run"
  [ "$(left)" -gt 45 ] || { row "ltx batch $b $sw" "SKIPPED (budget)"; continue; }
  timeout 150 "$WS" ltx --checkpoint $G --grid 16x16x24 --text-tokens 128 --batch $b --vram-budget $budget \
    --stream-weights $sw --compare-resident --timeline --iterations ${WS_LTX_ITERS:-10} --json "$L/ltx-b$b-$sw.json" \
    > "$L/ltx-b$b-$sw.txt" 2>&1
  rc=$?; mark $rc
  row "warpstream ltx batch $b $sw ($budget vs resident)" "rc=$rc $(grep -iE 'ratio|streamed/resident' "$L/ltx-b$b-$sw.txt" | head -1 | cut -c1-110)"
  { echo "## warpstream ltx batch $b --stream-weights $sw --vram-budget $budget"; cat "$L/ltx-b$b-$sw.txt"; } >> "$LM"
done
[ -f $G/timing.json ] && { echo "## diffusers model timing"; cat $G/timing.json; echo; } >> "$LM"
# fp8 block weights, timed on one 2B block taken from the same checkpoint (block 0), beside bf16.
for w in bf16 fp8; do
  [ "$(left)" -gt 30 ] || { row "ltx-block block 0 $w" "SKIPPED (budget)"; continue; }
  timeout 60 "$WS" ltx-block --model $G/diffusion_pytorch_model.safetensors --block 0 --weights $w --profile > "$L/ltx-model-block0-$w.txt" 2>&1
  rc=$?; mark $rc
  row "warpstream ltx-block block 0 --weights $w" "rc=$rc $(grep -iE 'median' "$L/ltx-model-block0-$w.txt" | head -1 | cut -c1-110)"
  { echo "## ltx-block block 0 of the 2B checkpoint, $w"; cat "$L/ltx-model-block0-$w.txt"; } >> "$LM"
done
