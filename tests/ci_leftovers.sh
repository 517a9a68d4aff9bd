#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# .ci/leftovers (issue 37, acceptance 3): on a tree of its own (GS_LEFTOVERS_ROOT), a snapshot
# then a check with nothing new passes; each kind of path gpushare's suite or packages may leave
# in /tmp, /dev/shm, /run, /etc and /var, put there after the snapshot, makes the check fail and
# is named; a path of another kind is not.
set -euo pipefail
script=$GS_SOURCE_DIR/.ci/leftovers
root=$(mktemp -d /tmp/gs-ci-leftovers.XXXXXX)
trap 'rm -rf "$root"' EXIT
export GS_LEFTOVERS_ROOT=$root
mkdir -p "$root"/{tmp,dev/shm,run,etc/systemd/system,var/tmp,var/lib,var/log,var/cache,var/spool}
touch "$root/tmp/unrelated" "$root/etc/hostname"
"$script" snapshot "$root/before"
out=$("$script" check "$root/before") || { echo "FAIL: a check with nothing new: $out"; exit 1; }

leftovers=(
  tmp/gs-daemon-test.AbCdEf
  tmp/gsim-smi-AbCdEf
  tmp/gpushare-pkg.AbCdEf
  dev/shm/gpusim-node
  var/tmp/gs-k8s-real.AbCdEf
  run/gpushare/gpus/gpusim.pid
  run/cdi/gpushare.io_gpu-a.json
  etc/gpushare/gpushare.conf
  etc/cdi/gpusim.gpushare.io_node-sim.json
  etc/systemd/system/gpushared.service.d/gpusim.conf
  var/lib/gpushare/state.db
  var/log/gpushared.log
  var/spool/gpushare-slurm
)
for path in "${leftovers[@]}"; do
  mkdir -p "$(dirname "$root/$path")"
  touch "$root/$path"
done
touch "$root/tmp/other-tool.tmp" "$root/etc/other.conf"
set +e
out=$("$script" check "$root/before" 2>&1)
rc=$?
set -e
[[ $rc == 1 ]] || { echo "FAIL: the check's exit status with leftovers: $rc ($out)"; exit 1; }
failures=0
for path in "${leftovers[@]}"; do
  # The path itself, or the directory of gpushare's kind it is in.
  dir=$path
  until grep -qxF "  $root/$dir" <<<"$out" || [[ $dir != */* ]]; do dir=${dir%/*}; done
  grep -qxF "  $root/$dir" <<<"$out" || { echo "FAIL: $path is not named: $out"; failures=$((failures + 1)); }
done
for other in tmp/other-tool.tmp etc/other.conf; do
  grep -qF "$root/$other" <<<"$out" && { echo "FAIL: $other is named: $out"; failures=$((failures + 1)); }
done
((failures == 0)) || exit 1
echo "ok: .ci/leftovers names each of ${#leftovers[@]} kinds of leftover in /tmp, /dev/shm, /run, /etc and /var, and nothing else"
