#!/usr/bin/env bash
# make test: the whole suite through ctest, then how many tests skipped for a missing
# capability (no root, no sch_netem, tmpfs, ...) and which: ctest reports those as Skipped,
# never as passed. Usage: scripts/run-tests.sh BUILD_DIR [ctest args...]
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR [ctest args...]}
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
(cd "$build" && ctest --output-on-failure -j 2 "$@") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
skipped=$(grep -c '(Skipped)$' "$log" || true)
echo "skipped: $skipped test(s) for a missing capability$( [ "$skipped" -gt 0 ] && echo ':')"
grep '(Skipped)$' "$log" | sed 's/^\s*[0-9]* - /  /' || true
exit "$rc"
