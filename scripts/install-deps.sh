#!/usr/bin/env bash
# Installs what rig needs to build and test on Debian 12. Apt packages only; idempotent;
# silent when everything is already present.
#   --kernel-tests  also what tests/kernel needs to boot the Debian kernel (which has
#                   sch_netem) under qemu: qemu-system-x86, linux-image-amd64, busybox-static
#   --bench         also the peers bench/ compares rig with: wrk, sockperf, fio
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  ccache                    # a rebuild of sources already compiled (another clone, a sanitized tree) from its cache
  libboost-dev              # Boost.Asio (header-only)
  libnl-3-dev libnl-route-3-dev
  liburing-dev
  libtomlplusplus-dev
  doctest-dev
  libcli11-dev
  nlohmann-json3-dev
  libfmt-dev
  redis-server              # a real server for the raw-protocol tests (not started as a service)
  iproute2                  # tc's netem distribution tables, compared with rig's own in the tests
  nginx-light               # a real HTTP server for the http workload's tests (never started as a service)
  postgresql-15             # a server that forks a backend per connection, for the shim's tests (the tests
                            # start their own in a temp directory; Debian's package makes its default cluster)
  chromium fonts-dejavu-core  # headless, opens report.html in its test (no network: names resolve to nothing)
  zlib1g-dev                # HdrHistogram's compressed encoding; the HTML test reads Chromium's PNG screenshot
  python3-jsonschema        # validates scenarios/ against `rig schema` (with python3's tomllib)
  clang libclang-rt-14-dev  # make fuzz: libFuzzer and clang's ASan/UBSan runtimes
  numactl                   # one of the wrappers the preload shim is tested through (env, taskset, nice, numactl, sh)
  default-jre-headless libhdrhistogram-java  # HdrHistogram's own decoder and HistogramLogProcessor read what rig exports
  python3-prometheus-client  # its OpenMetrics parser reads `rig export --format openmetrics`
)
for arg in "$@"; do
  case "$arg" in
    --kernel-tests) packages+=(qemu-system-x86 linux-image-amd64 busybox-static cpio kmod) ;;
    --bench) packages+=(wrk sockperf fio) ;;
    *) echo "install-deps: unknown option $arg (known: --kernel-tests, --bench)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: missing packages: ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Packages such as nginx start their service on install; the tests start their own on a
# free port. Where the host has no service policy, one that forbids starts is in place for
# the install and removed after it; a policy the host already has is left as it is.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# rig install-deps: no service starts during this install\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
# openjdk's postinst links its man page into /usr/share/man/man1, which slim Debian images
# leave out: the install fails there unless the directory exists.
$SUDO mkdir -p /usr/share/man/man1
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
