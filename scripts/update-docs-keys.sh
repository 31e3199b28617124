#!/usr/bin/env bash
# Pastes `rig list` into docs/scenarios.md's "## Every key" block (a test keeps the two equal).
# Usage: scripts/update-docs-keys.sh [RIG]   (default build/rig)
set -euo pipefail
DIR="$(cd "$(dirname "$0")/.." && pwd)"
RIG="${1:-$DIR/build/rig}"
list="$(mktemp)"
trap 'rm -f "$list"' EXIT
"$RIG" list > "$list"
python3 - "$DIR/docs/scenarios.md" "$list" <<'PY'
import sys
path, listing = sys.argv[1], open(sys.argv[2]).read()
s = open(path).read()
at = s.index('## Every key')
a = s.index('```\n', at)
b = s.index('```\n', a + 4)
open(path, 'w').write(s[:a] + '```\n' + listing + s[b:])
PY
echo "docs/scenarios.md: key tables updated from $RIG list"
