# san_shard (sourced by scripts/lib/sanitize.sh): one compute-sanitizer shard of the GPU suite that survives a
# crash of the tool itself.
#
#   san_shard LOG DEADLINE SHARD SHARDS FILTER -- compute-sanitizer options...
#
# Why: compute-sanitizer can die inside a kernel it cannot handle ("Internal Sanitizer Error: The Sanitizer failed
# to handle a hardware exception", racecheck in device run 14 of 2026-12-01); the CUDA context is then dead and
# every later test of the process fails, so one tool error hid 59 tests. Here the shard's tests are listed first
# (gtest --gtest_list_tests with FILTER, DISABLED_ tests dropped as gtest itself would, every SHARDS-th test
# from index SHARD) and run as one explicit list; when an
# attempt's log shows a tool error, the tests finished before it keep their result, the test that was running is
# recorded as "TOOL ERROR" (a failure of the run, never a pass), the process is stopped at that line, and the
# tests not yet run start again in a fresh process. At most 8 attempts; an attempt that finishes nothing stops the loop.
# Needs: $GT (the gtest binary). DEADLINE: epoch seconds when every attempt must be over (each attempt runs under
# timeout to it).
# Writes: LOG (every attempt's output, each after a "##### san_shard attempt" line, then a summary in gtest's form
# — "[  PASSED  ] N tests.", "[  FAILED  ] M tests", "[  SKIPPED ] K tests", "ERROR SUMMARY: E errors" — summed over
# the attempts), LOG.status ("<test> OK|FAILED|SKIPPED|TOOL ERROR|NOT RUN" per test).
# Returns: 124 if an attempt hit the deadline, 5 if any test ended in a tool error, else 3 if the tool reported
# errors, 1 if a test failed, 0 otherwise.
# san_assign SHARD SHARDS TEST...: the tests of shard SHARD. With WS_SANITIZE_WEIGHTS (a file of "<ms> <test>" lines,
# default scripts/lib/gpu-test-ms.txt: each GPU test's time without a sanitizer, device run 21), longest first onto the
# least-loaded shard (a test not in the file counts 500 ms), so the slow EfficientNet and LTX tests spread out;
# without it, every SHARDS-th test. Deterministic: every shard computes the same split.
san_assign() {
  local shard=$1 shards=$2
  shift 2
  local wf=${WS_SANITIZE_WEIGHTS-scripts/lib/gpu-test-ms.txt}
  if [ -n "$wf" ] && [ -f "$wf" ]; then
    printf '%s\n' "$@" | awk -v shard="$shard" -v shards="$shards" -v wf="$wf" '
      BEGIN { while ((getline l < wf) > 0) { split(l, a, " "); w[a[2]] = a[1] + 0 } }
      NF { n++; t[n] = $0; ww[n] = ($0 in w) ? w[$0] : 500; idx[n] = n }
      END {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
          if (ww[idx[j]] > ww[idx[i]] || (ww[idx[j]] == ww[idx[i]] && t[idx[j]] < t[idx[i]])) { x = idx[i]; idx[i] = idx[j]; idx[j] = x }
        for (s = 0; s < shards; s++) load[s] = 0
        for (k = 1; k <= n; k++) {
          best = 0
          for (s = 1; s < shards; s++) if (load[s] < load[best]) best = s
          load[best] += ww[idx[k]]
          if (best == shard) print t[idx[k]]
        } }'
  else
    local i
    local -a all=("$@")
    for ((i = shard; i < ${#all[@]}; i += shards)); do echo "${all[$i]}"; done
  fi
}

san_shard() {
  local log=$1 deadline=$2 shard=$3 shards=$4 filter=$5
  shift 6  # the five above and "--"
  local -a opts=("$@") all=() mine=() remaining=()
  local status=$log.status
  : > "$log"; : > "$status"
  mapfile -t all < <("$GT" --gtest_filter="$filter" --gtest_list_tests 2>/dev/null |
    awk '/^[^ ]/ {suite=$1; next} /^  [^ ]/ {print suite $1}' | grep -v 'DISABLED_')
  mapfile -t mine < <(san_assign "$shard" "$shards" "${all[@]}")
  remaining=("${mine[@]}")
  local attempt=0 rc_final=0 errs=0 timed_out=0 tool_err=0 had_fail=0
  while [ ${#remaining[@]} -gt 0 ] && [ $attempt -lt 8 ]; do
    attempt=$((attempt + 1))
    local now; now=$(date +%s)
    local budget=$(( deadline - now ))
    [ $budget -lt 10 ] && { timed_out=1; break; }
    local part=$log.attempt$attempt
    local list; list=$(IFS=:; echo "${remaining[*]}")
    # The process does not exit after a tool error: it goes on, failing every later test on the dead context
    # (device run 23 of 2026-12-02). Watch the log and stop it at the first "Internal Sanitizer Error" line, so the
    # tests after it start again in a fresh process instead.
    timeout -k 10 "$budget" compute-sanitizer "${opts[@]}" "$GT" --gtest_filter="$list" > "$part" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2> /dev/null; do
      if grep -q 'Internal Sanitizer Error' "$part" 2> /dev/null; then
        # 2 s: let the tool finish writing its report. timeout (not --foreground) passes the signal to its whole
        # process group, so the test process stops too even if the tool does not pass it on.
        sleep 2; kill -TERM "$pid" 2> /dev/null; break
      fi
      sleep 1
    done
    wait "$pid"
    local rc=$?
    { echo "##### san_shard attempt $attempt: ${#remaining[@]} tests, rc=$rc"; cat "$part"; } >> "$log"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && timed_out=1
    local e; e=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$part" | tail -1 | grep -oE '[0-9]+')
    errs=$(( errs + ${e:-0} ))
    # Results before the first tool error count; the test running at it is the tool's failure.
    local results
    results=$(awk '/Internal Sanitizer Error/ { if (cur != "") print cur " TOOL ERROR"; exit }
                   /^\[ RUN      \] / { cur = $4; next }
                   /^\[       OK \] / { print $4 " OK"; cur = ""; next }
                   /^\[  SKIPPED \] [A-Za-z]/ { if ($4 == cur) { print $4 " SKIPPED"; cur = "" } next }
                   /^\[  FAILED  \] [A-Za-z]/ { if ($4 == cur) { print $4 " FAILED"; cur = "" } }' "$part")
    [ -n "$results" ] && echo "$results" >> "$status"
    grep -q 'TOOL ERROR$' <<< "$results" && tool_err=1
    grep -q ' FAILED$' <<< "$results" && had_fail=1
    local -A done_now=()
    local line
    while read -r line; do [ -n "$line" ] && done_now[${line%% *}]=1; done <<< "$results"
    local -a next=()
    local t
    for t in "${remaining[@]}"; do [ -z "${done_now[$t]:-}" ] && next+=("$t"); done
    if [ ${#next[@]} -eq ${#remaining[@]} ]; then break; fi  # no progress: stop, the rest is NOT RUN
    grep -q 'Internal Sanitizer Error' "$part" || { remaining=("${next[@]}"); [ $timed_out -eq 1 ] && break; continue; }
    remaining=("${next[@]}")
    [ $timed_out -eq 1 ] && break
  done
  for t in "${remaining[@]}"; do echo "$t NOT RUN" >> "$status"; done
  local n_ok n_fail n_skip
  n_ok=$(grep -c ' OK$' "$status"); n_skip=$(grep -c ' SKIPPED$' "$status")
  n_fail=$(grep -cE ' (FAILED|TOOL ERROR|NOT RUN)$' "$status")
  {
    echo "##### san_shard summary: ${#mine[@]} tests in shard $shard of $shards, $attempt attempt(s)"
    grep -E ' (TOOL ERROR|NOT RUN)$' "$status" | sed 's/^/#####   /'
    echo "[  PASSED  ] $n_ok tests."
    echo "[  FAILED  ] $n_fail tests, listed in $(basename "$status")"
    echo "[  SKIPPED ] $n_skip tests"
    echo "========= ERROR SUMMARY: $errs errors"
  } >> "$log"
  rm -f "$log".attempt*
  [ $timed_out -eq 1 ] && return 124
  [ $tool_err -eq 1 ] && return 5
  [ ${#remaining[@]} -gt 0 ] && return 1
  [ $errs -gt 0 ] && return 3
  [ $had_fail -eq 1 ] && return 1
  return 0
}
