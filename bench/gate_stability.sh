#!/usr/bin/env bash
# Does the seed release gate decide right on a noisy host? An unchanged release and one 25%
# slower (every built-in target's io_wait x1.25: each request waits 25% longer), each gated N
# times by `rig suite scenarios/suites/release-gate.toml --repeat R`, with a CPU hog spinning on
# one core the whole time. Prints each trial's verdict (and what failed) and the two counts:
# the goal is the unchanged release passing every trial and the slower one failing every trial.
#
# Usage: bench/gate_stability.sh [--trials N] [--repeat R] [--no-hog] [--only unchanged|slowed]
#                                [--rig PATH] [--keep]
# Defaults: 20 trials, --repeat 5, build/rig. Each trial is R runs of the whole suite (~95 s a
# run here): the full measurement takes hours; --trials 2 --repeat 1 is a smoke test.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
trials=20 repeat=5 hog=1 only="" rig="$here/build/rig" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=${2:?--trials needs a number}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a number}; shift 2 ;;
    --no-hog) hog=0; shift ;;
    --only) only=${2:?--only needs unchanged or slowed}; shift 2 ;;
    --rig) rig=${2:?--rig needs a path}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gate_stability.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
case "$trials$repeat" in *[!0-9]*) echo "gate_stability.sh: --trials and --repeat take numbers" >&2; exit 2 ;; esac
[ "$trials" -ge 1 ] && [ "$repeat" -ge 1 ] || { echo "gate_stability.sh: --trials and --repeat are at least 1" >&2; exit 2; }
case "$only" in ""|unchanged|slowed) ;; *) echo "gate_stability.sh: --only unchanged or slowed" >&2; exit 2 ;; esac
[ -x "$rig" ] || { echo "gate_stability.sh: no rig at $rig (build it, or pass --rig)" >&2; exit 2; }

work=$(mktemp -d /tmp/rig-gate-XXXXXX)
hog_pid=""
finish() {
  [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null && wait "$hog_pid" 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

gate="$here/scenarios/suites/release-gate.toml"
# The slower release: the same suite, each entry whose scenario sets io_wait given it x1.25.
python3 - "$gate" "$work/slowed.toml" <<'EOF'
import re, sys, tomllib, pathlib
src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
suite = tomllib.loads(src.read_text())
units = {"us": 1e-3, "ms": 1.0, "s": 1e3}
lines = [f'name = "{suite.get("name", "suite")}-slowed"']
for e in suite["scenarios"]:
    f = (src.parent / e["file"]).resolve()
    sets = list(e.get("set", []))
    m = re.search(r'^io_wait\s*=\s*"([0-9.]+)(us|ms|s)"', f.read_text(), re.M)
    if m:
        sets.append(f"target.io_wait={float(m.group(1)) * units[m.group(2)] * 1.25:g}ms")
    lines += ["[[scenarios]]", f'file = "{f}"']
    if "name" in e: lines.append(f'name = "{e["name"]}"')
    if sets: lines.append("set = [" + ", ".join(f'"{s}"' for s in sets) + "]")
out.write_text("\n".join(lines) + "\n")
EOF

if [ "$hog" = 1 ]; then
  taskset -c 1 sh -c 'while :; do :; done' &
  hog_pid=$!
  echo "hog: pid $hog_pid spinning on CPU 1"
fi

passed_unchanged=0 passed_slowed=0 ran_unchanged=0 ran_slowed=0
for release in unchanged slowed; do
  [ -n "$only" ] && [ "$only" != "$release" ] && continue
  suite=$gate
  [ "$release" = slowed ] && suite=$work/slowed.toml
  for t in $(seq 1 "$trials"); do
    out="$work/$release-$t"
    start=$(date +%s)
    set +e
    "$rig" suite "$suite" --repeat "$repeat" -q --out "$out" > "$out.log" 2>&1
    code=$?
    set -e
    secs=$(( $(date +%s) - start ))
    failed=$(grep -h '^    FAIL ' "$out.log" | sed 's/^    FAIL //' | head -3 | paste -sd ';' - || true)
    if [ "$code" = 0 ]; then verdict=pass; else verdict="fail (exit $code)"; fi
    echo "$release trial $t/$trials: $verdict in ${secs}s${failed:+  — $failed}"
    if [ "$release" = unchanged ]; then
      ran_unchanged=$((ran_unchanged + 1)); [ "$code" = 0 ] && passed_unchanged=$((passed_unchanged + 1))
    else
      ran_slowed=$((ran_slowed + 1)); [ "$code" = 0 ] && passed_slowed=$((passed_slowed + 1))
    fi
    case "$code" in 130|143) exit "$code" ;; esac
  done
done
echo
[ "$ran_unchanged" -gt 0 ] && echo "unchanged release: passed $passed_unchanged of $ran_unchanged (goal: all)"
[ "$ran_slowed" -gt 0 ] && echo "25% slower release: failed $((ran_slowed - passed_slowed)) of $ran_slowed (goal: all)"
exit 0
