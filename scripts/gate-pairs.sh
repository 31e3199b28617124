#!/usr/bin/env bash
# The release gate on the scenario pairs that ship a broken and a fixed variant: each run N
# times (default 5) by a rig binary; the gate holds when every fixed run exits 0 and every
# broken run exits 1 (its checks fail on the bug it magnifies).
#   scripts/gate-pairs.sh [RIG_BINARY] [N]
set -u
RIG=$(readlink -f "${1:-build/rig}"); N=${2:-5}
DIR=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/rig-gate-XXXXXX); trap 'rm -rf "$W"' EXIT
held=0; total=0
for fixed in "$DIR"/scenarios/*-fixed.toml; do
  broken=${fixed%-fixed.toml}.toml
  for variant in "$fixed" "$broken"; do
    want=0; [ "$variant" = "$broken" ] && want=1
    codes=""
    for _ in $(seq "$N"); do
      "$RIG" run "$variant" --out "$W" --quiet > /dev/null 2>&1; rc=$?
      codes="$codes $rc"; total=$((total + 1)); [ "$rc" = "$want" ] && held=$((held + 1))
    done
    printf '%-32s want %s, got%s\n' "$(basename "$variant" .toml)" "$want" "$codes"
  done
done
echo "gate: $held of $total runs gave the exit code their variant should"
[ "$held" = "$total" ]
