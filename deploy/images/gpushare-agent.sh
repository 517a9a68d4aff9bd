#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gpushare-agent: the node image's entry point (deploy/images/node.Containerfile), what the
# chart's agent DaemonSet runs on each GPU node (deploy/helm/gpushare).
#
# Usage: gpushare-agent toolkit DIR   puts into DIR (a host directory, /usr/local/gpushare/toolkit
#                                     by default, as NVIDIA's toolkit uses /usr/local/nvidia/toolkit)
#                                     what the container runtime needs of gpushare on the host:
#                                     libgpushare.so (the shim the CDI specs mount into a job) and
#                                     `gpushare` (the program the specs' OCI hooks run), a script
#                                     that runs bin/gpushare with the image's own loader and
#                                     libraries in DIR/lib, so that it runs whatever the host's
#                                     distribution. Replaced atomically (DIR.new, then renamed).
#        gpushare-agent run           gpushared in the foreground with /etc/gpushare/gpushare.conf
#                                     (the chart's ConfigMap) and GPUSHARE_* below; on SIGTERM it
#                                     stops gpushared (SIGTERM: leases stay in the state directory
#                                     and the next gpushared takes them over, as on a restart of
#                                     the .deb's unit) and, when no lease is held, tidies the node:
#                                     the toolkit directory, gpushared's socket and run-time
#                                     directory go (helm uninstall leaves nothing behind; an
#                                     upgrade with claims prepared keeps them).
# Environment: GPUSHARE_TOOLKIT_DIR (/usr/local/gpushare/toolkit), GPUSHARE_RUNTIME_DIR
#   (/run/gpushare), GPUSHARE_STATE_DIR (/var/lib/gpushare), GPUSHARE_METRICS_LISTEN (empty: no
#   metrics), GPUSHARE_LOG_LEVEL (gpushared's --log-level), GPUSHARE_CONFIG (/etc/gpushare/gpushare.conf), GPUSIM_DEVICES (gpusim's GPUs, when
#   the node has no NVIDIA driver and the configuration names gpusim's NVML).
# Exit: gpushared's status (0 after SIGTERM); 2 usage; 1 the toolkit could not be installed.
set -euo pipefail

toolkit=${GPUSHARE_TOOLKIT_DIR:-/usr/local/gpushare/toolkit}
runtime=${GPUSHARE_RUNTIME_DIR:-/run/gpushare}
state=${GPUSHARE_STATE_DIR:-/var/lib/gpushare}
config=${GPUSHARE_CONFIG:-/etc/gpushare/gpushare.conf}
shim=$(echo /usr/lib/*/gpushare/libgpushare.so)

log() { echo "gpushare-agent: $*" >&2; }

install_toolkit() {
  local dir=$1 new=$1.new lib
  rm -rf "$new"
  mkdir -p "$new/bin" "$new/lib"
  cp /usr/bin/gpushare "$new/bin/gpushare"
  cp "$shim" "$new/libgpushare.so"
  # bin/gpushare's libraries, its loader among them, from the image
  while read -r lib; do
    cp -L "$lib" "$new/lib/"
  done < <(ldd /usr/bin/gpushare | grep -oE '/[^ ]+' | sort -u)
  local loader
  loader=$(basename "$(ldd /usr/bin/gpushare | grep -oE '/[^ ]*ld-linux[^ ]*' | head -n 1)")
  cat >"$new/gpushare" <<EOF
#!/bin/sh
# gpushare as the CDI hooks run it on the host: the node image's program, loader and libraries
exec "$dir/lib/$loader" --library-path "$dir/lib" --argv0 gpushare "$dir/bin/gpushare" "\$@"
EOF
  chmod 0755 "$new/gpushare"
  echo "gpushare $(/usr/bin/gpushare --version 2>/dev/null | head -n 1)" >"$new/VERSION"
  "$new/lib/$loader" --library-path "$new/lib" "$new/bin/gpushare" --version >/dev/null ||
    { log "$new/bin/gpushare does not run with its loader and libraries"; return 1; }
  rm -rf "$dir.old"
  [[ -e $dir ]] && mv "$dir" "$dir.old"
  mv "$new" "$dir"
  rm -rf "$dir.old"
  "$dir/gpushare" --version >/dev/null || { log "$dir/gpushare does not run"; return 1; }
  log "installed the shim and gpushare in $dir"
}

# leases_held: 0 (held) unless gpushared, still running, answers that it holds no lease and has
# no request waiting (`gpushare leases --json`: one array of both); when it cannot tell, held
leases_held() {
  local out
  out=$(GPUSHARE_SOCKET=$runtime/gpushared.sock gpushare leases --json 2>/dev/null) || return 0
  [[ $(jq 'if type == "array" then length else -1 end' <<<"$out" 2>/dev/null) != 0 ]]
}

run() {
  mkdir -p "$runtime" "$state"
  local args=(--config "$config" --state-dir "$state")
  [[ -n ${GPUSHARE_METRICS_LISTEN:-} ]] && args+=(--metrics-listen "$GPUSHARE_METRICS_LISTEN")
  [[ -n ${GPUSHARE_LOG_LEVEL:-} ]] && args+=(--log-level "$GPUSHARE_LOG_LEVEL")
  gpushared --check-config --config "$config" >/dev/null
  gpushared "${args[@]}" &
  pid=$!
  tidy=0 stopping=0
  trap on_term TERM INT
  local rc=0
  wait "$pid" || rc=$?
  # wait returns (status > 128) when the trap ran: wait for gpushared's own end
  while kill -0 "$pid" 2>/dev/null; do rc=0; wait "$pid" || rc=$?; done
  if [[ $stopping == 1 && $tidy == 1 ]]; then
    # the run-time directory is the pod's mount of the host's: what is in it goes
    rm -rf "$toolkit" "$toolkit.new" "$toolkit.old"
    find "$runtime" -mindepth 1 -delete 2>/dev/null || true
    log "no lease was held: removed $toolkit and what $runtime held (the ledger in $state stays)"
  fi
  [[ $stopping == 1 ]] && return 0
  return "$rc"
}

on_term() {
  stopping=1
  if leases_held; then
    log "stopping gpushared; leases are held: they stay for the next gpushared, and so do $toolkit and $runtime"
  else
    tidy=1
    log "stopping gpushared; no lease is held"
  fi
  kill -TERM "$pid" 2>/dev/null || true
}

case ${1:-} in
  toolkit) [[ $# -eq 2 ]] || { sed -n '3,27p' "$0" >&2; exit 2; }; install_toolkit "$2" ;;
  run) run ;;
  *) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
