#!/usr/bin/env bash
# experiments/armed_launch_ab.sh refuses rep counts that are not whole numbers 0..20 (text, negative, huge) with a usage
# line and status 2, before it sources the device environment (no GPU, no build needed).
#   bash tests/scripts/armed_launch_ab_args_test.sh REPO_ROOT
set -u
ROOT=${1:?usage: armed_launch_ab_args_test.sh REPO_ROOT}
fail=0
for args in "abc" "-1" "21" "3 99" "3 x" "99999999999999999999"; do
  out=$(bash "$ROOT/experiments/armed_launch_ab.sh" $args 2>&1)
  rc=$?
  if [ "$rc" != 2 ] || [[ "$out" != *"usage:"* ]]; then
    echo "FAIL: armed_launch_ab.sh $args -> rc=$rc: $out"; fail=1
  else
    echo "ok:   armed_launch_ab.sh $args -> rc=2"
  fi
done
exit $fail
