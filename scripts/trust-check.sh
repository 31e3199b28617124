#!/usr/bin/env bash
# The runs that once read as ok on a wrong figure, tried against a rig binary through its
# command line only, so that two builds (before and after a change) are measured the same way.
# For each finding it prints "ok" (the run said what was true) or "WRONG" (it read as ok, or
# crashed, on a figure that was not true), and the count per class at the end.
# Needs root (cgroups, a small tmpfs), redis-server and nginx (scripts/install-deps.sh), jq.
# Everything it starts it ends by pid; everything it makes is under one temp dir (the tmpfs
# it mounts there is unmounted at the end).
#   scripts/trust-check.sh [RIG_BINARY]        (default build/rig)
set -u
RIG=$(readlink -f "${1:-build/rig}")
[ "$(id -u)" = 0 ] || { echo "trust-check: needs root" >&2; exit 3; }
[ -x "$RIG" ] || { echo "trust-check: no rig binary at $RIG" >&2; exit 2; }
for p in redis-server nginx jq prlimit; do command -v "$p" >/dev/null || { echo "trust-check: needs $p" >&2; exit 3; }; done
W=$(mktemp -d /tmp/rig-trust-XXXXXX)
export RIG_STATE_DIR="$W/state"
declare -A tried wrong
STARTED=()
finish() {
  for p in "${STARTED[@]}"; do kill -9 "$p" 2>/dev/null; done
  mountpoint -q "$W/small" && umount "$W/small"
  "$RIG" cleanup >/dev/null 2>&1
  rm -rf "$W"
}
trap finish EXIT
note() {  # note CLASS ok|WRONG TEXT
  tried[$1]=$(( ${tried[$1]:-0} + 1 ))
  [ "$2" = WRONG ] && wrong[$1]=$(( ${wrong[$1]:-0} + 1 ))
  printf '  %-10s %-5s %s\n' "$1" "$2" "$3"
}
free_port() { echo $(( 20000 + RANDOM % 20000 )); }
# rig run FILE [args]: sets RC, OUT (stdout+stderr) and REPORT (report.json path, or "").
run() {
  local f=$1; shift
  OUT=$(timeout 120 "$RIG" run "$f" --out "$W/runs" "$@" 2>&1); RC=$?
  REPORT=$(printf '%s\n' "$OUT" | sed -n 's/.*report: \([^ ]*report.json\).*/\1/p' | tail -1)
}
q() { [ -n "$REPORT" ] && [ -s "$REPORT" ] && jq -r "$1" "$REPORT" 2>/dev/null; }
errors_total() { q "[.phases[$1].workloads.$2.errors | to_entries[] | .value] | add // 0"; }
any_unverified() { q '[.phases[].injections[] | select(.verified == false)] | length'; }
supports() { "$RIG" schema 2>/dev/null | grep -q "\"$1\""; }
mkdir -p "$W/runs"

redis_target() {  # the command of a redis-server rig starts (no persistence), after a wrapper
  printf '%s"redis-server", "--bind", "{host}", "--port", "{port}", "--save", "", "--appendonly", "no"%s' "$1" "$2"
}
raw_ping_workload() {
  local extra=""
  supports error_prefix && extra='error_prefix = ["-"]'
  printf '[workloads.rr]\nkind = "tcp"\nconnections = 1\nrate = "100/s"\ntimeout = "1s"\nrequest = "PING\\r\\n"\nresponse_until = "\\r\\n"\n%s\n' "$extra"
}

echo "rig: $RIG ($("$RIG" --version 2>&1 | head -1))"

echo "shim: an injection through the preload shim, the server started through a wrapper"
printf '#!/bin/sh\nexec "$@"\n' > "$W/start.sh"; chmod 755 "$W/start.sh"
for form in '"env", "X=1", ' '"taskset", "-c", "0", ' '"nice", "-n", "1", ' "\"$W/start.sh\", "; do
  cat > "$W/shim.toml" <<EOF
name = "shim"
[target]
kind = "command"
run = [$(redis_target "$form" "")]
$(raw_ping_workload)
[injectors.sb]
kind = "sockbuf"
where = "target"
send = "4KiB"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "small"
duration = "1s"
inject = ["sb"]
EOF
  run "$W/shim.toml"
  # Wrong: the run said ok while its injection was not verified in the server.
  if [ "$RC" = 0 ] && [ "$(any_unverified)" != 0 ]; then note shim WRONG "[$form]: exit 0 with the injection unverified"
  else note shim ok "[$form]: exit $RC, unverified injections: $(any_unverified)"; fi
done
cat > "$W/shim.toml" <<EOF
name = "shim"
[target]
kind = "command"
run = ["sh", "-c", "exec redis-server --bind {host} --port {port} --save '' --appendonly no"]
$(raw_ping_workload)
[injectors.sb]
kind = "sockbuf"
where = "target"
send = "4KiB"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "small"
duration = "1s"
inject = ["sb"]
EOF
run "$W/shim.toml"
if [ "$RC" = 0 ] && [ "$(any_unverified)" != 0 ]; then note shim WRONG "[sh -c exec]: exit 0 with the injection unverified"
else note shim ok "[sh -c exec]: exit $RC, unverified injections: $(any_unverified)"; fi

echo "port: another server already holds the target's fixed port"
P=$(free_port)
redis-server --port "$P" --save '' --appendonly no > "$W/decoy.log" 2>&1 & STARTED+=($!)
sleep 0.5
cat > "$W/port.toml" <<EOF
name = "port"
[target]
kind = "command"
port = $P
run = [$(redis_target "" "")]
$(raw_ping_workload)
[[phases]]
name = "baseline"
duration = "1s"
EOF
run "$W/port.toml"
if [ "$RC" = 0 ]; then note port WRONG "exit 0: the run measured the other redis"; else note port ok "exit $RC: $(printf '%s' "$OUT" | grep -m1 -o 'already listened on by [^:]*' )"; fi

echo "replies: error replies and replies longer than response_size"
cat > "$W/auth.toml" <<EOF
name = "auth"
[target]
kind = "command"
run = [$(redis_target "" ', "--requirepass", "secret"')]
$(raw_ping_workload)
[[phases]]
name = "baseline"
duration = "1s"
EOF
run "$W/auth.toml"
if [ "$(errors_total 0 rr)" = 0 ]; then note replies WRONG "-NOAUTH to every PING counted as success ($(q '.phases[0].workloads.rr.ops') ops, 0 errors)"
else note replies ok "-NOAUTH counted as errors: $(q '.phases[0].workloads.rr.errors | tostring')"; fi
# A 512 KiB value read with response_size = 1000.
exec 3<>"/dev/tcp/127.0.0.1/$P"
printf '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$524288\r\n%s\r\n' "$(head -c 524288 /dev/zero | tr '\0' x)" >&3
read -r -t 5 reply <&3; exec 3>&-
cat > "$W/size.toml" <<EOF
name = "size"
[target]
kind = "endpoint"
address = "127.0.0.1:$P"
[workloads.rr]
kind = "tcp"
connections = 1
rate = "50/s"
timeout = "1s"
request = "GET k\r\n"
response_size = "1000B"
[[phases]]
name = "baseline"
duration = "1s"
EOF
run "$W/size.toml"
if [ "$(errors_total 0 rr)" = 0 ]; then note replies WRONG "1000-byte slices of 512 KiB replies counted as replies ($(q '.phases[0].workloads.rr.throughput_ops_s | floor') ops/s, p50 $(q '.phases[0].workloads.rr.latency_us.p50') us)"
else note replies ok "a reply longer than response_size is an error: $(q '.phases[0].workloads.rr.errors | tostring')"; fi

builtin() {  # builtin FILE INJECTOR_TOML INJECTED_DURATION CHECKS [WORKLOAD_EXTRA]
  cat > "$1" <<EOF
name = "b"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = ${5:-1}
rate = "100/s"
timeout = "500ms"
$2
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "after"
duration = "$3"
$( [ -n "$2" ] && echo 'inject = ["x"]' )
$( [ -n "$4" ] && printf '[expect]\nchecks = [%s]\n' "$4" )
EOF
}

echo "nothing: a figure computed from nothing, a failed check, an unwritten report, a death"
builtin "$W/dead.toml" $'[injectors.x]\nkind = "pause"\nperiod = "5s"\npause_for = "4s"' 2s '"magnification.after.rr.p99_x < 1.5"'
run "$W/dead.toml"
if [ "$RC" = 0 ]; then note nothing WRONG "p99 magnification < 1.5 passed on a phase with $(q '.phases[1].workloads.rr.ops') replies"
else note nothing ok "exit $RC: $(printf '%s' "$OUT" | grep -m1 'p99_x')"; fi
builtin "$W/fail.toml" "" 1s '"baseline.rr.latency.p99 < 1us"'
run "$W/fail.toml"
if [ "$(q .status)" = ok ]; then note nothing WRONG "report.json status ok with a failed check (exit $RC)"
else note nothing ok "status $(q .status), exit $RC"; fi
mkdir -p "$W/small" && mount -t tmpfs -o size=8k tmpfs "$W/small"
builtin "$W/full.toml" "" 1s ""
OUT=$(timeout 60 "$RIG" run "$W/full.toml" --out "$W/small" 2>&1); RC=$?
R=$(ls "$W"/small/*/report.json 2>/dev/null | head -1)
if [ "$RC" = 0 ] && { [ -z "$R" ] || [ ! -s "$R" ]; }; then note nothing WRONG "exit 0 with report.json unwritten (a full run directory)"
else note nothing ok "exit $RC (report.json $( [ -s "$R" ] && echo written || echo 'not written'))"; fi
umount "$W/small"
builtin "$W/die.toml" $'[injectors.x]\nkind = "kill"\nat = "300ms"' 1s ""
run "$W/die.toml"
if [ "$RC" = 0 ] || [ "$RC" = 4 ]; then note nothing WRONG "the target's death: exit $RC (0 is ok, 4 is rig's own failure)"
else note nothing ok "the target's death: exit $RC, status $(q .status)"; fi
builtin "$W/fds.toml" "" 1s "" 25000
OUT=$(timeout 120 prlimit --nofile=20000:20000 "$RIG" run "$W/fds.toml" --out "$W/runs" 2>&1); RC=$?
if [ "$RC" = 0 ]; then note nothing WRONG "25,000 connections over a 20,000 descriptor limit: exit 0"
else note nothing ok "25,000 connections over a 20,000 limit: exit $RC: $(printf '%s' "$OUT" | grep -m1 -o 'lets rig have [0-9,]*')"; fi

echo "figures: the target's processes, the generator's warning"
N=$(free_port)
cat > "$W/nginx.conf" <<EOF
daemon off; master_process on; worker_processes 2; pid $W/nginx.pid; error_log stderr;
events { worker_connections 256; }
http { access_log off; server { listen 127.0.0.1:$N; location / { return 200 "ok"; } } }
EOF
cat > "$W/nginx.toml" <<EOF
name = "nginx"
[target]
kind = "command"
port = $N
run = ["nginx", "-c", "$W/nginx.conf", "-p", "$W"]
[workloads.rr]
kind = "http"
connections = 8
threads = 2
[[phases]]
name = "load"
duration = "2s"
EOF
run "$W/nginx.toml"
CPU=$(q '.phases[0].resources.target.cpu_pct // 0 | floor'); TPUT=$(q '.phases[0].workloads.rr.throughput_ops_s // 0 | floor')
if [ "${CPU:-0}" -lt 5 ]; then note figures WRONG "nginx (master + 2 workers) read ${CPU}% CPU at ${TPUT} req/s"
else note figures ok "nginx read ${CPU}% CPU at ${TPUT} req/s ($(q '.phases[0].resources.target.processes_max') processes)"; fi
cat > "$W/gen.toml" <<EOF
name = "gen"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "200/s"
EOF
for i in 1 2 3 4 5; do printf '[[phases]]\nname = "p%d"\nduration = "1s"\n' "$i" >> "$W/gen.toml"; done
run "$W/gen.toml"
LIMITED=$(printf '%s\n' "$OUT" | grep -c '^! p[0-9] rr: ')
if [ "$LIMITED" -gt 0 ]; then note figures WRONG "generator limited in $LIMITED of 5 phases at 200/s (the rate was met)"
else note figures ok "no generator warning in 5 phases at 200/s"; fi

echo "readings: small figures"
builtin "$W/pause.toml" $'[injectors.x]\nkind = "pause"\nperiod = "1s"\npause_for = "100ms"' 5s ""
run "$W/pause.toml"
PAUSES=$(q '.phases[1].injections[0].measured.pauses')
if [ "$PAUSES" != 5 ]; then note readings WRONG "5 s at one pause a second read $PAUSES pauses"; else note readings ok "5 pauses"; fi
CSV="$(dirname "${REPORT:-/nonexistent}")/timeseries.csv"
EMPTY=$(tail -n +2 "$CSV" 2>/dev/null | awk -F, '$2 == ""' | wc -l)
if [ "$EMPTY" -gt 0 ]; then note readings WRONG "timeseries.csv: $EMPTY row(s) without a phase"; else note readings ok "timeseries.csv: every row has its phase"; fi
OUT=$(timeout 120 "$RIG" run "${0%/*}/../scenarios/memory-accumulation.toml" --out "$W/runs" 2>&1); RC=$?
REPORT=$(printf '%s\n' "$OUT" | sed -n 's/.*report: \([^ ]*report.json\).*/\1/p' | tail -1)
SUMMARY=$(q '.phases[1].injections[0].measured.summary')
if printf '%s' "$SUMMARY" | grep -q 'hit 0 times'; then note readings WRONG "after the OOM kill: \"$SUMMARY\""
else note readings ok "after the OOM kill: \"$SUMMARY\""; fi
builtin "$W/netem.toml" $'[injectors.x]\nkind = "netem"\ndelay = "5ms"' 1s ""
run "$W/netem.toml"
if [ "$RC" = 3 ] && printf '%s' "$OUT" | grep -q 'Run as root'; then note readings WRONG "netem refused (no sch_netem): tells root to run as root"
else note readings ok "netem: exit $RC, $(printf '%s' "$OUT" | grep -m1 -o 'nothing was changed[^,]*')"; fi
cat > "$W/true.toml" <<EOF
name = "quiet"
[target]
kind = "command"
run = ["true"]
[workloads.rr]
kind = "tcp"
[[phases]]
name = "baseline"
duration = "1s"
EOF
run "$W/true.toml"
if [ "$RC" -ge 128 ] || printf '%s' "$OUT" | grep -q 'basic_string'; then note readings WRONG "a target that prints nothing and exits: $(printf '%s' "$OUT" | grep -m1 'run failed')"
else note readings ok "a target that prints nothing and exits: $(printf '%s' "$OUT" | grep -m1 -i 'target' | cut -c1-100)"; fi

echo "validate: what the run would fail on, refused before it"
validate_case() {  # validate_case NAME FILE
  OUT=$(timeout 5 "$RIG" validate "$2" 2>&1); RC=$?
  if [ "$RC" = 0 ] || [ "$RC" = 124 ] || [ "$RC" -ge 128 ]; then note validate WRONG "$1: exit $RC"
  else note validate ok "$1: $(printf '%s' "$OUT" | head -1 | cut -c1-110)"; fi
}
builtin "$W/v.toml" "" 1s ""
sed "s/^name = \"b\"/name = \"$(printf 'a%.0s' $(seq 240))\"/" "$W/v.toml" > "$W/v1.toml"; validate_case "a 240-character name" "$W/v1.toml"
builtin "$W/v2.toml" $'[injectors.x]\nkind = "cpu"\nscale = "50%"\ncpus = "99"' 1s ""; validate_case "cpus = \"99\" on a $(nproc)-CPU host" "$W/v2.toml"
builtin "$W/v3.toml" $'[injectors.x]\nkind = "file_faults"\nerror = "EIO"\npath_prefix = ""' 1s ""; validate_case "path_prefix = \"\"" "$W/v3.toml"
builtin "$W/v4.toml" $'[injectors.x]\nkind = "noise"\ncpus = "64"' 1s ""; validate_case "noise cpus = \"64\"" "$W/v4.toml"
builtin "$W/v5.toml" $'[injectors.x]\nkind = "file_faults"\nerror = "EIO"\nprobability = nan' 1s ""; validate_case "probability = nan" "$W/v5.toml"
builtin "$W/v6.toml" "" 1s '"after.target.live_worker_min >= 1"'; validate_case "a typo in a target figure" "$W/v6.toml"
validate_case "/dev/zero" /dev/zero
OUT=$(timeout 5 "$RIG" validate "$W" 2>&1); RC=$?
if printf '%s' "$OUT" | grep -q 'is a directory'; then note validate ok "a directory: $(printf '%s' "$OUT" | head -1 | cut -c1-100)"
else note validate WRONG "a directory: exit $RC, \"$(printf '%s' "$OUT" | head -1 | cut -c1-80)\""; fi
mkdir -p "$W/deep"; { printf '{"rig_version":"x","phases":'; head -c 200000 /dev/zero | tr '\0' '['; head -c 200000 /dev/zero | tr '\0' ']'; printf '}'; } > "$W/deep/report.json"
timeout 10 "$RIG" report "$W/deep" > /dev/null 2>&1; RC=$?
if [ "$RC" -ge 124 ]; then note validate WRONG "rig report on JSON nested 200,000 deep: exit $RC (a crash)"; else note validate ok "rig report on deep JSON: exit $RC"; fi

echo
printf '%-10s %6s %6s\n' class tried WRONG
total_t=0; total_w=0
for c in shim port replies nothing figures readings validate; do
  printf '%-10s %6d %6d\n' "$c" "${tried[$c]:-0}" "${wrong[$c]:-0}"
  total_t=$((total_t + ${tried[$c]:-0})); total_w=$((total_w + ${wrong[$c]:-0}))
done
printf '%-10s %6d %6d\n' all "$total_t" "$total_w"
