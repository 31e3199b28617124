#!/usr/bin/env bash
# The longest functions in rig's own code (not tests), by universal-ctags' start and end lines:
# a function's lambdas count as its lines. Usage: scripts/function-lengths.sh [N] (default 15).
# Issue 18 asks that none be longer than about 120 lines.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ctags >/dev/null || { echo "function-lengths: needs universal-ctags (apt-get install universal-ctags)" >&2; exit 2; }
n=${1:-15}
ctags -x --_xformat='%{line} %{end} %{kind} %{input} %{scope}::%{name}' --kinds-c++=f --fields=+e \
    -R rig injectors workloads targets reports core 2>/dev/null |
  awk '$2 != "" && $2 >= $1 { printf "%5d  %s:%d  %s\n", $2 - $1 + 1, $4, $1, $5 }' | sort -rn | head -n "$n"
