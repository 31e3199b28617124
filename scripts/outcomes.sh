#!/usr/bin/env bash
# Every scenario in scenarios/ run once by a rig binary: its exit code and report status, a line
# each, so two builds can be compared. Sweeps run with 1 s levels and one run a level.
# redis-ping.toml needs a running redis: it is given one on a free port (redis-server, no
# persistence), ended by pid after.
#   scripts/outcomes.sh [RIG_BINARY] [SCENARIO ...]
set -u
RIG=$(readlink -f "${1:-build/rig}"); shift || true
DIR=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/rig-outcomes-XXXXXX)
REDIS=""
trap '[ -n "$REDIS" ] && kill "$REDIS" 2>/dev/null; rm -rf "$W"' EXIT
files=("$@"); [ ${#files[@]} -gt 0 ] || files=("$DIR"/scenarios/*.toml)
for f in "${files[@]}"; do
  name=$(basename "$f" .toml); sets=()
  grep -q '^\[sweep\]' "$f" && sets+=(--set sweep.phase_duration=1s --set sweep.repeats=1)
  if [ "$name" = redis-ping ] && command -v redis-server >/dev/null; then
    [ -n "$REDIS" ] || { P=$((30000 + RANDOM % 5000)); redis-server --port "$P" --save '' --appendonly no >/dev/null 2>&1 & REDIS=$!; sleep 0.5; }
    sets+=(--set "target.address=127.0.0.1:$P")
  fi
  out=$(timeout 600 "$RIG" run "$f" --out "$W" --quiet "${sets[@]}" 2>&1); rc=$?
  status=$(printf '%s\n' "$out" | sed -n 's/.*status: \([a-z_]*\).*/\1/p' | tail -1)
  why=$(printf '%s\n' "$out" | grep -m1 -E 'FAIL|✗|rig: ' | cut -c1-120)
  printf '%-32s exit %-3s %-14s %s\n' "$name" "$rc" "${status:--}" "$why"
done
