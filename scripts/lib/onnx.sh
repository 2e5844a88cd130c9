# Suite onnx of scripts/device.sh (sourced): ONNX conformance on the CUDA executor and the torchvision zoo on it.
#  1. `warpstream onnx-test` on every suite carried under .onnxdata/ (copies of Debian libonnx-testdata's
#     data/<suite>: node, pytorch-converted, pytorch-operator, simple — whatever is there): CUDA executor fp32 and
#     fp16, plus the CPU executor (fp32) for the same-run baseline; all jobs run concurrently, each bounded.
#  2. tools/zoo_check.py --device cuda --precision fp32,fp16: torchvision classification models built with random
#     weights and exported HERE (torch + torchvision of the device image; TorchScript exporter), reference =
#     onnxruntime when importable, else PyTorch's own CPU float32 forward; bounded by a time budget.
# Gate: any FAIL / BAD / timeout in fp32 (CUDA or CPU) fails the suite, and so does a zoo model that fails in fp32.
# fp16 is reported, not gated: onnx-test's fp16 rule is per output rtol 2e-2, atol 2e-2 · max(1, max|expected|);
# the zoo's is rtol 2e-2, atol 2e-2 · max|logit|. fp16 FAIL lines are listed under the table.
# Needs nothing carried beyond the usual .debs (+ .onnxdata for the suites; the zoo needs no file).
# Knobs: WS_ONNX_SECONDS (per onnx-test job, default 200), WS_ZOO_SECONDS (no new zoo model after it, default
# 150; the zoo is killed WS_ZOO_GRACE = 70 s later), WS_ZOO_JOBS (zoo processes side by side, default 1),
# WS_ZOO_BUSY (set: another process keeps the GPU busy during the zoo, see below),
# WS_ZOO_MODELS (comma list, `all` = the 13 + efficientnet_b3/v2_s, resnext50, wide_resnet50_2, inception_v3,
# swin_t, maxvit_t, or `full` = all + the other sizes; default tools/zoo_check.py's 13 models). The whole zoo in one call:
#   WS_ZOO_MODELS=all WS_ZOO_SECONDS=400 bash scripts/device.sh onnx
# Under $OUT: onnx-counts.md (suite × executor × precision → passed / failed / skipped), zoo.md (model ×
# precision table), onnx-fails.txt (every FAIL / BAD line); logs in $L/onnx-*.txt.
ws_build warpstream || { FAILED=1; return; }
OC=$OUT/onnx-counts.md
OF=$OUT/onnx-fails.txt
: > "$OF"
onnx_secs=${WS_ONNX_SECONDS:-200}
[ "$onnx_secs" -gt $(( $(left) - 20 )) ] && onnx_secs=$(( $(left) - 20 ))
zoo_secs=${WS_ZOO_SECONDS:-150}
suites=()
for od in .onnxdata/*/; do [ -d "$od" ] && suites+=("$(basename "$od")"); done
[ ${#suites[@]} -gt 0 ] || row "onnx suites" "none under .onnxdata/ (carry .onnxdata)"

# WS_ZOO_BUSY=1: keep the GPU's copy engines and SMs busy from another process while the zoo runs (`warpstream h2d`
# in a loop: pinned and pageable transfers of up to 1 GiB). The regression check of the legacy-stream upload hazard:
# four zoo models gave wrong logits only on a busy GPU (device runs 18-19 of 2026-12-02, docs/results/H200.md).
busy_pid=""
if [ -n "${WS_ZOO_BUSY:-}" ]; then
  ( while :; do "$WS" h2d --quick --iters 10 --max-mib 1024 > /dev/null 2>&1 || sleep 1; done ) &
  busy_pid=$!
  row "zoo: GPU kept busy" "warpstream h2d --quick in a loop beside the zoo (pid $busy_pid)"
fi
# The zoo first (the longest job), in the background, with fewer CPU threads than the machine has. WS_ZOO_JOBS=N
# runs N zoo_check processes (--shard k/N: every N-th model) side by side on the one GPU; their tables are merged.
zoo_pids=()
zoo_jobs=${WS_ZOO_JOBS:-1}
if [ "$onnx_secs" -gt 60 ]; then
  for (( zk = 0; zk < zoo_jobs; zk++ )); do
    OMP_NUM_THREADS=$(( 8 / zoo_jobs > 0 ? 8 / zoo_jobs : 1 )) timeout $(( zoo_secs + ${WS_ZOO_GRACE:-70} )) \
      python3 tools/zoo_check.py --warpstream "$WS" --out "/tmp/ws-zoo-$zk" --device cuda --shard "$zk/$zoo_jobs" \
      --precision fp32,fp16 --time-budget "$zoo_secs" ${WS_ZOO_MODELS:+--models "$WS_ZOO_MODELS"} --markdown \
      > "$L/onnx-zoo-$zk.txt" 2>&1 &
    zoo_pids+=($!)
  done
fi
# Every (suite, executor, precision) job at once: each is one process, mostly single-threaded.
jobs_list=()
for sn in "${suites[@]}"; do
  for ep in cuda:fp32 cuda:fp16 cpu:fp32; do
    dev=${ep%%:*} prec=${ep##*:}
    timeout "$onnx_secs" "$WS" onnx-test -v --device "$dev" --precision "$prec" ".onnxdata/$sn" > "$L/onnx-$sn-$dev-$prec.txt" 2>&1 &
    jobs_list+=("$sn:$dev:$prec:$!")
  done
done
{ echo "| suite | executor | precision | passed | failed | skipped | note |"; echo "|---|---|---|---|---|---|---|"; } > "$OC"
for j in "${jobs_list[@]}"; do
  IFS=: read -r sn dev prec pid <<< "$j"
  wait "$pid"; rc=$?
  log=$L/onnx-$sn-$dev-$prec.txt
  counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
  p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<< "$counts"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<< "$counts")
  k=$(sed -E 's/.* ([0-9]+) skipped.*/\1/' <<< "$counts")
  note="rc=$rc"
  if [ -z "$counts" ]; then  # cut short (timeout): count the per-case lines of -v so far
    p=$(grep -c '^PASS ' "$log"); f=$(grep -cE '^(FAIL|BAD) ' "$log"); k=$(grep -c '^SKIP ' "$log")
    note="rc=$rc, INCOMPLETE (cases so far)"; [ $rc -eq 124 ] && note="TIMEOUT after ${onnx_secs} s: cases so far"
  fi
  echo "| $sn | $dev | $prec | $p | $f | $k | $note |" >> "$OC"
  grep -E '^(FAIL|BAD) ' "$log" | sed "s/^/[$sn $dev $prec] /" >> "$OF"
  # fp32 gates (rc 1 = a FAIL, 2 = bad input, 124 = timeout); fp16 is reported.
  [ "$prec" = fp32 ] && mark $rc
  row "onnx-test $dev $prec $sn" "rc=$rc ${counts:-no summary line}"
done
if [ ${#zoo_pids[@]} -gt 0 ]; then
  zrc=0
  for zp in "${zoo_pids[@]}"; do wait "$zp"; r=$?; [ "$r" -gt "$zrc" ] && zrc=$r; done  # the worst exit status
  cat "$L"/onnx-zoo-*.txt > "$L/onnx-zoo.txt"
  { echo "| model | CUDA executor precision | vs reference | note |"; echo "|---|---|---|---|"
    for zl in "$L"/onnx-zoo-*.txt; do sed -n '/^| model /,$p' "$zl" | tail -n +3; done; } > "$OUT/zoo.md"
  # fp32 gates: a zoo model that does not pass in fp32 (FAIL, refused, export failed, not run) fails the suite.
  zfail32=$(grep -cE '^\| [^|]+ \| fp32 \| (FAIL|refused|export failed|not run) ' "$OUT/zoo.md")
  [ "$zrc" -eq 2 ] || [ "$zrc" -eq 124 ] && zfail32=$(( zfail32 + 1 ))  # no CUDA device / torch missing / killed
  [ "$zfail32" -gt 0 ] && FAILED=1
  row "zoo (torchvision) on CUDA fp32" "$(grep -cE '^\| [^|]+ \| fp32 \| pass ' "$OUT/zoo.md") pass, $zfail32 not passing (rc=$zrc; $(head -1 "$L/onnx-zoo.txt" | cut -c1-90))"
  row "zoo (torchvision) on CUDA fp16" "$(grep -cE '^\| [^|]+ \| fp16 \| pass ' "$OUT/zoo.md") pass, $(grep -cE '^\| [^|]+ \| fp16 \| [^p]' "$OUT/zoo.md") not passing (reported)"
  grep -E '^\| [^|]+ \| fp(32|16) \| [^p]' "$OUT/zoo.md" | head -20 | sed 's/^/    zoo: /' | cut -c1-200 | tee -a "$SUM"
fi
[ -n "$busy_pid" ] && { kill "$busy_pid" 2>/dev/null; pkill -f "$WS h2d" 2>/dev/null; wait "$busy_pid" 2>/dev/null; }
{ echo; echo "ONNX conformance, $(date -u +%F) on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), commit $(git rev-parse --short HEAD 2>/dev/null)"; } >> "$OC"
cat "$OC" >> "$SUM"
n_fail=$(wc -l < "$OF")
[ "$n_fail" -gt 0 ] && { echo "FAIL / BAD lines ($n_fail, first 15; all in onnx-fails.txt):"; head -15 "$OF" | cut -c1-220; } | tee -a "$SUM"
row "suite onnx" "done ($(elapsed) s)"
