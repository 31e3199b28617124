#!/usr/bin/env bash
# The test suite under the conditions that made it flake, before an issue is resolved:
#   plain  `make test` in a fresh clone of HEAD, as CI starts
#   busy   the same with the other CPU kept busy the whole time (a spinning process per extra core)
#   asan   the ASan+UBSan suite, ctest -j 2 as CI runs it (make test-asan) in a fresh clone
#   tsan   the TSan suite likewise (make test-tsan)
# A mode's first run clones and builds; its later runs run the suite again in that clone (a
# flaky test flakes the same without the rebuild). --fresh: every run its own clone and build.
# Each run prints one line: mode, run number, passed/total, failed test names, seconds; the
# last line sums them up. Nothing is left behind: clones are removed (kept with --keep), the
# busy loops are ended by their pids.
#
# Usage: scripts/stress-tests.sh [--runs N] [--fresh] [--keep] [MODE...]   (default: --runs 3 plain busy)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=3
keep=0
fresh=0
modes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) [ $# -ge 2 ] || { echo "stress-tests: --runs needs a number" >&2; exit 2; }; runs=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --fresh) fresh=1; shift ;;
    plain|busy|asan|tsan) modes+=("$1"); shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stress-tests: unknown argument '$1' (modes: plain, busy, asan, tsan; --runs N, --fresh, --keep)" >&2; exit 2 ;;
  esac
done
[ ${#modes[@]} -eq 0 ] && modes=(plain busy)
case "$runs" in ''|*[!0-9]*|0|0*) echo "stress-tests: --runs wants a positive number, not '$runs'" >&2; exit 2 ;; esac

work=$(mktemp -d /tmp/rig-stress-XXXXXX)
chmod 755 "$work"  # tests run rig as other users (the attack tests): they must reach the binary
spinners=()
suite_pid=
stop_suite() {  # the running make and everything under it (its own session: setsid)
  [ -n "$suite_pid" ] && kill -- -"$suite_pid" 2>/dev/null && wait "$suite_pid" 2>/dev/null
  suite_pid=
}
stop_spinners() {
  for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  spinners=()
}
cleanup() {
  stop_suite
  stop_spinners
  if [ "$keep" -eq 1 ]; then echo "stress-tests: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One spinning process per core beyond the first: ctest -j 2 then shares the machine with it.
start_spinners() {
  local n
  n=$(( $(nproc) - 1 ))
  [ "$n" -lt 1 ] && n=1
  for _ in $(seq "$n"); do
    ( while :; do :; done ) &
    spinners+=($!)
  done
}

total_ok=0
total_runs=0
summary=()
for mode in "${modes[@]}"; do
  for i in $(seq "$runs"); do
    if [ "$fresh" -eq 1 ]; then clone="$work/$mode-$i"; else clone="$work/$mode"; fi
    if [ ! -d "$clone" ]; then
      git clone -q "$here" "$clone" || { echo "stress-tests: cannot clone $here" >&2; exit 4; }
    fi
    log="$work/$mode-$i.log"
    case "$mode" in
      plain|busy) target=test ;;
      asan) target=test-asan ;;
      tsan) target=test-tsan ;;
    esac
    [ "$mode" = busy ] && start_spinners
    start=$(date +%s)
    # In the background and waited for, so SIGINT/SIGTERM stop it at once (bash runs a trap only
    # after a foreground command ends); in its own session, so the whole tree goes with it.
    setsid make -C "$clone" "$target" >"$log" 2>&1 &
    suite_pid=$!
    wait "$suite_pid"
    rc=$?
    suite_pid=
    secs=$(( $(date +%s) - start ))
    stop_spinners
    counts=$(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
    failed=$(grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Exception|Subprocess aborted|Not Run|Child aborted)\)$' "$log" | sed -E 's/^\s+[0-9]+ - //' | paste -sd '|' -)
    if [ "$rc" -eq 0 ]; then total_ok=$((total_ok + 1)); verdict=pass; else verdict=FAIL; fi
    total_runs=$((total_runs + 1))
    line="$mode run $i: $verdict in ${secs}s (${counts:-no ctest summary: see $log})${failed:+ failed: $failed}"
    echo "$line"
    summary+=("$line")
    if [ "$rc" -ne 0 ]; then
      mkdir -p "$here/build/stress-logs"
      cp "$log" "$here/build/stress-logs/" 2>/dev/null && echo "  log: build/stress-logs/$(basename "$log")"
    fi
    [ "$keep" -eq 1 ] || [ "$fresh" -eq 0 ] || rm -rf "$clone"
  done
  [ "$keep" -eq 1 ] || rm -rf "$work/$mode"
done
echo "stress-tests: $total_ok of $total_runs runs passed"
[ "$total_ok" -eq "$total_runs" ]
