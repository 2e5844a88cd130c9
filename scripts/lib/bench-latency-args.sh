# The bench-latency suite's knobs (scripts/lib/bench-latency.sh), checked before any device work:
# bench_latency_check_args prints one "error: ..." line naming the variable and returns 2 when a value is not what the
# suite can use (a count or a budget that is not a whole number, a switch that is not 0 or 1); returns 0 otherwise.
# Unset or empty variables take the suite's defaults. Test: tests/scripts/bench_latency_args_test.sh.
bench_latency_check_args() {
  local v x
  for v in WS_BENCH_COMPILE_CAP WS_BENCH_ITERS WS_BENCH_WARMUP WS_BENCH_PROFILE_REPS; do
    x=${!v:-}
    if [ -n "$x" ] && ! [[ "$x" =~ ^[0-9]{1,6}$ ]]; then
      printf 'error: %s=%q is not a whole number (at most 6 digits)\n' "$v" "$x"
      return 2
    fi
  done
  for v in WS_BENCH_ITERS WS_BENCH_PROFILE_REPS; do  # counts of timed things: at least 1
    x=${!v:-}
    if [ -n "$x" ] && [ "$((10#$x))" -lt 1 ]; then
      printf 'error: %s=%q must be at least 1\n' "$v" "$x"
      return 2
    fi
  done
  x=${WS_BENCH_LANES:-}  # lane counts: whole numbers 1..64, separated by spaces
  if [ -n "$x" ]; then
    for v in $x; do
      if ! [[ "$v" =~ ^[0-9]{1,2}$ ]] || [ "$((10#$v))" -lt 1 ] || [ "$((10#$v))" -gt 64 ]; then
        printf 'error: WS_BENCH_LANES=%q: %q is not a lane count in 1..64\n' "$x" "$v"
        return 2
      fi
    done
  fi
  # torch.compile modes, comma-separated, each at most once: the list bench/peers/pytorch_peer.py's COMPILE_MODES accepts
  if [ -n "${WS_BENCH_COMPILE_MODES:-}" ]; then
    local modes=() m seen=","
    IFS=',' read -r -a modes <<< "$WS_BENCH_COMPILE_MODES,"
    [ "${WS_BENCH_COMPILE_MODES: -1}" != , ] || modes+=("")
    for m in "${modes[@]}"; do
      case "$m" in
        max-autotune|reduce-overhead|default|max-autotune-no-cudagraphs) ;;
        *) printf 'error: WS_BENCH_COMPILE_MODES=%q: %q is not one of max-autotune, reduce-overhead, default, max-autotune-no-cudagraphs (comma-separated, each at most once)\n' "$WS_BENCH_COMPILE_MODES" "$m"; return 2 ;;
      esac
      case "$seen" in *",$m,"*) printf 'error: WS_BENCH_COMPILE_MODES=%q names %q twice\n' "$WS_BENCH_COMPILE_MODES" "$m"; return 2 ;; esac
      seen="$seen$m,"
    done
  fi
  for v in WS_BENCH_OURS WS_BENCH_COMPILE WS_BENCH_PDL WS_BENCH_SPLITK2 WS_BENCH_DWPW WS_BENCH_EXDW WS_BENCH_CUDNNGRAPH WS_BENCH_NHWCIGEMM WS_BENCH_CUTLASSCONV WS_BENCH_HWC8 WS_BENCH_HWC8PORT WS_BENCH_NHWCALL WS_BENCH_FP8 WS_BENCH_ARMED WS_BENCH_POOLED WS_BENCH_STEMPOOL; do
    x=${!v:-}
    if [ -n "$x" ] && [ "$x" != 0 ] && [ "$x" != 1 ]; then
      printf 'error: %s=%q must be 0 or 1\n' "$v" "$x"
      return 2
    fi
  done
  return 0
}
