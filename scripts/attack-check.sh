#!/usr/bin/env bash
# The attacks that broke rig's promises to a shared host, tried against a rig binary through its
# command line only, so that two builds (before and after a change) are measured the same way.
# Prints, per attack class, the cases tried and the promises broken. Needs root (it plays two
# other users, forces pid reuse through ns_last_pid and makes cgroups). Every decoy it attacks
# is its own; everything it starts it ends by pid; everything it makes is under one temp dir.
#   scripts/attack-check.sh [RIG_BINARY]        (default build/rig)
set -u
RIG=$(readlink -f "${1:-build/rig}")
[ "$(id -u)" = 0 ] || { echo "attack-check: needs root" >&2; exit 3; }
[ -x "$RIG" ] || { echo "attack-check: no rig binary at $RIG" >&2; exit 2; }
W=$(mktemp -d /tmp/rig-attack-XXXXXX)
chmod 755 "$W"
VICTIM=$((54100 + RANDOM % 100)); ATTACKER=$((VICTIM + 200))
NEW_FORMAT=0; "$RIG" run --help 2>&1 | grep -q -- --cleanup-first && NEW_FORMAT=1
declare -A tried broken
STARTED=()
note() { tried[$1]=$(( ${tried[$1]:-0} + 1 )); [ "$2" = broken ] && broken[$1]=$(( ${broken[$1]:-0} + 1 )); echo "  [$1] $3: $2"; }
alive() { [ -n "$1" ] && [ -e "/proc/$1" ] && [ "$(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null)" = "$2" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
running_pid() { [ -n "$1" ] && [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
start_of() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }
finish() {
  for p in "${STARTED[@]}"; do kill -9 -- "$p" 2>/dev/null; done
  RIG_STATE_DIR="$W/state" "$RIG" cleanup >/dev/null 2>&1
  RIG_STATE_DIR="$W/sp/state dir" "$RIG" cleanup >/dev/null 2>&1
  rm -rf "$W" "/tmp/rig-$VICTIM"
}
trap finish EXIT

scenario() {  # scenario FILE TARGET_TOML INJECTOR_TOML DURATION
  local inj="" inject=""
  if [ -n "$3" ]; then inj=$(printf '[injectors.x]\n%s' "$3"); inject='inject = ["x"]'; fi
  cat > "$1" <<EOF
name = "attack"
[target]
$2
[workloads.rr]
kind = "tcp"
connections = 1
rate = "100/s"
timeout = "1s"
$inj
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "last"
duration = "$4"
$inject
EOF
}

# Starts rig in the background on a scenario; waits until the last phase runs. Sets RIGPID.
run_until_last() {  # state_dir scenario out_dir
  RIG_STATE_DIR="$1" "$RIG" run "$2" --out "$3" > "$W/rig.out" 2>&1 &
  RIGPID=$!
  for _ in $(seq 300); do grep -q "▶ last" "$W/rig.out" 2>/dev/null && { sleep 0.3; return 0; }; sleep 0.05; done
  echo "  (rig did not reach the last phase of $2: $(tail -3 "$W/rig.out" | tr '\n' ' '))"
  kill -9 "$RIGPID" 2>/dev/null; wait "$RIGPID" 2>/dev/null
  return 1
}
journal_of() { ls "$1"/journal-"$2"*.log 2>/dev/null | head -1; }
# Forks `setsid sleep 300` with pid $1 (ns_last_pid); sets REUSED to its pid, or empty.
sleep_with_pid() {
  REUSED=
  for _ in $(seq 50); do
    echo $(( $1 - 1 )) > /proc/sys/kernel/ns_last_pid
    setsid sleep 300 > /dev/null 2>&1 & local p=$!
    if [ "$p" = "$1" ]; then STARTED+=("$p"); sleep 0.05; REUSED=$p; return; fi
    kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null
  done
}
plant_journal() {  # dir dead_pid records...
  local dir=$1 pid=$2; shift 2
  mkdir -p "$dir"; chmod 700 "$dir"  # a cleanup that undid everything removed it
  if [ $NEW_FORMAT = 1 ]; then
    local f="$dir/journal-$pid-1.log"; printf 'rig-journal 2 %s 1\n' "$pid" > "$f"
  else
    local f="$dir/journal-$pid.log"; : > "$f"
  fi
  for r in "$@"; do printf '%s\n' "$r" >> "$f"; done
  chmod 644 "$f"  # readable: a planted journal is meant to be read
}
dead_pid() { sh -c 'echo $$'; }

echo "attack-check: $RIG ($([ $NEW_FORMAT = 1 ] && echo 'journal v2' || echo 'journal v1'))"

# 1. A killed rig's target pid handed to an unrelated `setsid sleep`: cleanup must not kill it.
S="$W/state"; scenario "$W/pid.toml" 'kind = "builtin"' "" 30s
if run_until_last "$S" "$W/pid.toml" "$W/runs"; then
  J=$(journal_of "$S" "$RIGPID"); T=$(grep -m1 '^process ' "$J" | cut -d' ' -f2)
  kill -9 "$RIGPID"; wait "$RIGPID" 2>/dev/null
  for _ in $(seq 200); do [ -e /proc/"$T" ] || break; sleep 0.02; done
  sleep_with_pid "$T"; O=$REUSED
  if [ -n "$O" ]; then
    OS=$(start_of "$O"); RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
    alive "$O" "$OS" && note pid-reuse kept "reused target pid $T" || note pid-reuse broken "reused target pid $T"
  fi
  RIG_STATE_DIR="$S" "$RIG" cleanup >/dev/null 2>&1
fi

# 2. A namespace inode handed to an unrelated namespace: cleanup must not empty it.
scenario "$W/ns.toml" 'kind = "builtin"' $'kind = "rate"\nrate = "10MB/s"' 30s
if run_until_last "$S" "$W/ns.toml" "$W/runs"; then
  J=$(journal_of "$S" "$RIGPID"); kill -9 "$RIGPID"; wait "$RIGPID" 2>/dev/null; sleep 0.3
  unshare -n sleep 300 > /dev/null 2>&1 & U=$!; STARTED+=("$U"); sleep 0.2
  INO=$(stat -L -c %i /proc/$U/ns/net); US=$(start_of "$U")
  grep -q "^netns $INO\$" "$J" || sed -i "s/^netns [0-9]*\$/netns $INO/" "$J"
  RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
  alive "$U" "$US" && note netns-reuse kept "namespace inode $INO" || note netns-reuse broken "namespace inode $INO"
  RIG_STATE_DIR="$S" "$RIG" cleanup >/dev/null 2>&1
fi

# 3. A journal whose rig pid was reused: cleanup must still undo it (the run's cgroup goes).
scenario "$W/cg.toml" 'kind = "builtin"' $'kind = "memory"\nlimit = "512MiB"' 30s
if run_until_last "$S" "$W/cg.toml" "$W/runs"; then
  J=$(journal_of "$S" "$RIGPID"); CG=$(grep -m1 '^cgroup ' "$J" | cut -d' ' -f2)
  R=$RIGPID; kill -9 "$R"; wait "$R" 2>/dev/null; sleep 0.2
  sleep_with_pid "$R"; O=$REUSED
  if [ -n "$O" ]; then
    RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
    [ -d "$CG" ] && note journal-pid-reuse broken "rig pid $R reused" || note journal-pid-reuse kept "rig pid $R reused"
    kill -9 "$O" 2>/dev/null
  fi
  RIG_STATE_DIR="$S" "$RIG" cleanup >/dev/null 2>&1
fi

# 4. Tampered records on decoys: each must be refused.
mkdir -p "$S" && chmod 700 "$S"
sleep 300 > /dev/null 2>&1 & D=$!; STARTED+=("$D"); DS=$(start_of "$D")
mkdir -p "$W/fake/rig/run-1-1-1"; echo "$D" > "$W/fake/rig/run-1-1-1/cgroup.procs"
echo keep > "$W/decoy-file"; echo keep > "$W/decoy-restore"
setsid sh -c 'sleep 300 & wait' > /dev/null 2>&1 & L=$!; STARTED+=("-$L" "$L"); sleep 0.1; LS=$(start_of "$L")
P=$(dead_pid)
plant_journal "$S" "$P" "cgroup $W/fake/rig/run-1-1-1" "file $W/decoy-file" "restore $W/decoy-restore 0" \
  "process $L $((LS + 7))"
RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
alive "$D" "$DS" && note tampered-journal kept "cgroup line off cgroupfs" || note tampered-journal broken "cgroup line off cgroupfs"
[ -e "$W/decoy-file" ] && note tampered-journal kept "file line outside the state dir" || note tampered-journal broken "file line outside the state dir"
[ "$(cat "$W/decoy-restore")" = keep ] && note tampered-journal kept "restore line to a non-cpufreq file" || note tampered-journal broken "restore line to a non-cpufreq file"
alive "$L" "$LS" && note tampered-journal kept "process line, wrong start, a group leader" || note tampered-journal broken "process line, wrong start, a group leader"
rm -f "$S"/journal-*

# 5. A predictable state dir planted by another user (no XDG_RUNTIME_DIR): nothing of the
#    victim's may be touched, and no journal written through a planted link.
VD="$W/victim"; mkdir -p "$VD"; echo keep > "$VD/file"; echo keep > "$VD/precious"; chown -R "$VICTIM:$VICTIM" "$VD"
PD="/tmp/rig-$VICTIM"; rm -rf "$PD"; mkdir -m 777 "$PD"; chmod 777 "$PD"; chown "$ATTACKER:$ATTACKER" "$PD"
plant_journal "$PD" "$(dead_pid)" "file $VD/file"; chown "$ATTACKER" "$PD"/journal-*
as_victim() { setpriv --reuid "$VICTIM" --regid "$VICTIM" --clear-groups env -u XDG_RUNTIME_DIR -u RIG_STATE_DIR "$@"; }
as_victim "$RIG" cleanup > "$W/c.out" 2>&1
[ -e "$VD/file" ] && note planted-state-dir kept "planted journal in /tmp/rig-UID" || note planted-state-dir broken "planted journal in /tmp/rig-UID"
rm -f "$PD"/journal-*
# The attacker watches for the victim's rig and plants a link where its journal will be (the
# name is pid and start time, both readable in /proc) before its first record.
cat > "$W/watch.sh" <<EOF
for i in \$(seq 3000); do
  for p in \$(pgrep -u $VICTIM -x rig); do
    st=\$(awk '{print \$22}' /proc/\$p/stat 2>/dev/null)
    ln -s "$VD/precious" "$PD/journal-\$p.log" 2>/dev/null; ln -s "$VD/precious" "$PD/journal-\$p-\$st.log" 2>/dev/null
  done
  sleep 0.003
done
EOF
setpriv --reuid "$ATTACKER" --regid "$ATTACKER" --clear-groups bash "$W/watch.sh" & WATCH=$!; STARTED+=("$WATCH")
scenario "$VD/s.toml" 'kind = "builtin"' "" 1s; chown "$VICTIM" "$VD/s.toml"
as_victim "$RIG" run "$VD/s.toml" --out "$VD/runs" > "$W/v.out" 2>&1
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null
[ "$(cat "$VD/precious")" = keep ] && note planted-state-dir kept "journal link planted as the victim's rig starts" || note planted-state-dir broken "journal link planted as the victim's rig starts"
rm -rf "$PD"

# 6. A state dir with a space: cleanup removes that socket, and not the path's first word.
mkdir "$W/sp"; SS="$W/sp/state dir"; echo keep > "$W/sp/state"
scenario "$W/fp.toml" 'kind = "builtin"' $'kind = "failpoint"\nfailpoint = "reply.write"\naction = "delay"\ndelay = "1ms"' 30s
if run_until_last "$SS" "$W/fp.toml" "$W/runs"; then
  SOCK=$(ls "$SS"/fp-*.sock 2>/dev/null | head -1)
  kill -9 "$RIGPID"; wait "$RIGPID" 2>/dev/null
  RIG_STATE_DIR="$SS" "$RIG" cleanup > "$W/c.out" 2>&1
  { [ -e "$W/sp/state" ] && [ ! -e "$SOCK" ]; } && note space-in-path kept "failpoint socket" || note space-in-path broken "failpoint socket"
  RIG_STATE_DIR="$SS" "$RIG" cleanup >/dev/null 2>&1
fi

# 7. Another user against rig's sockets: the target's control channel, the failpoint channel.
cat > "$W/uconnect.c" <<'EOF'
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char** argv) {  /* uconnect PATH|@NAME LINE: prints the reply, exit 1 if none */
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
  socklen_t len = sizeof a;
  if (argv[1][0] == '@') { a.sun_path[0] = 0; len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(argv[1])); }
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr*)&a, len) != 0) return 2;
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  dprintf(fd, "%s\n", argv[2]);
  char buf[512]; ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n <= 0) return 1;
  buf[n] = 0; printf("%s", buf); return 0;
}
EOF
cc -o "$W/uconnect" "$W/uconnect.c" && chmod 755 "$W/uconnect"
scenario "$W/ctl.toml" 'kind = "builtin"' $'kind = "threads"\nprobability = 0.0001' 30s
if run_until_last "$S" "$W/ctl.toml" "$W/runs"; then
  NAMES=$(grep -o '@rig-target-[0-9-]*' /proc/net/unix | sort -u)
  if [ -n "$NAMES" ]; then
    for n in $NAMES; do
      R=$(setpriv --reuid "$ATTACKER" --regid "$ATTACKER" --clear-groups "$W/uconnect" "$n" "policy nodelay=0 sndbuf=1 rcvbuf=1")
      case "$R" in ok*) note sockets broken "target control $n as uid $ATTACKER" ;; *) note sockets kept "target control $n as uid $ATTACKER" ;; esac
    done
  else
    note sockets kept "target control: no named socket to open"
  fi
  FP=$(ls "$S"/fp-*.sock 2>/dev/null | head -1)
  if [ -n "$FP" ]; then
    setpriv --reuid "$ATTACKER" --regid "$ATTACKER" --clear-groups "$W/uconnect" "$FP" "hello pid=1"
    [ $? = 2 ] && note sockets kept "failpoint socket as uid $ATTACKER" || note sockets broken "failpoint socket as uid $ATTACKER"
  fi
  kill -INT "$RIGPID"; wait "$RIGPID" 2>/dev/null
fi

# 8. A run directory under a directory another user can write, swapped for a link mid-run.
mkdir -m 1777 "$W/shared"; chmod 1777 "$W/shared"; mkdir "$W/decoy"; echo precious > "$W/decoy/report.json"; chmod 600 "$W/decoy/report.json"
scenario "$W/swap.toml" 'kind = "builtin"' "" 2s
if run_until_last "$S" "$W/swap.toml" "$W/shared"; then
  RD=$(ls -d "$W/shared"/*-attack | head -1); mv "$RD" "$RD.moved"; ln -s "$W/decoy" "$RD"
  while kill -0 "$RIGPID" 2>/dev/null; do sleep 0.1; done
  cp "$W/rig.out" "$W/swap.out"  # what it printed (class 17 reads the report path)
  { [ "$(cat "$W/decoy/report.json")" = precious ] && [ "$(ls "$W/decoy" | wc -l)" = 1 ] && [ -s "$RD.moved/report.json" ]; } \
    && note run-dir-swap kept "report.json, report.html, target.log" || note run-dir-swap broken "report.json, report.html, target.log"
fi

# 9. What a target starts must not outlive the run: a daemon, a setsid child (end, SIGINT, SIGKILL+cleanup).
if command -v redis-server >/dev/null; then
  scenario "$W/redis.toml" $'kind = "command"\nrun = ["redis-server", "--port", "{port}", "--save", "", "--daemonize", "yes", "--pidfile", "'"$W"'/redis.pid"]' "" 1s
  RIG_STATE_DIR="$S" "$RIG" run "$W/redis.toml" --out "$W/runs" > "$W/r.out" 2>&1
  RP=$(cat "$W/redis.pid" 2>/dev/null); [ -n "$RP" ] && STARTED+=("$RP")
  sleep 0.2; running_pid "$RP" && note target-escape broken "redis-server --daemonize yes" || note target-escape kept "redis-server --daemonize yes"
  [ -n "$RP" ] && kill -9 "$RP" 2>/dev/null
fi
for how in end sigint sigkill; do
  rm -f "$W/gc.pid"
  scenario "$W/gc.toml" $'kind = "command"\nrun = ["/bin/sh", "-c", "setsid sleep 300 & echo $! > '"$W"'/gc.pid; exec '"$RIG"' target --bind {host} --port {port}"]' "" "$([ $how = end ] && echo 1s || echo 30s)"
  if [ $how = end ]; then RIG_STATE_DIR="$S" "$RIG" run "$W/gc.toml" --out "$W/runs" > /dev/null 2>&1
  else
    run_until_last "$S" "$W/gc.toml" "$W/runs"
    kill -"$([ $how = sigint ] && echo INT || echo KILL)" "$RIGPID"; wait "$RIGPID" 2>/dev/null
    [ $how = sigkill ] && RIG_STATE_DIR="$S" "$RIG" cleanup > /dev/null 2>&1
  fi
  sleep 0.2; G=$(cat "$W/gc.pid" 2>/dev/null)
  running_pid "$G" && { STARTED+=("$G"); note target-escape broken "setsid grandchild, $how"; } || note target-escape kept "setsid grandchild, $how"
done

# 10. No descriptor of rig's reaches the target.
scenario "$W/fd.toml" $'kind = "command"\nrun = ["/bin/sh", "-c", "ls -l /proc/$$/fd; exec '"$RIG"' target --bind {host} --port {port}"]' "" 1s
RIG_STATE_DIR="$S" "$RIG" run "$W/fd.toml" --out "$W/fdruns" > /dev/null 2>&1
LOG=$(ls "$W"/fdruns/*/target.log | head -1)
EXTRA=$(grep -oE ' [0-9]+ -> ' "$LOG" | awk '$1 > 2' | wc -l)
[ "$EXTRA" = 0 ] && note fd-leak kept "command target's descriptors" || note fd-leak broken "command target's descriptors ($EXTRA beyond 0-2)"

# 11. Writers at a path a user gave, through a link another user planted in a shared sticky directory.
scenario "$W/w.toml" 'kind = "builtin"' "" 1s
RIG_STATE_DIR="$S" "$RIG" run "$W/w.toml" --out "$W/wruns" > "$W/w.out" 2>&1
WD=$(ls -d "$W"/wruns/*-attack 2>/dev/null | head -1)
mkdir -m 1777 "$W/pub"; chmod 1777 "$W/pub"; echo precious > "$W/root-file"; chmod 600 "$W/root-file"
plant_link() { rm -f "$W/pub/$1"; setpriv --reuid "$ATTACKER" --regid "$ATTACKER" --clear-groups ln -s "$W/root-file" "$W/pub/$1"; }
writer() {  # name link args...
  local name=$1 link=$2; shift 2
  plant_link "$link"
  RIG_STATE_DIR="$S" timeout 60 "$RIG" "$@" > "$W/wr.out" 2>&1
  [ "$(cat "$W/root-file")" = precious ] && [ -L "$W/pub/$link" ] && note writer-links kept "$name" || note writer-links broken "$name"
  echo precious > "$W/root-file"
}
if [ -n "$WD" ]; then
  writer "run --junit" run.xml run "$W/w.toml" --out "$W/wruns" --junit "$W/pub/run.xml"
  writer "suite --junit" suite.xml suite "$W/w.toml" --out "$W/wruns" --junit "$W/pub/suite.xml"
  writer "export openmetrics --out" m.txt export "$WD" --format openmetrics --out "$W/pub/m.txt"
  writer "export hdr-log --out" attack-rr.latency.hlog export "$WD" --format hdr-log --out "$W/pub"
  writer "compare --out" c.html compare "$WD" "$WD" --out "$W/pub/c.html"
  writer "compare --junit" c.xml compare "$WD" "$WD" --out "$W/c2.html" --fail-if "p99 > 100x" --junit "$W/pub/c.xml"
  writer "history --out" history.json history "$W/wruns" --out "$W/pub"
fi

# 11b. The same writers through a link at a *directory* of the path: the attacker's link into
#      root's own 0700 directory (the tryout's finding: root's history.json replaced).
mkdir -m 700 "$W/vault"; echo precious > "$W/vault/history.json"; chmod 600 "$W/vault/history.json"
setpriv --reuid "$ATTACKER" --regid "$ATTACKER" --clear-groups ln -s "$W/vault" "$W/pub/L"
via() {  # name args...
  local name=$1; shift
  RIG_STATE_DIR="$S" timeout 60 "$RIG" "$@" > "$W/wr.out" 2>&1
  { [ "$(cat "$W/vault/history.json")" = precious ] && [ "$(ls "$W/vault" | wc -l)" = 1 ]; } \
    && note dir-links kept "$name" || note dir-links broken "$name"
  echo precious > "$W/vault/history.json"; find "$W/vault" -mindepth 1 ! -name history.json -exec rm -rf {} + 2>/dev/null
}
if [ -n "$WD" ]; then
  via "history --out through a dir link" history "$W/wruns" --out "$W/pub/L"
  via "run --junit through a dir link" run "$W/w.toml" --out "$W/wruns" --junit "$W/pub/L/j.xml"
  via "run --run-dir through a dir link" run "$W/w.toml" --run-dir "$W/pub/L/r1"
  via "suite --out through a dir link" suite "$W/w.toml" --out "$W/pub/L"
  via "export --out through a dir link" export "$WD" --format openmetrics --out "$W/pub/L/m.txt"
  via "compare --out through a dir link" compare "$WD" "$WD" --out "$W/pub/L/c.html"
fi
# Files a scenario names: the built-in target's wal_path, the disk workload's path.
plant_link wal.log
head -c 8192 /dev/urandom > "$W/root-big"; chmod 600 "$W/root-big"; BIGSUM=$(md5sum < "$W/root-big")
rm -f "$W/pub/disk.dat"; setpriv --reuid "$ATTACKER" --regid "$ATTACKER" --clear-groups ln -s "$W/root-big" "$W/pub/disk.dat"
scenario "$W/wal.toml" $'kind = "builtin"\nwal = true\nwal_path = "'"$W"'/pub/wal.log"' "" 1s
RIG_STATE_DIR="$S" timeout 60 "$RIG" run "$W/wal.toml" --out "$W/wruns" > "$W/wr.out" 2>&1
[ "$(cat "$W/root-file")" = precious ] && note dir-links kept "wal_path a planted link" || note dir-links broken "wal_path a planted link"
echo precious > "$W/root-file"
cat > "$W/disk.toml" <<EOF2
name = "attack"
[target]
kind = "builtin"
[workloads.d]
kind = "disk"
path = "$W/pub/disk.dat"
mode = "write"
direct = false
file_size = "4KiB"
block_size = "4KiB"
rate = "10/s"
[[phases]]
name = "only"
duration = "1s"
EOF2
RIG_STATE_DIR="$S" timeout 60 "$RIG" run "$W/disk.toml" --out "$W/wruns" > "$W/wr.out" 2>&1
[ "$(md5sum < "$W/root-big")" = "$BIGSUM" ] && note dir-links kept "disk workload path a planted link" || note dir-links broken "disk workload path a planted link"

# 12. Inputs that are not files, or too large: each must end at once (exit 2), not block or grow.
mkdir -p "$W/in/fifo-run" "$W/in/fifo-rep" "$W/in/huge"
mkfifo "$W/in/fifo-run/report.json" "$W/in/fifo-rep/repeat.json" "$W/in/entry.toml"
printf 'name = "s"\n[[scenarios]]\nfile = "/dev/zero"\n' > "$W/in/zero.toml"
printf 'name = "s"\n[[scenarios]]\nfile = "entry.toml"\n' > "$W/in/fifo.toml"
echo '{' > "$W/in/huge/report.json"; truncate -s 300M "$W/in/huge/report.json"
{ echo 'name = "many"'; for _ in $(seq 100000); do printf '[[scenarios]]\nfile = "%s"\n' "$W/w.toml"; done; } > "$W/in/many.toml"
input() {  # name args...
  local name=$1; shift
  ( ulimit -v 4000000; timeout 30 "$RIG" "$@" > "$W/in.out" 2>&1 ); local code=$?
  [ "$code" = 2 ] && note input-dos kept "$name" || note input-dos broken "$name (exit $code)"
}
input "suite /dev/zero" suite /dev/zero --out "$W/in"
input "suite entry /dev/zero" suite "$W/in/zero.toml" --out "$W/in"
input "suite entry FIFO" suite "$W/in/fifo.toml" --out "$W/in"
input "report.json FIFO (report)" report "$W/in/fifo-run"
input "report.json FIFO (compare)" compare "$W/in/fifo-run" "$W/in/fifo-run" --out "$W/in/c.html"
input "repeat.json FIFO (compare)" compare "$W/in/fifo-rep" "$W/in/fifo-rep" --out "$W/in/c.html"
input "report.json of 300 MB" report "$W/in/huge"
input "100,000 suite entries" suite "$W/in/many.toml" --out "$W/in"
python3 -c "print('name = \"x\"\n[' + '.'.join(['a'] * 50000) + ']\nb = 1')" > "$W/in/deepkey.toml"
input "a dotted key of 50,000 parts" validate "$W/in/deepkey.toml"

# 13. A root child of the target that moves itself to the root cgroup of every hierarchy.
for how in end sigint sigkill; do
  rm -f "$W/esc.pid"
  scenario "$W/esc.toml" $'kind = "command"\nrun = ["/bin/sh", "-c", "(for m in $(awk \'$3 ~ /^cgroup/ {print $2}\' /proc/self/mounts); do echo 0 > $m/cgroup.procs; done; exec setsid sleep 300) & echo $! > '"$W"'/esc.pid; exec '"$RIG"' target --bind {host} --port {port}"]' "" "$([ $how = end ] && echo 1s || echo 30s)"
  if [ $how = end ]; then RIG_STATE_DIR="$S" "$RIG" run "$W/esc.toml" --out "$W/runs" > /dev/null 2>&1
  else
    run_until_last "$S" "$W/esc.toml" "$W/runs"
    kill -"$([ $how = sigint ] && echo INT || echo KILL)" "$RIGPID"; wait "$RIGPID" 2>/dev/null
    [ $how = sigkill ] && RIG_STATE_DIR="$S" "$RIG" cleanup > /dev/null 2>&1
  fi
  sleep 0.3; G=$(cat "$W/esc.pid" 2>/dev/null)
  running_pid "$G" && { STARTED+=("$G"); note cgroup-escape broken "child in the root cgroups, $how"; } || note cgroup-escape kept "child in the root cgroups, $how"
done

# 14. cpufreq through the kernel's links (cpuN/cpufreq -> ../cpufreq/policyN): the victim's CPU
#     cap must be written back by cleanup; a link elsewhere must be refused.
CF="$W/cpufreq-root"; mkdir -p "$CF/cpufreq/policy0" "$CF/cpu0" "$CF/cpu1" "$W/cf-decoy"
echo 2800000 > "$CF/cpufreq/policy0/scaling_max_freq"; echo 0 > "$CF/cpufreq/policy0/related_cpus"
ln -s ../cpufreq/policy0 "$CF/cpu0/cpufreq"; ln -s "$W/cf-decoy" "$CF/cpu1/cpufreq"; echo keep > "$W/cf-decoy/scaling_max_freq"
echo 1000000 > "$CF/cpufreq/policy0/scaling_max_freq"
plant_journal "$S" "$(dead_pid)" "restore $CF/cpu0/cpufreq/scaling_max_freq 2800000"
RIG_CPUFREQ_ROOT="$CF" RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
[ "$(cat "$CF/cpufreq/policy0/scaling_max_freq")" = 2800000 ] && note cpufreq-links kept "restore through the policy link" || note cpufreq-links broken "restore through the policy link"
rm -f "$S"/journal-*
plant_journal "$S" "$(dead_pid)" "restore $CF/cpu1/cpufreq/scaling_max_freq 1"
RIG_CPUFREQ_ROOT="$CF" RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
[ "$(cat "$W/cf-decoy/scaling_max_freq")" = keep ] && note cpufreq-links kept "a link out of the policies" || note cpufreq-links broken "a link out of the policies"
rm -f "$S"/journal-*

# 15. Numbers in journals: a 19-digit pid must refuse its record, and the cleanup go on.
sleep 300 > /dev/null 2>&1 & N=$!; STARTED+=("$N"); NS=$(start_of "$N")
plant_journal "$S" "$(dead_pid)" "process $N $NS" "process 9999999999999999999 1"
RIG_STATE_DIR="$S" "$RIG" cleanup > "$W/c.out" 2>&1
alive "$N" "$NS" && note journal-numbers broken "a 19-digit pid aborted the cleanup" || note journal-numbers kept "a 19-digit pid"
rm -f "$S"/journal-*

# 16. A squatted /tmp/rig-UID must not stop a user who has a home of their own.
VH="$W/vhome"; mkdir -m 700 "$VH"; chown "$VICTIM:$VICTIM" "$VH"
PD="/tmp/rig-$VICTIM"; rm -rf "$PD"; mkdir -m 777 "$PD"; chmod 777 "$PD"; chown "$ATTACKER:$ATTACKER" "$PD"
setpriv --reuid "$VICTIM" --regid "$VICTIM" --clear-groups env -u XDG_RUNTIME_DIR -u RIG_STATE_DIR -u XDG_STATE_HOME HOME="$VH" "$RIG" cleanup > "$W/c.out" 2>&1
[ $? = 0 ] && note state-dir-squat kept "victim with a home" || note state-dir-squat broken "victim with a home"
rm -rf "$PD"

# 17. Control characters from a report reach no terminal raw; the printed path after a swap is where the files are.
if [ -n "$WD" ]; then
  cp -r "$WD" "$W/esc-run"
  python3 - "$W/esc-run/report.json" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p)); r["scenario"]["name"] += "\x1b[2J\x1b]0;owned\x07"; r["phases"][0]["name"] += "\x1b[31m"
json.dump(r, open(p, "w"))
PY
  "$RIG" compare "$W/esc-run" "$W/esc-run" --out "$W/esc.html" > "$W/esc.out" 2>&1
  grep -q $'\x1b' "$W/esc.out" && note terminal-escape broken "names from report.json (compare)" || note terminal-escape kept "names from report.json (compare)"
  mkdir -p "$W/esc-hist"; cp -r "$WD" "$W/esc-hist/C"$'\x1b[2J\a'
  "$RIG" history "$W/esc-hist" --out "$W/esc-hist-out" > "$W/esc.out" 2>&1
  grep -q $'\x1b' "$W/esc.out" && note terminal-escape broken "a run directory's name (history)" || note terminal-escape kept "a run directory's name (history)"
fi
if [ -n "${RD:-}" ]; then
  grep -q "report: $RD.moved/report.json" "$W/swap.out" && note terminal-escape kept "printed path after a swap" || note terminal-escape broken "printed path after a swap"
fi

echo
printf '%-20s %6s %7s\n' "attack class" tried broken
total_t=0; total_b=0
for c in pid-reuse netns-reuse journal-pid-reuse tampered-journal planted-state-dir space-in-path sockets run-dir-swap \
         target-escape fd-leak writer-links dir-links input-dos cgroup-escape cpufreq-links journal-numbers \
         state-dir-squat terminal-escape; do
  printf '%-20s %6s %7s\n' "$c" "${tried[$c]:-0}" "${broken[$c]:-0}"
  total_t=$((total_t + ${tried[$c]:-0})); total_b=$((total_b + ${broken[$c]:-0}))
done
printf '%-20s %6s %7s\n' total "$total_t" "$total_b"
[ "$total_b" = 0 ]
