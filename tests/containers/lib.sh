# SPDX-License-Identifier: Apache-2.0
# Shared setup of the container tests (issue 21): gpushared on a fresh gpusim node (as
# tests/daemon/lib.sh), real rootful podman + crun, and an image of our own: a root file system
# with busybox, the C library and the test's programs (podman --rootfs: no registry, no image
# store). Containers get nothing but CDI devices: the lease's (gpushare.io/gpu=NAME) and gpusim's
# node (gpusim.gpushare.io/node=sim, which on a real node NVIDIA's spec replaces).
#
# Podman needs host set-up that this machine lacks, done here in a private mount namespace so
# that nothing outside the test sees it (the script re-executes itself under unshare -m):
#  - /run/cdi (podman 4.3 reads CDI specs from /etc/cdi and /var/run/cdi only) on a tmpfs: the
#    test's specs, and no other's;
#  - /sys/fs/cgroup/unified hidden under a tmpfs: on a cgroup v1 host with a v2 hierarchy mounted
#    there (hybrid), podman 4.3 takes the v2 one for its own and fails to create containers;
#  - lower nofile / nproc limits: crun refuses limits above what the kernel allows containers.
# Podman's own state (storage, run root, events) lives in the test's directory.
# Sanitizer builds skip these tests: the instrumented shim would need the ASan runtime preloaded
# before it in every container, which the CDI spec does not (and should not) do; the daemon's
# side of keyed leases runs under the sanitizers in tests/daemon/keyed.sh.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
ct_skip() { gs_skip "$@"; }

# A sanitizer build cannot run them (above): a skip even under GS_REQUIRE_ALL, said by the ASan
# stage of .ci/run, which lists its skips.
[[ -z ${GS_SANITIZE:-} ]] || { echo "skipped: sanitizer build (see tests/containers/lib.sh)"; exit 77; }
[[ $(id -u) == 0 ]] || ct_skip "rootful podman needs root"
command -v podman >/dev/null && command -v crun >/dev/null || ct_skip "podman and crun are not installed"
command -v busybox >/dev/null || ct_skip "busybox (busybox-static) is not installed"
if [[ -z ${GS_CT_PRIVATE:-} ]]; then
  GS_CT_PRIVATE=1 exec unshare -m --propagation private bash "$0" "$@"
fi

source "$(dirname "${BASH_SOURCE[0]}")/../daemon/lib.sh"

mkdir -p /run/cdi
mount -t tmpfs -o mode=0755 gs-cdi /run/cdi
if [[ -d /sys/fs/cgroup/unified ]]; then
  mount -t tmpfs -o mode=0755 gs-nounified /sys/fs/cgroup/unified
fi
ulimit -n 4096
ulimit -u 4096

CDI=/run/cdi
ROOTFS=$WORK/rootfs
PODMAN=(podman --root "$WORK/podman/storage" --runroot "$WORK/podman/run" --tmpdir "$WORK/podman/tmp"
  --cgroup-manager cgroupfs --events-backend file)
SIM=(--device gpusim.gpushare.io/node=sim)

ct_cleanup() {
  local rc=$?
  # Under errexit, the (exit $rc) that hands the status to cleanup would end the script here
  # (the EXIT trap runs once) and leave gpushared and the test's directory behind.
  set +e
  "${PODMAN[@]}" rm -f -a -t 0 >/dev/null 2>&1
  # /run/cdi was made for the tmpfs above: it goes when no other test's namespace has it mounted
  # and nothing else is in it (rmdir refuses a mount point, or a directory with specs).
  umount /run/cdi 2>/dev/null && rmdir /run/cdi 2>/dev/null
  (exit $rc)
  cleanup
}
trap ct_cleanup EXIT

# copy_with_libs FILE...: copies each program into the image at the same path, with the shared
# libraries it needs (as ldd finds them on the host).
copy_with_libs() {
  local f lib
  for f in "$@"; do
    mkdir -p "$ROOTFS$(dirname "$f")"
    cp "$f" "$ROOTFS$f"
    for lib in $(ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'); do
      [[ -e $ROOTFS$lib ]] && continue
      mkdir -p "$ROOTFS$(dirname "$lib")"
      cp "$(readlink -f "$lib")" "$ROOTFS$lib"
    done
  done
}

# make_image: the root file system the containers run (busybox and the test programs).
make_image() {
  mkdir -p "$ROOTFS"/{bin,dev,proc,sys,tmp,etc,run}
  cp "$(command -v busybox)" "$ROOTFS/bin/busybox"
  local applet
  for applet in sh env sleep cat ls kill; do ln -s busybox "$ROOTFS/bin/$applet"; done
  # (busybox-static needs no libraries; the others bring theirs.)
  copy_with_libs "$@"
}

# start_node: gpushared, then gpusim's node spec for containers.
start_node() {
  start_daemon "$@"
  gs cdi gpusim sim --sim "$GS_BUILD_DIR/sim" --state "$GPUSIM_STATE" --dir "$CDI" >/dev/null
}

# ct ARGS...: podman with the test's own state.
ct() {
  "${PODMAN[@]}" "$@"
}

# ct_pid NAME: the host pid of the container's first process.
ct_pid() {
  ct inspect --format '{{.State.Pid}}' "$1"
}

# ct_pidns NAME: the inode of the container's PID namespace.
ct_pidns() {
  stat -L -c %i "/proc/$(ct_pid "$1")/ns/pid"
}

# lease_of_key KEY: the id of the lease with that key ("" when none).
lease_of_key() {
  gs leases --json | jq -r --arg k "$1" '.[] | select(.key == $k) | .id'
}

now_ms() {
  echo $(($(date +%s%N) / 1000000))
}
