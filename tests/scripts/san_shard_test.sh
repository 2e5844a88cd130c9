#!/usr/bin/env bash
# san_shard (scripts/lib/san-shard.sh) against a fake compute-sanitizer and a fake gtest binary, no GPU needed.
# The fake suite has tests A.a..A.d; A.b prints the tool's "Internal Sanitizer Error" line and then hangs, as a
# real gtest process does on a dead context (device run 23 of 2026-12-02). Checks:
#   - A.b is recorded as TOOL ERROR, A.a/A.c/A.d as OK (c and d ran again in a fresh process);
#   - the hung process was stopped at the tool error (the run takes seconds, not the fake's 60 s hang), the test
#     process included, although the fake tool does not pass SIGTERM on;
#   - the exit status is 5 (a tool error), never 0;
#   - san_assign with a weights file, a missing one and a malformed one gives every test to exactly one shard.
#   bash tests/scripts/san_shard_test.sh REPO_ROOT
set -u
ROOT=${1:?usage: san_shard_test.sh REPO_ROOT}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cat > "$T/gt" <<'GT'
#!/usr/bin/env bash
for a in "$@"; do [ "$a" = --gtest_list_tests ] && { printf 'A.\n  a\n  b\n  c\n  d\n'; exit 0; }; done
IFS=: read -ra ts <<< "${1#--gtest_filter=}"
for t in "${ts[@]}"; do
  echo "[ RUN      ] $t"
  if [ "$t" = A.b ]; then
    echo "========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception."
    exec -a ws_fake_hung_test sleep 60
  fi
  echo "[       OK ] $t (1 ms)"
done
echo "========= ERROR SUMMARY: 0 errors"
GT
cat > "$T/compute-sanitizer" <<'CS'
#!/usr/bin/env bash
# Like a tool that exits on SIGTERM without passing it on: only a stop of the whole process group ends the test.
while [ "${1#-}" != "$1" ]; do shift 2; done  # drop "--option value" pairs
trap 'exit 143' TERM
"$@" &
wait $!
CS
chmod +x "$T/gt" "$T/compute-sanitizer"
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
start=$(date +%s)
PATH="$T:$PATH" GT="$T/gt" WS_SANITIZE_WEIGHTS= bash -c \
  "source '$ROOT/scripts/lib/san-shard.sh'; san_shard '$T/log' \$(( \$(date +%s) + 50 )) 0 1 '*' -- --tool racecheck"
rc=$?
took=$(( $(date +%s) - start ))
echo "--- status:"; cat "$T/log.status"; echo "--- rc=$rc, ${took} s"
check "exit status 5 (tool error)" '[ $rc -eq 5 ]'
check "A.b is TOOL ERROR" 'grep -qx "A.b TOOL ERROR" "$T/log.status"'
check "A.a, A.c, A.d OK" '[ "$(grep -c " OK$" "$T/log.status")" -eq 3 ]'
check "no test NOT RUN" '! grep -q "NOT RUN" "$T/log.status"'
check "stopped at the tool error (< 30 s)" '[ $took -lt 30 ]'
sleep 1
check "no hung test process left behind" '! pgrep -f ws_fake_hung_test > /dev/null'
pkill -f ws_fake_hung_test 2> /dev/null
printf '500 A.a\n100 A.b\n100 A.c\n100 A.d\n' > "$T/w.txt"
got=$(for s in 0 1; do WS_SANITIZE_WEIGHTS="$T/w.txt" bash -c "source '$ROOT/scripts/lib/san-shard.sh'; san_assign $s 2 A.a A.b A.c A.d"; done | sort | tr '\n' ' ')
check "san_assign: each test in exactly one shard ($got)" '[ "$got" = "A.a A.b A.c A.d " ]'
# A missing or malformed weights file must still give a partition (every N-th test / default weights).
printf 'not a number A.a\n\n# comment\n' > "$T/bad.txt"
for wf in "$T/missing.txt" "$T/bad.txt"; do
  got=$(for s in 0 1; do WS_SANITIZE_WEIGHTS="$wf" bash -c "source '$ROOT/scripts/lib/san-shard.sh'; san_assign $s 2 A.a A.b A.c A.d"; done | sort | tr '\n' ' ')
  check "san_assign with $(basename "$wf"): a partition ($got)" '[ "$got" = "A.a A.b A.c A.d " ]'
done
exit $fail
