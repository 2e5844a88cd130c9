# `bash scripts/device.sh sanitize` (sourced by scripts/device.sh after ws_build ws_gpu_tests; never run alone):
# compute-sanitizer memcheck, racecheck, synccheck and initcheck over the WHOLE GPU suite (ws_gpu_tests), the four
# tools at once as parallel processes (the tools are CPU-bound in their instrumentation; the GPU machine has 16
# cores), each tool split into gtest shards (GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX), every process under one time cap.
#
# What each tool checks, and every exclusion with its reason (the same text is in docs/results/H200.md):
#   memcheck   every kernel: ours, cuBLASLt, cuDNN, CUTLASS (a vendor kernel reading past a buffer we passed it is
#              our bug).
#   racecheck  OUR kernels only: --kernel-name 'regex=ws::|N2ws' = every kernel in namespace ws (all of ours, in
#              src/, tests/gpu and bench/; demangled or mangled name). Excluded: cuBLASLt, cuDNN and the CUTLASS
#              templates (cutlass::device_kernel<...>): not our code to fix, and racecheck over their Hopper
#              TMA/mbarrier pipelines did not finish within a device call (run 07: cut at 227 s). Tests left out:
#              SAN_RACECHECK_TOOL_LIMIT below (the tool crashes on vendor tensor-core kernels even uninstrumented).
#   synccheck  OUR kernels only (same filter): synccheck's cuda::barrier tracking overflows inside cuBLASLt/cuDNN
#              Hopper kernels ("Detected overflow of tracked cuda::barrier structures", run 07), which voids the run.
#   initcheck  every kernel (a kernel left out of instrumentation would have its stores untracked, and our reads of
#              its output would all look uninitialised). The probe below says whether initcheck tracks cuBLASLt's
#              stores on this machine; the LTX activation arenas are NaN-poisoned at build (as the CUDA engine's and
#              the LTX model's buffers already were), so the LTX tests' comparisons with the CPU reference catch a
#              read of anything no stage wrote, and initcheck has nothing to say about those arenas.
#   all tools  -DeviceInit.FreshProcess*: death tests re-execute the binary (they hang under the sanitizer).
#              DISABLED_ tests (timing tests, the canaries) stay off in the suite runs.
# Canaries (one short process per tool, run beside the suite): SanitizerCanary.DISABLED_<Tool> launches a kernel of
# ours with one deliberate bug of the tool's class (tests/gpu/sanitizer_canary_test.cpp) under the same options and
# filter; the tool MUST report it (exit 3). A canary that passes means the tool or its filter checked nothing, and
# the tool's row fails even if its suite run was clean.
# Probe: SanitizerProbe.DISABLED_CublasLtStoresSeenByInitcheck under initcheck: a cuBLASLt GEMM writes a fresh
# buffer (every element checked vs a CPU GEMM), a kernel of ours reads it; a report = initcheck does not see
# cuBLASLt's stores. Reported (not a pass/fail stage): it explains, not gates.
# WS_GPU_TEST_SMALL=1 is exported: the looping tests run their small form (tests/support/small_tests.h).
# Knobs: WS_SANITIZE_CACHE_TESTS (the plain run that writes racecheck's timing caches; default all of
# SAN_TIMING_CACHE_TESTS), WS_SANITIZE_TOOLS (default: all four), WS_SANITIZE_FILTER (gtest filter, default the whole suite),
# WS_SANITIZE_FILTER_<tool>, WS_SANITIZE_SHARDS_<tool> (default 3 memcheck/initcheck, 2 racecheck,
# 1 synccheck), WS_SANITIZE_SECONDS (cap of every
# process, default: what the call has left minus 20 s). A process cut by the cap is a failure (rc 124): narrow the
# filter or add shards rather than read a partial run as clean. WS_SANITIZE_WEIGHTS: the per-test times that balance
# the shards (default scripts/lib/gpu-test-ms.txt, from device run 21, and scripts/lib/racecheck-ms.txt for racecheck;
# empty: every N-th test; san_assign in scripts/lib/san-shard.sh).
# Logs: $L/sanitize-<tool>-<shard>.txt, $L/sanitize-canary-<tool>.txt, $L/sanitize-probe-initcheck.txt.
export WS_GPU_TEST_SMALL=1
SAN_OURS='regex=ws::|N2ws'
SAN_EXCLUDE_TESTS='DeviceInit.FreshProcess*'
# racecheck also leaves out the tests whose fp16 / bf16 / fp8 work runs vendor tensor-core (Hopper wgmma/TMA)
# kernels: the tool itself dies in them ("Internal Sanitizer Error: The Sanitizer failed to handle a hardware
# exception"; device runs 14 and 18 of 2026-12-01/02: all 22 tool errors were these, their fp32 parts ran clean),
# as in the CUTLASS tests. racecheck instruments only our kernels; ours in these tests are racechecked by their
# own unit tests (TransformerKernels.*, ConvKernels.*, TopKGpu.*, PreprocessGpu.*, the lanes' fp32 cases).
# CudaEngineResidual.DownsampleBlockFoldsIntoTheLaterConv: the same tool error in its fp16 cuDNN tactic timing
# (device run 23 of 2026-12-02); its fp32 pass (cuDNN fused bias+residual+relu) ran clean before it.
# The whole-model tests that read WS_GPU_TEST_TIMING_CACHE_DIR (their racecheck form, below).
SAN_TIMING_CACHE_TESTS='CudaEngineConvTactics.EfficientNetLite0WarpStreamOnlyMatchesCpu:CudaEngineModel.EfficientNetLite0MatchesCpu:CudaEngineLayout.EfficientNetLite0NhwcMatchesCpu:LanePrecisions/LaneEfficientNet.*'
# CudaEngineDwPw.EfficientNetLite0FusedPairsMatchCpu: the same tool error while its first build timed fp16 tactics
# (cuDNN candidates, then ws_depthwise_x4 of block 0; run 54 of 2026-12-05, on an H100), before any fused kernel ran;
# the fused kernel is racechecked by ConvKernels.DepthwisePointwise* (clean in that run).
SAN_RACECHECK_TOOL_LIMIT='CudaEngineDwPw.*:CudaEngineModel.DemoModelMatchesCpu:CudaEngineModel.GraphReplayEqualsDirectBitwise:CudaEngineModel.SetInputAddressReadsCallerBuffer:LtxBlockGpu.*:LtxModelGpu.*:LtxTransformerGpu.*:LaneModes/LaneCorrectness.MatchesCpuOnRandomFrames/fp16_*:LaneGraphVsDirect.*:LanePrecisions/LaneEfficientNet.Top5AndLogitsMatchCpu/fp16:CudaEngineResidual.DownsampleBlockFoldsIntoTheLaterConv'
san_opts() {  # tool -> compute-sanitizer options (one per line)
  printf '%s\n' --tool "$1" --error-exitcode 3 --print-limit 200
  case $1 in
    racecheck) printf '%s\n' --kernel-name "$SAN_OURS" ;;
    synccheck) printf '%s\n' --kernel-name "$SAN_OURS" ;;
  esac
}
# san_kernels LOG : "N x kernel" for the kernels named first in each report (top 6), one line.
san_kernels() {
  awk '/^========= [A-Z]/ && !/SUMMARY/ {want=1; next}
       want && /^=========     at / {sub(/^=========     at /, ""); sub(/\+0x[0-9a-f]+$/, ""); sub(/\([^()]*\)$/, ""); n[$0]++; want=0}
       END {for (k in n) printf "%d x %s\n", n[k], k}' "$1" | sort -rn | head -6 | tr '\n' ';'
}

source scripts/lib/san-shard.sh
san_cap=${WS_SANITIZE_SECONDS:-$(( $(left) - 20 ))}
san_deadline=$(( $(date +%s) + san_cap ))
if [ "$san_cap" -lt 30 ]; then
  row "compute-sanitizer" "SKIPPED (budget: $(left) s left)"; FAILED=1
else
  # racecheck's form of the whole-model tests (tests/support/small_tests.h, gpu_test_timing_cache): one plain run
  # (no tool) writes each one's timing cache, and only the racecheck shards read it, so under racecheck they run the
  # chosen tactic of each node instead of timing every candidate (each ran past 540 s that way, runs 23 and 26).
  # The other tools keep tactic timing: memcheck/initcheck/synccheck see every candidate run.
  san_cache=""
  if [[ " ${WS_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck} " == *" racecheck "* ]]; then
    san_cache=/tmp/ws-racecheck-timing-cache; rm -rf "$san_cache"; mkdir -p "$san_cache"
    WS_GPU_TEST_TIMING_CACHE_DIR=$san_cache timeout -k 10 240 "$GT" --gtest_filter="${WS_SANITIZE_CACHE_TESTS:-$SAN_TIMING_CACHE_TESTS}" \
      > "$L/sanitize-racecheck-timing-cache.txt" 2>&1
    rc=$?; mark $rc
    row "racecheck timing caches (plain run)" "rc=$rc $(gtest_result "$L/sanitize-racecheck-timing-cache.txt"); $(ls "$san_cache" | grep -c '\.json$') cache files ($(elapsed) s)"
  fi
  san_pids=()
  for tool in ${WS_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
    fvar=WS_SANITIZE_FILTER_$tool; nvar=WS_SANITIZE_SHARDS_$tool
    filter=${!fvar:-${WS_SANITIZE_FILTER:-*}}
    excl=$SAN_EXCLUDE_TESTS
    # racecheck: the CUTLASS sm_90a GEMM tests run only CUTLASS's TMA/wgmma kernels (not ours, outside the kernel
    # filter) and racecheck dies on them ("Internal Sanitizer Error: The Sanitizer failed to handle a hardware
    # exception", device run 2 of 2026-12-01), leaving the context broken for every later test of the process.
    [ "$tool" = racecheck ] && excl="$excl:GemmS8Gpu.Cutlass*:$SAN_RACECHECK_TOOL_LIMIT"
    [[ $filter == *-* ]] && filter="$filter:$excl" || filter="$filter-$excl"
    case $tool in memcheck|initcheck) def=3 ;; racecheck) def=2 ;; *) def=1 ;; esac
    shards=${!nvar:-$def}
    mapfile -t opts < <(san_opts "$tool")
    # racecheck died with "failed to handle a hardware exception" inside CudaEngineModel.DemoModelMatchesCpu's fp16
    # tactic timing (device run 14 of 2026-12-01); WS_TRACE_TACTICS names each candidate before it runs, so the
    # log shows which one takes the tool down.
    trace=""; [ "$tool" = racecheck ] && trace=1
    tcache=""; [ "$tool" = racecheck ] && tcache=$san_cache
    # racecheck's form of the whole-model tests: fp32 only (tests/support/small_tests.h, gpu_test_fp32_only): the tool
    # died in their fp16 part (vendor tensor-core kernels) in device run 31 of 2026-12-02, as in the tests above.
    fp32only=""; [ "$tool" = racecheck ] && fp32only=1
    # Shard balance: racecheck's test times are far from the plain run's (racecheck-ms.txt, measured in device runs
    # 23 and 26 of 2026-12-02); the other tools run close to plain-run proportions (gpu-test-ms.txt).
    wts=${WS_SANITIZE_WEIGHTS-scripts/lib/gpu-test-ms.txt}
    [ "$tool" = racecheck ] && [ -z "${WS_SANITIZE_WEIGHTS+set}" ] && wts=scripts/lib/racecheck-ms.txt
    # Each shard is san_shard (scripts/lib/san-shard.sh): an explicit test list that restarts after a tool crash,
    # recording the test that was running as TOOL ERROR instead of letting a dead context fail the rest.
    for ((i = 0; i < shards; ++i)); do
      WS_GPU_TEST_FP32_ONLY=$fp32only WS_GPU_TEST_TIMING_CACHE_DIR=$tcache WS_TRACE_TACTICS=$trace WS_SANITIZE_WEIGHTS=$wts san_shard "$L/sanitize-$tool-$i.txt" "$san_deadline" "$i" "$shards" "$filter" -- \
        "${opts[@]}" &
      san_pids+=("$!:$tool:$i")
    done
    canary=SanitizerCanary.DISABLED_${tool^}
    timeout -k 10 120 compute-sanitizer "${opts[@]}" "$GT" --gtest_also_run_disabled_tests \
      --gtest_filter="$canary" > "$L/sanitize-canary-$tool.txt" 2>&1 &
    san_pids+=("$!:canary-$tool:0")
    echo "$filter" > "$L/sanitize-$tool.filter"; echo "$shards" > "$L/sanitize-$tool.shards"
  done
  if [[ " ${WS_SANITIZE_TOOLS:-initcheck} " == *" initcheck "* ]]; then
    mapfile -t opts < <(san_opts initcheck)
    timeout -k 10 180 compute-sanitizer "${opts[@]}" "$GT" --gtest_also_run_disabled_tests \
      --gtest_filter='SanitizerProbe.DISABLED_CublasLtStoresSeenByInitcheck' > "$L/sanitize-probe-initcheck.txt" 2>&1 &
    san_pids+=("$!:probe-initcheck:0")
  fi
  declare -A san_rc=()
  for p in "${san_pids[@]}"; do
    wait "${p%%:*}"; san_rc[${p#*:}]=$?
  done
  for tool in ${WS_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
    shards=$(cat "$L/sanitize-$tool.shards"); filter=$(cat "$L/sanitize-$tool.filter")
    rc=0; errs=0; pass=0; fail=0; skip=0
    for ((i = 0; i < shards; ++i)); do
      r=${san_rc[$tool:$i]}; [ "$r" -ne 0 ] && [ "$rc" -eq 0 -o "$r" -eq 124 ] && rc=$r
      f=$L/sanitize-$tool-$i.txt
      e=$(grep -oE 'ERROR SUMMARY: [0-9]+ errors?$' "$f" | tail -1 | grep -oE '[0-9]+'); errs=$(( errs + ${e:-0} ))
      read -r a b c < <(gtest_result "$f" | awk '{print $1, $3, $5}'); pass=$((pass + a)); fail=$((fail + b)); skip=$((skip + c))
    done
    mark $rc
    row "compute-sanitizer $tool" "rc=$rc $errs errors; $pass passed, $fail failed, $skip skipped; $shards shard(s); filter=${filter:0:50} ($(elapsed) s)"
    [ "$errs" -gt 0 ] && cat "$L"/sanitize-$tool-*.txt > "$L/sanitize-$tool-all.txt" && \
      echo "    first-frame kernels: $(san_kernels "$L/sanitize-$tool-all.txt")" | tee -a "$SUM"
    grep -h -E '^\[  FAILED  \] [A-Za-z]|Detected overflow|Timeout|Internal Sanitizer Error' "$L"/sanitize-$tool-*.txt 2>/dev/null |
      sort -u | head -8 | sed 's/^/    /' | tee -a "$SUM"
    # Tests the tool itself could not run (san_shard's TOOL ERROR) and tests never reached (NOT RUN).
    cat "$L"/sanitize-$tool-*.txt.status 2>/dev/null | grep -E ' (TOOL ERROR|NOT RUN)$' | head -12 |
      sed 's/^/    /' | tee -a "$SUM"
    # A tool error during tactic timing (WS_TRACE_TACTICS): the candidate announced last before it.
    for f in "$L"/sanitize-$tool-*.txt; do
      grep -q 'Internal Sanitizer Error' "$f" || continue
      last=$(sed -n '/Internal Sanitizer Error/q;/^\[tactic\] timing /p' "$f" | tail -1)
      [ -n "$last" ] && echo "    $(basename "$f"): last candidate before the tool error: ${last#\[tactic\] timing }" | cut -c1-220 | tee -a "$SUM"
    done
    # The canary must have been caught: exit 3 and a report naming its kernel.
    # The initcheck canary reads a never-written buffer through an ordinary kernel of ours (bf16_to_float_kernel);
    # the other canaries are kernels named canary_*.
    crc=${san_rc[canary-$tool:0]}; cf=$L/sanitize-canary-$tool.txt
    ck='canary_[a-z_]+kernel'; [ "$tool" = initcheck ] && ck='bf16_to_float_kernel'
    if [ "$crc" -eq 3 ] && grep -qE "$ck" "$cf"; then
      row "  canary $tool" "caught (rc=3, $(grep -m1 -oE "$ck" "$cf"))"
    else
      row "  canary $tool" "NOT caught (rc=$crc): the tool or its filter checked nothing; see $(basename "$cf")"; FAILED=1
    fi
  done
  if [ -n "${san_rc[probe-initcheck:0]:-}" ]; then
    pf=$L/sanitize-probe-initcheck.txt; prc=${san_rc[probe-initcheck:0]}
    if ! grep -q '^\[  PASSED  \] 1 test' "$pf"; then verdict="probe test did not pass (rc=$prc): see $(basename "$pf")"
    elif [ "$prc" -eq 3 ]; then verdict="initcheck does NOT see cuBLASLt's stores ($(san_kernels "$pf"))"
    elif [ "$prc" -eq 0 ]; then verdict="initcheck sees cuBLASLt's stores (0 reports)"
    else verdict="rc=$prc: see $(basename "$pf")"; fi
    row "  probe initcheck vs cuBLASLt" "$verdict"
  fi
fi
