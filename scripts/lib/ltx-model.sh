# Suite ltx-model of scripts/device.sh (sourced): the whole LTX-Video transformer, 2B (28 blocks) and 13B (48 blocks),
# resident and with block weights streamed from one pinned host copy under a VRAM budget, beside diffusers (resident
# and group offloading) in the same call. Every stage checks left() and prints a SKIPPED row when short.
#  2B (S = 6144 = grid 16x16x24, T = 128):
#   1. tools/ltx_goldens.py --case model-2b: random bf16 weights (diffusers' key names, config.json) + diffusers'
#      resident forward output and time (the goldens of LtxModelGpu.FullSize2BDiffusers).
#   2. GPU tests LtxModelGpu*:FlowStreamer* (WS_LTX_TESTS=0 skips them).
#   3. `warpstream ltx` batch 1 bf16 (1 GiB), batch 2 bf16 (1536 MiB), batch 1 fp8 (1 GiB): streamed vs resident in
#      one process (ratio, bit equality, slots, H2D GB/s, timeline), --report warpstream-bench/1 files.
#      + batch 1 bf16 with --max-slots 2 (28 layers: 2 slots avoid the slot collision at the forward boundary).
#   4. The budget refusal through the CLI (--vram-budget 64MiB: exit 2, one line naming every part).
#   5. bench/peers/ltx_peer.py on the same checkpoint: diffusers resident, group offload block_level + use_stream +
#      record_stream, leaf_level + use_stream; `warpstream compare` ours vs diffusers.
#  13B (heads 32 x 128 = 4096, 48 blocks, cross 4096; same workload):
#   6. tools/make_ltx_checkpoint.py --config 13b: 26.1 GB bf16 in /tmp, 3 shards + index (diffusers' layout).
#   7. `warpstream ltx --stream-weights fp8`: the 1 GiB budget (refused up front; the line names the parts), then
#      streamed under WS_LTX13_FP8_BUDGET (default 2GiB, issue 12's budget: per-linear staging, 2 slots) vs the
#      resident fp8 twin (bf16 weights dequantised from the same fp8 codes: bf16 resident compute).
#   8. `warpstream ltx --stream-weights bf16` streamed under WS_LTX13_BF16_BUDGET (default 3GiB, 3 slots), with the
#      timeline (transfer floor 26.1 GB / 54.8 GB/s = 476 ms).
#   9. bench/peers/ltx_peer.py on the same checkpoint (built on the meta device, the shards loaded straight onto the
#      GPU with strict=True: seconds, not minutes of CPU init; WS_LTX13_PEER_INIT=--random-init uses diffusers' own
#      init on the GPU instead): resident, leaf, block; `warpstream compare`.
#  10. batch 2 (CFG) 13B fp8 rows when time is left (WS_LTX13_B2_BUDGET, default 4GiB).
# Needs .whl carried (diffusers) and .cudnn_frontend. Under $OUT: ltx-model.txt, ltx-gantt.png, ltx-reports/{2b,13b}/*.json,
# ltx-compare-{2b,13b}.txt. Disk: 30 GB in /tmp (removed at the end; WS_LTX_KEEP=1 keeps it).
LM=$OUT/ltx-model.txt; : > "$LM"
RP=$OUT/ltx-reports; mkdir -p "$RP/2b" "$RP/13b"
ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
G=/tmp/ltx_model_2b
G13=/tmp/ltx_13b
ITERS=${WS_LTX_ITERS:-10}
t_stage=0
stage_start() { t_stage=$(date +%s); }
stage_s() { echo $(( $(date +%s) - t_stage )); }
# ltx_run NAME TIMEOUT ARGS... : one `warpstream ltx` into $L/ltx-NAME.txt, its summary row and its log in $LM.
ltx_run() {
  local name=$1 t=$2; shift 2
  stage_start
  timeout "$t" "$WS" ltx "$@" > "$L/ltx-$name.txt" 2>&1
  local rc=$?; mark $rc
  row "ltx $name" "rc=$rc $( (grep -E 'streamed/resident' "$L/ltx-$name.txt" || grep -E 'ms/forward' "$L/ltx-$name.txt" || grep '^error' "$L/ltx-$name.txt") | head -2 | tr '\n' ' ' | cut -c1-150) ($(stage_s) s, left $(left))"
  { echo "## warpstream ltx $*"; cat "$L/ltx-$name.txt"; echo; } >> "$LM"
  return $rc
}
# ltx_compare SIZE FILES... : `warpstream compare` of the reports that exist (ours first).
ltx_compare() {
  local size=$1; shift
  local files=()
  for f in "$@"; do [ -f "$f" ] && files+=("$f"); done
  [ ${#files[@]} -ge 2 ] || { row "compare $size" "SKIPPED (fewer than 2 reports)"; return; }
  "$WS" compare "${files[@]}" > "$OUT/ltx-compare-$size.txt" 2> "$L/ltx-compare-$size.err"
  row "compare $size (first / this, p50)" "rc=$? $(awk -F'|' 'NR>2 && NF>7{gsub(/^ +| +$/,"",$2); gsub(/ /,"",$7); printf "%s %s; ", $2, $7}' "$OUT/ltx-compare-$size.txt" | cut -c1-300)"
  { echo "## warpstream compare ($size)"; cat "$OUT/ltx-compare-$size.txt" "$L/ltx-compare-$size.err"; echo; } >> "$LM"
}

# ---- 2B -----------------------------------------------------------------------------------------------------------
stage_start
timeout 300 python3 tools/ltx_goldens.py --case model-2b --out $G --device cuda --dtype bfloat16 --time 20 \
  > "$L/ltx-model-goldens.txt" 2>&1
rc=$?; mark $rc
row "diffusers goldens model-2b" "rc=$rc $(grep '^ltx_goldens:' "$L/ltx-model-goldens.txt" | cut -c1-170) ($(stage_s) s)"
[ $rc -eq 0 ] || tail -5 "$L/ltx-model-goldens.txt" | tee -a "$LM"
if [ "${WS_LTX_TESTS:-1}" = 1 ]; then
  WS_LTX_MODEL_DIR=$G timeout 240 "$GT" --gtest_filter='LtxModelGpu*:FlowStreamer*' > "$L/ltx-model-tests.txt" 2>&1
  rc=$?; mark $rc
  row "gpu tests LtxModelGpu*:FlowStreamer*" "rc=$rc $(gtest_result "$L/ltx-model-tests.txt") ($(elapsed) s)"
  grep -E '^\[  FAILED  \] [A-Za-z]|cosine|max-abs|slots|zero-copy|bit' "$L/ltx-model-tests.txt" | head -40 >> "$LM"
fi
# The budget covers everything (weights + ring + staging + activations); batch 2's activations alone are ~1 GiB.
for run in "1 1GiB bf16" "2 1536MiB bf16" "1 1GiB fp8"; do
  read -r b budget sw <<< "$run"
  [ "$(left)" -gt 250 ] || { row "ltx 2b-b$b-$sw" "SKIPPED (budget: $(left) s left, the 13B rows need 250)"; continue; }
  ltx_run "2b-b$b-$sw" 150 --checkpoint $G --grid 16x16x24 --text-tokens 128 --batch $b --vram-budget $budget \
    --stream-weights $sw --compare-resident --timeline --iterations $ITERS --json "$L/ltx-2b-b$b-$sw.json" --report "$RP/2b"
done
# 28 layers in 3 slots: layer 27 and the next forward's layer 0 share slot 0, so the tail prefetch of layer 0 waits
# for layer 27's compute (~1.9 ms of idle copy engine per forward in run 06's timeline). 2 slots divide 28: no wait.
if [ "$(left)" -gt 250 ]; then
  ltx_run 2b-b1-bf16-2slots 90 --checkpoint $G --grid 16x16x24 --text-tokens 128 --batch 1 --vram-budget 1GiB \
    --stream-weights bf16 --max-slots 2 --timeline --iterations $ITERS --json "$L/ltx-2b-b1-bf16-2slots.json"
else row "ltx 2b-b1-bf16-2slots" "SKIPPED (budget: $(left) s left)"; fi
# Budget refusal through the CLI: exit 2, one error line with the given and needed bytes and the parts.
timeout 60 "$WS" ltx --checkpoint $G --vram-budget 64MiB > "$L/ltx-2b-refusal.txt" 2>&1
rc=$?; [ $rc -eq 2 ] && [ "$(grep -c '^error' "$L/ltx-2b-refusal.txt")" = 1 ] || mark 1
row "ltx 2b --vram-budget 64MiB (refusal)" "rc=$rc (2 expected) $(grep '^error' "$L/ltx-2b-refusal.txt" | cut -c1-200)"
if [ "$(left)" -gt 230 ]; then
  stage_start
  timeout 120 python3 bench/peers/ltx_peer.py --checkpoint $G --modes resident,block,leaf --iterations $ITERS \
    --offload-iterations 5 --warmup 2 --out-dir "$RP/2b" --deadline-s $(( $(left) - 220 )) --mode-cost-s 15 \
    > "$L/ltx-peer-2b.txt" 2>&1
  rc=$?; mark $rc
  row "diffusers peer 2b" "rc=$rc ($(stage_s) s, left $(left))"
  grep '^\[ltx_peer\]' "$L/ltx-peer-2b.txt" | sed 's/^/    /' | tee -a "$SUM" >> "$LM"
  [ $rc -eq 0 ] || tail -5 "$L/ltx-peer-2b.txt" | tee -a "$LM"
else
  row "diffusers peer 2b" "SKIPPED (budget: $(left) s left)"
fi
ltx_compare 2b "$RP/2b/ltx_ours_streamed_bf16_b1.json" "$RP/2b/ltx_ours_resident_bf16_b1.json" \
  "$RP/2b/ltx_ours_streamed_fp8_b1.json" "$RP/2b/ltx_diffusers_resident_b1.json" "$RP/2b/ltx_diffusers_block_b1.json" \
  "$RP/2b/ltx_diffusers_leaf_b1.json"
rm -rf $G

# ---- 13B ----------------------------------------------------------------------------------------------------------
if [ "$(left)" -gt 150 ]; then
  stage_start
  df -h /tmp > "$L/ltx-13b-df.txt" 2>&1
  timeout 200 python3 tools/make_ltx_checkpoint.py --config 13b --out $G13 --dtype bf16 --shard-size 10GB \
    > "$L/ltx-13b-checkpoint.txt" 2>&1
  rc=$?; mark $rc
  row "make_ltx_checkpoint 13b" "rc=$rc $(grep '^make_ltx_checkpoint:' "$L/ltx-13b-checkpoint.txt" | cut -c1-200) ($(stage_s) s)"
  [ $rc -eq 0 ] || { tail -5 "$L/ltx-13b-checkpoint.txt" | tee -a "$LM"; cat "$L/ltx-13b-df.txt" >> "$LM"; }
else
  row "make_ltx_checkpoint 13b" "SKIPPED (budget: $(left) s left)"
fi
if [ -f $G13/diffusion_pytorch_model.safetensors.index.json ]; then
  # 1 GiB: refused before any weight is read (the message names weights, activations, staging and slots).
  timeout 60 "$WS" ltx --checkpoint $G13 --stream-weights fp8 --vram-budget 1GiB > "$L/ltx-13b-1GiB.txt" 2>&1
  rc=$?; [ $rc -eq 2 ] || mark 1
  row "ltx 13b fp8 --vram-budget 1GiB (refusal)" "rc=$rc (2 expected) $(grep -oE 'is too small: needed at least [0-9]+ bytes \([^)]*\)' "$L/ltx-13b-1GiB.txt" | head -1)"
  cat "$L/ltx-13b-1GiB.txt" >> "$LM"
  B8=${WS_LTX13_FP8_BUDGET:-2GiB}; B16=${WS_LTX13_BF16_BUDGET:-3GiB}
  if [ "$(left)" -gt 70 ]; then
    ltx_run 13b-b1-fp8 $(( $(left) - 10 < 150 ? $(left) - 10 : 150 )) --checkpoint $G13 --grid 16x16x24 --text-tokens 128 \
      --batch 1 --vram-budget $B8 --stream-weights fp8 --compare-resident --timeline --iterations 5 --warmup 2 \
      --json "$L/ltx-13b-b1-fp8.json" --report "$RP/13b"
  else row "ltx 13b-b1-fp8" "SKIPPED (budget: $(left) s left)"; fi
  if [ "$(left)" -gt 45 ]; then
    ltx_run 13b-b1-bf16 $(( $(left) - 10 < 120 ? $(left) - 10 : 120 )) --checkpoint $G13 --grid 16x16x24 --text-tokens 128 \
      --batch 1 --vram-budget $B16 --stream-weights bf16 --timeline --iterations 5 --warmup 2 \
      --json "$L/ltx-13b-b1-bf16.json" --report "$RP/13b"
    grep -oE 'streamed: ms/forward median [0-9.]+' "$L/ltx-13b-b1-bf16.txt" | awk '{printf "    13B bf16 streamed / 476 ms transfer floor: %.3fx\n", $4/476}' | tee -a "$SUM" >> "$LM"
  else row "ltx 13b-b1-bf16" "SKIPPED (budget: $(left) s left)"; fi
  if [ "$(left)" -gt 60 ]; then
    stage_start
    timeout $(( $(left) - 15 )) python3 bench/peers/ltx_peer.py --checkpoint $G13 ${WS_LTX13_PEER_INIT:-} \
      --modes resident,leaf,block --iterations 3 --offload-iterations 2 --warmup 1 --out-dir "$RP/13b" \
      --deadline-s $(( $(left) - 20 )) --mode-cost-s 40 > "$L/ltx-peer-13b.txt" 2>&1
    rc=$?; mark $rc
    row "diffusers peer 13b" "rc=$rc ($(stage_s) s, left $(left))"
    grep '^\[ltx_peer\]' "$L/ltx-peer-13b.txt" | sed 's/^/    /' | tee -a "$SUM" >> "$LM"
    [ $rc -eq 0 ] || tail -5 "$L/ltx-peer-13b.txt" | tee -a "$LM"
  else row "diffusers peer 13b" "SKIPPED (budget: $(left) s left)"; fi
  ltx_compare 13b "$RP/13b/ltx_ours_streamed_fp8_b1.json" "$RP/13b/ltx_ours_resident_fp8_b1.json" \
    "$RP/13b/ltx_ours_streamed_bf16_b1.json" "$RP/13b/ltx_diffusers_resident_b1.json" \
    "$RP/13b/ltx_diffusers_leaf_b1.json" "$RP/13b/ltx_diffusers_block_b1.json"
  if [ "$(left)" -gt 60 ]; then
    cmp=""; [ "$(left)" -gt 110 ] && cmp=--compare-resident
    ltx_run 13b-b2-fp8 $(( $(left) - 10 )) --checkpoint $G13 --grid 16x16x24 --text-tokens 128 --batch 2 \
      --vram-budget ${WS_LTX13_B2_BUDGET:-4GiB} --stream-weights fp8 $cmp --iterations 3 --warmup 1 \
      --json "$L/ltx-13b-b2-fp8.json" --report "$RP/13b"
  else row "ltx 13b-b2-fp8" "SKIPPED (budget: $(left) s left)"; fi
fi
[ "${WS_LTX_KEEP:-0}" = 1 ] || rm -rf $G13
# The per-block Gantt chart (copy stream vs compute stream, one timed forward) of every streamed run with a timeline.
tl=(); for f in "$L"/ltx-2b-b1-bf16.json "$L"/ltx-2b-b1-fp8.json "$L"/ltx-13b-b1-fp8.json "$L"/ltx-13b-b1-bf16.json; do
  [ -f "$f" ] && tl+=("$f"); done
if [ ${#tl[@]} -gt 0 ]; then
  python3 tools/plot_ltx_timeline.py "$OUT/ltx-gantt.png" "${tl[@]}" > "$L/ltx-gantt.txt" 2>&1
  row "ltx Gantt chart" "rc=$? $(tail -1 "$L/ltx-gantt.txt" | cut -c1-120)"
fi
