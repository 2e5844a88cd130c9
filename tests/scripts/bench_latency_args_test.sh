#!/usr/bin/env bash
# bench_latency_check_args (scripts/lib/bench-latency-args.sh), no GPU needed: defaults and good values pass; a budget
# or count that is not a whole number (text, negative, huge, empty-looking) and a switch that is not 0/1 each give one
# "error:" line naming the variable and status 2.
#   bash tests/scripts/bench_latency_args_test.sh REPO_ROOT
set -u
ROOT=${1:?usage: bench_latency_args_test.sh REPO_ROOT}
source "$ROOT/scripts/lib/bench-latency-args.sh"
fail=0
expect() {  # expect STATUS NEEDLE VAR=VALUE...
  local want=$1 needle=$2; shift 2
  local out rc
  out=$(env -u WS_BENCH_COMPILE_CAP -u WS_BENCH_OURS "$@" bash -c "source '$ROOT/scripts/lib/bench-latency-args.sh'; bench_latency_check_args")
  rc=$?
  if [ "$rc" != "$want" ] || { [ -n "$needle" ] && [[ "$out" != *"$needle"* ]]; }; then
    echo "FAIL: $* -> rc=$rc out='$out' (want rc=$want, '$needle')"; fail=1
  else
    echo "ok:   $* -> rc=$rc ${out}"
  fi
}
expect 0 "" WS_BENCH_ITERS=
expect 0 "" WS_BENCH_COMPILE_CAP=250 WS_BENCH_OURS=0 WS_BENCH_ITERS=1000
expect 2 "WS_BENCH_COMPILE_CAP" WS_BENCH_COMPILE_CAP=abc
expect 2 "WS_BENCH_COMPILE_CAP" WS_BENCH_COMPILE_CAP=-5
expect 2 "WS_BENCH_COMPILE_CAP" WS_BENCH_COMPILE_CAP=99999999999999999999
expect 2 "WS_BENCH_ITERS" WS_BENCH_ITERS=1e3
expect 2 "WS_BENCH_OURS" WS_BENCH_OURS=yes
expect 2 "WS_BENCH_DWPW" WS_BENCH_DWPW=2
expect 2 "WS_BENCH_EXDW" WS_BENCH_EXDW=yes
expect 2 "WS_BENCH_CUDNNGRAPH" WS_BENCH_CUDNNGRAPH=on
expect 2 "WS_BENCH_NHWCIGEMM" WS_BENCH_NHWCIGEMM=2
expect 2 "WS_BENCH_CUTLASSCONV" WS_BENCH_CUTLASSCONV=yes
expect 2 "WS_BENCH_HWC8" WS_BENCH_HWC8=on
expect 2 "WS_BENCH_HWC8PORT" WS_BENCH_HWC8PORT=2
expect 2 "WS_BENCH_NHWCALL" WS_BENCH_NHWCALL=3
expect 2 "WS_BENCH_ARMED" WS_BENCH_ARMED=on
expect 2 "WS_BENCH_POOLED" WS_BENCH_POOLED=2
expect 2 "WS_BENCH_STEMPOOL" WS_BENCH_STEMPOOL=yes
expect 2 "WS_BENCH_COMPILE_MODES" WS_BENCH_COMPILE_MODES="fast;rm -rf /"
expect 0 "" WS_BENCH_COMPILE_MODES=reduce-overhead
expect 0 "" WS_BENCH_COMPILE_MODES=max-autotune,reduce-overhead
expect 0 "" WS_BENCH_COMPILE_MODES=default,max-autotune-no-cudagraphs
expect 2 "twice" WS_BENCH_COMPILE_MODES=max-autotune,max-autotune
expect 2 "WS_BENCH_COMPILE_MODES" WS_BENCH_COMPILE_MODES=reduce-overhead,
expect 2 "WS_BENCH_COMPILE_MODES" WS_BENCH_COMPILE_MODES=,reduce-overhead
expect 2 "WS_BENCH_COMPILE_MODES" WS_BENCH_COMPILE_MODES=MAX-AUTOTUNE
expect 2 "WS_BENCH_ITERS" WS_BENCH_ITERS=0
expect 2 "WS_BENCH_LANES" WS_BENCH_LANES="1 four"
expect 2 "WS_BENCH_LANES" WS_BENCH_LANES="0"
expect 2 "WS_BENCH_LANES" WS_BENCH_LANES="1 65"
expect 0 "" WS_BENCH_LANES="1 4"
exit $fail
