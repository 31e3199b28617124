#!/usr/bin/env bash
# How often the noise-aware `rig compare --fail-if` flags a regression that is not there, and
# whether it flags one that is. Runs quickstart.toml (1 s phases) as 2*PAIRS groups of
# `--repeat N`, compares them pairwise (A/A: the same scenario, nothing changed) at 20%
# thresholds, then the same pairs with one run a side (no interval), then two real
# regressions: the target's io_wait 1 ms -> 2 ms (~2x latency) and reply_writes 1 -> 2.
# Usage: scripts/compare-noise.sh [RIG] [PAIRS=10] [N=3]
set -uo pipefail
DIR="$(cd "$(dirname "$0")/.." && pwd)"
RIG="${1:-$DIR/build/rig}"
PAIRS="${2:-10}"
N="${3:-3}"
OUT="$(mktemp -d /tmp/rig-compare-noise-XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
SC="$DIR/scenarios/quickstart.toml"
SHORT=(--set phases.baseline.duration=1s --set phases.nagle.duration=1s --set phases.recovery.duration=1s)
GATE=(--fail-if "p50 > 1.20x" --fail-if "p99 > 1.20x" --fail-if "throughput < 0.83x")

group() {  # NAME [--set ...]: a --repeat N group; prints its directory
  local name="$1"; shift
  "$RIG" run "$SC" --repeat "$N" "${SHORT[@]}" "$@" --out "$OUT/$name" >"$OUT/$name.log" 2>&1
  ls -d "$OUT/$name"/*-repeat
}

flagged=0 single_flagged=0
for i in $(seq 1 "$PAIRS"); do
  a=$(group "a$i") b=$(group "b$i")
  "$RIG" compare "$a" "$b" "${GATE[@]}" --out "$OUT/c$i.html" >"$OUT/c$i.txt" 2>&1
  rc=$?
  [ $rc -eq 1 ] && flagged=$((flagged + 1))
  [ $rc -gt 1 ] && { echo "compare failed (exit $rc):"; cat "$OUT/c$i.txt"; exit 2; }
  # The same pair, one run a side: the ratio alone, no interval.
  ra=$(ls -d "$a"/*-quickstart | head -1) rb=$(ls -d "$b"/*-quickstart | head -1)
  "$RIG" compare "$ra" "$rb" "${GATE[@]}" --out "$OUT/s$i.html" >"$OUT/s$i.txt" 2>&1
  src=$?
  [ $src -eq 1 ] && single_flagged=$((single_flagged + 1))
  echo "A/A pair $i: repeats x$N: $([ $rc -eq 1 ] && echo FLAGGED || echo clean); one run a side: $([ $src -eq 1 ] && echo FLAGGED || echo clean)"
  grep '^FAIL' "$OUT/c$i.txt" | sed 's/^/    repeats: /'
  grep '^FAIL' "$OUT/s$i.txt" | sed 's/^/    single: /'
done
echo "A/A at 20%: flagged $flagged of $PAIRS with $N repeats a side; $single_flagged of $PAIRS with one run a side"

base=$(group io1 --set target.io_wait=1ms --set target.workers=8) slow=$(group io2 --set target.io_wait=2ms --set target.workers=8)
"$RIG" compare "$base" "$slow" "${GATE[@]}" --out "$OUT/io.html" >"$OUT/io.txt" 2>&1
echo "io_wait 1ms -> 2ms: exit $? ($(grep -c '^FAIL' "$OUT/io.txt") rows flagged)"
grep -E '^(FAIL|rig compare)' "$OUT/io.txt" | sed 's/^/    /'
w1=$(group w1 --set target.reply_writes=1) w2=$(group w2 --set target.reply_writes=2)
"$RIG" compare "$w1" "$w2" "${GATE[@]}" --out "$OUT/w.html" >"$OUT/w.txt" 2>&1
echo "reply_writes 1 -> 2: exit $? ($(grep -c '^FAIL' "$OUT/w.txt") rows flagged)"
grep -E '^(FAIL|rig compare)' "$OUT/w.txt" | sed 's/^/    /'
