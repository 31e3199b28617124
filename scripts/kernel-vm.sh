#!/usr/bin/env bash
# Boots the Debian kernel (linux-image-amd64) under qemu-system-x86_64 -accel tcg with a
# small initramfs: busybox, rig and its shared libraries, and the kernel's own veth,
# sch_tbf and sch_netem modules; cgroup2 is mounted with all its controllers. Inside, rig
# runs each scenario in turn in the one boot; for each, its console output and report.json
# (between "=== rig-vm report NAME begin/end ===", NAME the file's name without .toml) and
# "rig-vm: NAME: rig exited N" come out on stdout.
# The VM has no network device: its traffic stays inside the namespaces rig makes.
#
#   scripts/kernel-vm.sh BUILD/rig [kill:]SCENARIO.toml...
#
# kill:SCENARIO: rig is killed with SIGKILL once its first injection is verified, and
# `rig cleanup` runs; the journal it left, cleanup's output and what is left of rig on the
# host (cgroup directories, the v2 subtree controllers before and after, processes) come
# out between "=== rig-vm kill NAME begin/end ===" instead of a report. Put it last: what a
# killed rig leaves is what it examines.
# RIG_VM_KERNEL: the kernel image (default: the newest /boot/vmlinuz-*).
#
# Needs: qemu-system-x86 linux-image-amd64 busybox-static cpio
#        (scripts/install-deps.sh --kernel-tests installs them).
set -euo pipefail

rig=${1:?usage: kernel-vm.sh RIG [kill:]SCENARIO...}
shift
[ $# -gt 0 ] || { echo "usage: kernel-vm.sh RIG [kill:]SCENARIO..." >&2; exit 2; }
kernel=${RIG_VM_KERNEL:-$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)}
[ -n "$kernel" ] && [ -r "$kernel" ] || { echo "kernel-vm: no kernel image in /boot (apt-get install linux-image-amd64)" >&2; exit 3; }
kver=${kernel##*/vmlinuz-}
moddir=/lib/modules/$kver
[ -d "$moddir" ] || { echo "kernel-vm: no modules for $kver in $moddir" >&2; exit 3; }
command -v qemu-system-x86_64 >/dev/null || { echo "kernel-vm: qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 3; }
busybox=/bin/busybox  # busybox-static's; the dynamic busybox would also find its libc in the image
[ -x "$busybox" ] || busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "kernel-vm: busybox missing (apt-get install busybox-static)" >&2; exit 3; }

work=$(mktemp -d /tmp/rig-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp,run,etc,modules}

cp "$busybox" "$root/bin/busybox"
for applet in sh mount mkdir cat insmod poweroff echo ls uname sleep ip grep kill ps; do ln -s busybox "$root/bin/$applet"; done
cp "$rig" "$root/bin/rig"
# rig's shared libraries at the paths the dynamic linker will look for them.
ldd "$rig" | awk '/=>/ && $3 ~ /^\// {print $3} /^\t\/.*ld-linux/ {print $1}' | while read -r lib; do
  cp -L --parents "$lib" "$root/"
done
[ -f /etc/os-release ] && cp -L /etc/os-release "$root/etc/os-release"

# The modules and what they depend on, in load order (dependencies first).
declare -A seen=()
order=()
add_module() {
  local name=$1 path deps d
  [ -n "${seen[$name]:-}" ] && return
  seen[$name]=1
  path=$(modinfo -k "$kver" -n "$name" 2>/dev/null) || { echo "kernel-vm: module $name not found for $kver" >&2; exit 3; }
  [ "$path" = "(builtin)" ] && return
  deps=$(modinfo -k "$kver" -F depends "$name" | tr ',' ' ')
  for d in $deps; do add_module "$d"; done
  case "$path" in
    *.ko.xz) xz -dc "$path" > "$root/modules/$name.ko" ;;
    *.ko.zst) zstd -qdc "$path" > "$root/modules/$name.ko" ;;
    *) cp "$path" "$root/modules/$name.ko" ;;
  esac
  order+=("$name")
}
for m in veth sch_tbf sch_netem; do add_module "$m"; done

{
  echo '#!/bin/sh'
  echo 'mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp'
  # cgroup v2 with every controller, as on most users' machines (this host has v1).
  echo 'mount -t cgroup2 cgroup2 /sys/fs/cgroup'
  echo 'ip link set lo up'  # loopback, for scenarios that run without namespaces
  for m in "${order[@]}"; do echo "insmod /modules/$m.ko"; done
  echo 'echo "rig-vm: kernel $(uname -r), modules loaded"'
  i=0
  for arg in "$@"; do
    i=$((i + 1))
    file=${arg#kill:}
    name=$(basename "$file" .toml)
    [ -r "$file" ] || { echo "kernel-vm: cannot read $file" >&2; exit 2; }
    cp "$file" "$root/scenario-$i.toml"
    if [ "$arg" != "$file" ]; then sed -e "s/@N@/$i/g" -e "s/@NAME@/$name/g" <<'INIT'
echo "=== rig-vm kill @NAME@ begin ==="
echo "subtree before: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
/bin/rig run /scenario-@N@.toml --out /tmp/runs-@N@ > /tmp/out-@N@.txt 2>&1 &
rig=$!
i=0
while ! grep -q "✓" /tmp/out-@N@.txt && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
sleep 0.5
kill -9 $rig
sleep 0.5
echo "journal left:"
cat /run/rig/journal-*.log
/bin/rig cleanup
echo "cleanup exited $?"
echo "subtree after: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
ls -d /sys/fs/cgroup/rig 2>/dev/null && echo "rig cgroup left" || echo "no rig cgroup"
ls /run/rig 2>/dev/null && echo "state left" || echo "no state left"
ps -o pid,args | grep "rig target" | grep -v grep || echo "no rig process"
echo "=== rig-vm kill @NAME@ end ==="
echo "rig-vm: @NAME@: rig exited 0"
INIT
    else sed -e "s/@N@/$i/g" -e "s/@NAME@/$name/g" <<'INIT'
/bin/rig run /scenario-@N@.toml --out /tmp/runs-@N@ > /tmp/out-@N@.txt 2>&1
rc=$?
cat /tmp/out-@N@.txt
echo "=== rig-vm report @NAME@ begin ==="
cat /tmp/runs-@N@/*/report.json
echo
echo "=== rig-vm report @NAME@ end ==="
echo "rig-vm: @NAME@: rig exited $rc"
INIT
    fi
  done
  echo 'poweroff -f'
} > "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initrd.cpio"

# One vCPU: under TCG a second one makes every wake-up an emulated IPI (about +1 ms per
# netem release), which would blur the delay being measured.
exec_timeout=${RIG_VM_TIMEOUT:-300}
timeout --foreground -k 5 "$exec_timeout" qemu-system-x86_64 -accel tcg${RIG_VM_QEMU_ARGS:+ $RIG_VM_QEMU_ARGS} -m 768 -smp ${RIG_VM_CPUS:-1} \
  -kernel "$kernel" -initrd "$work/initrd.cpio" \
  -append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3" \
  -display none -serial stdio -monitor none -nic none -no-reboot </dev/null
