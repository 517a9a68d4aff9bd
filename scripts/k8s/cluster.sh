#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A single-node Kubernetes of the real components (issue 35), started and stopped the way
# hack/local-up-cluster.sh does it, for the k8s-real tests: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd (CRI, CDI on) with runc, and the kubelet,
# built by scripts/k8s/build.sh. Root only.
#
# Usage: scripts/k8s/cluster.sh start DIR     starts the cluster with everything in DIR; returns
#                                             when the node is Ready (exit 1 with the logs' tails
#                                             otherwise, the cluster stopped)
#        scripts/k8s/cluster.sh stop DIR      stops every process by its PID, removes the cgroups;
#                                             DIR itself stays (the logs); idempotent
#        scripts/k8s/cluster.sh status DIR    each component running or not, the node; exit 0
#                                             when all run
#        scripts/k8s/cluster.sh exec DIR CMD...   runs CMD in the cluster's namespaces, with
#                                             KUBECONFIG (admin), CONTAINERD_ADDRESS and PATH
#                                             (kubectl, ctr, etcdctl) set
#        scripts/k8s/cluster.sh kubectl DIR ARGS...   exec DIR kubectl ARGS...
#        scripts/k8s/cluster.sh restart DIR COMPONENT   stops COMPONENT (SIGTERM, its PID) and
#                                             starts it again with the command line it was
#                                             started with (DIR/cmds/COMPONENT); the kubelet:
#                                             returns when the node is Ready again
#        scripts/k8s/cluster.sh import DIR IMAGE.tar   ctr -n k8s.io images import
#        scripts/k8s/cluster.sh image DIR NAME:TAG OUT.tar SRC=DST...   builds an image archive
#                                             (scripts/k8s/oci-image.py) and imports it
#
# Isolation: every process runs in a private mount namespace and a private network namespace
# held by one process (DIR/pids/ns): the host's mounts, /run, /var/lib/kubelet, network
# interfaces, iptables and ports are untouched, and two clusters never collide. In it: a /run of
# its own (the host's entries bound back, except containerd's, netns and cdi), the sysctls the
# kubelet insists on (kernel.panic=10, vm.overcommit_memory=1, ...) as files bound over
# /proc/sys (the host's values stay), loopback and a veth pair gs0/gs1 (gs0: 192.168.254.1, the
# node's address and default route); ports chosen at run time. Pods: CNI bridge (Debian's
# containernetworking-plugins, /usr/lib/cni) gsbr0 in that namespace, 10.88.0.0/24; no
# kube-proxy (Services' cluster IPs do not route). Cgroups (v1 or v2, cgroupfs driver): the
# kubelet's cgroupRoot is /gs-k8s-<id>, created and removed here.
#
# Inputs (environment): K8S_VERSION (1.37, 1.36 or full), CONTAINERD_VERSION, ETCD_VERSION,
#   GS_CACHE_DIR (as scripts/k8s/build.sh; start fails when they are not built);
#   GS_K8S_FEATURE_GATES (k=v,... added to every component's gates); GS_K8S_SCHEDULER_CONFIG
#   (a KubeSchedulerConfiguration file: __KUBECONFIG__ in it is replaced by the scheduler's
#   kubeconfig); GS_K8S_RUNTIME (the OCI runtime binary, default runc);
#   GS_K8S_NODE (node name, default gs-node); GS_K8S_READY_TIMEOUT (s, default 240).
# Outputs in DIR: env (K8S_* variables: ports, the kubeconfig, the binaries), kubeconfig
#   (admin), certs/, logs/<component>.log, pids/<component>, kubelet/ (root dir, plugin
#   registry kubelet/plugins_registry, plugins kubelet/plugins), cdi/ (CDI spec dir),
#   containerd/, etcd/, pod-logs/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || { sed -n '3,47p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
shift 2
components_all=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet)
stop_order=(kubelet kube-scheduler kube-controller-manager)
node_ip=192.168.254.1

die() { echo "cluster.sh: $*" >&2; exit 1; }

# pid_ok NAME: the process recorded as NAME runs and is in the cluster's mount namespace (a
# reused PID is never taken for it)
pid_ok() {
  local p
  p=$(cat "$dir/pids/$1" 2>/dev/null) || return 1
  [[ -n $p && -d /proc/$p ]] || return 1
  [[ $(readlink "/proc/$p/ns/mnt" 2>/dev/null) == "$(cat "$dir/pids/ns.mnt" 2>/dev/null)" ]]
}

in_ns() { # in_ns CMD...: CMD in the cluster's namespaces (exec, same PID)
  nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$@"
}

load_env() {
  [[ -f $dir/env ]] || die "$dir/env: no cluster here"
  # shellcheck disable=SC1091
  source "$dir/env"
}

case $cmd in
  exec | kubectl | import | image | status | restart)
    load_env
    pid_ok ns || die "the cluster in $dir is not running"
    ;;
esac

exec_env() {
  env KUBECONFIG="$dir/kubeconfig" CONTAINERD_ADDRESS="$dir/run/containerd.sock" \
    CONTAINERD_NAMESPACE=k8s.io PATH="$K8S_BIN:$CONTAINERD_BIN:$ETCD_BIN:$PATH" "$@"
}

case $cmd in
  exec) exec_env nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$@"; exit ;;
  kubectl) exec_env nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$K8S_BIN/kubectl" "$@"; exit ;;
  import)
    exec_env nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$CONTAINERD_BIN/ctr" \
      -a "$dir/run/containerd.sock" -n k8s.io images import --no-unpack=false "$1"
    exit ;;
  image)
    name=$1 out=$2; shift 2
    python3 "$here/oci-image.py" "$out" "$name" "$@" >/dev/null
    exec_env nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$CONTAINERD_BIN/ctr" \
      -a "$dir/run/containerd.sock" -n k8s.io images import "$out" >/dev/null 2>"$dir/logs/import.log" ||
      { cat "$dir/logs/import.log" >&2; exit 1; }
    echo "$name"
    exit ;;
  status)
    rc=0
    for c in "${components_all[@]}"; do
      if pid_ok "$c"; then echo "$c: running (pid $(cat "$dir/pids/$c"))"; else echo "$c: not running"; rc=1; fi
    done
    exec_env nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$K8S_BIN/kubectl" get nodes -o wide 2>&1 || rc=1
    exit $rc ;;
esac

# ---------------------------------------------------------------------------------------------
# stop
# cg_dirs: the cluster's cgroup directories (each hierarchy's /gs-k8s-<id>)
cg_dirs() {
  local id
  id=$(cat "$dir/pids/cgroup" 2>/dev/null) || return 0
  [[ -n $id ]] || return 0
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    [[ -d /sys/fs/cgroup/$id ]] && echo "/sys/fs/cgroup/$id"
  else
    local h
    for h in /sys/fs/cgroup/*/; do [[ -d $h$id ]] && echo "$h$id"; done
  fi
  return 0
}
cg_procs() { # every PID in the cluster's cgroups
  local d
  for d in $(cg_dirs); do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -un
}
ns_procs() { # every PID in the cluster's mount namespace (the components, the shims)
  local mnt p
  mnt=$(cat "$dir/pids/ns.mnt" 2>/dev/null) || return 0
  [[ -n $mnt ]] || return 0
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$mnt" ]] && echo "${p#/proc/}"
  done
  return 0
}
stop_pid() { # stop_pid NAME [SECONDS]: SIGTERM, then SIGKILL after SECONDS (default 10)
  local p n=0 max=$(( ${2:-10} * 10 ))
  pid_ok "$1" || return 0
  p=$(cat "$dir/pids/$1")
  kill -TERM "$p" 2>/dev/null || true
  while pid_ok "$1" && (( n < max )); do sleep 0.1; n=$((n + 1)); done
  if pid_ok "$1"; then
    echo "cluster.sh: $1 (pid $p) did not stop on SIGTERM in ${2:-10} s: SIGKILL" >&2
    kill -KILL "$p" 2>/dev/null || true
    while [[ -d /proc/$p ]] && (( n < max + 50 )); do sleep 0.1; n=$((n + 1)); done
  fi
}
kill_list() { # SIGKILL each PID read from stdin, wait for them
  local p ps=() n=0
  while read -r p; do [[ -n $p && $p != "$$" ]] && ps+=("$p"); done
  [[ ${#ps[@]} -gt 0 ]] || return 0
  kill -KILL "${ps[@]}" 2>/dev/null || true
  for p in "${ps[@]}"; do
    while [[ -d /proc/$p ]] && (( n < 100 )); do sleep 0.1; n=$((n + 1)); done
  done
}

stop_cluster() {
  [[ -d $dir/pids ]] || return 0
  local c d
  for c in "${stop_order[@]}"; do stop_pid "$c" 10; done
  # the pods' processes (their own namespaces, in the kubelet's cgroups), then containerd, the
  # shims and whatever else runs in the cluster's namespace, then the control plane, the holder
  { cg_procs | kill_list; } || true
  stop_pid containerd 10
  for c in kube-apiserver etcd; do stop_pid "$c" 15; done
  { ns_procs | grep -vx "$(cat "$dir/pids/ns" 2>/dev/null || echo none)" | kill_list; } || true
  { cg_procs | kill_list; } || true
  stop_pid ns 5
  { ns_procs | kill_list; } || true
  for d in $(cg_dirs); do
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ -d $d ]] && echo "cluster.sh: cgroup $d is left (busy)" >&2
  done
  rm -f "$dir"/pids/*
  return 0
}

if [[ $cmd == restart ]]; then
  c=${1:-}
  [[ -n $c && -f $dir/cmds/$c ]] || die "restart: no component '$c' started here (one of: $(cd "$dir/cmds" && printf "%s " *))"
  stop_pid "$c" 10
  echo "--- cluster.sh restart $c at $(date -u +%FT%TZ)" >>"$dir/logs/$c.log"
  eval "args=($(cat "$dir/cmds/$c"))"
  # shellcheck disable=SC2154 # (args: set by the eval)
  setsid nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "${args[@]}" >>"$dir/logs/$c.log" 2>&1 </dev/null &
  echo $! >"$dir/pids/$c"
  if [[ $c == kubelet ]]; then
    n=0
    # the node's Ready condition is the last one the kubelet posted: wait for a new heartbeat too
    sleep 2
    until [[ $(exec_env nsenter -t "$(cat "$dir/pids/ns")" -m -n -- "$K8S_BIN/kubectl" get node "$K8S_NODE" \
      -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]; do
      pid_ok kubelet || { tail -n 25 "$dir/logs/kubelet.log" >&2; die "the kubelet exited after its restart"; }
      n=$((n + 1))
      (( n < 120 )) || die "the node $K8S_NODE is not Ready 120 s after the kubelet's restart"
      sleep 1
    done
  fi
  echo "cluster.sh: $c restarted (pid $(cat "$dir/pids/$c"))"
  exit 0
fi

if [[ $cmd == stop ]]; then
  [[ -d $dir ]] || exit 0
  stop_cluster
  exit 0
fi
[[ $cmd == start ]] || die "unknown command: $cmd"

# ---------------------------------------------------------------------------------------------
# start
[[ $(id -u) -eq 0 ]] || die "needs root (mount and network namespaces, cgroups, the kubelet)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[[ -f $dir/pids/ns ]] && pid_ok ns && die "a cluster already runs in $dir (cluster.sh stop $dir)"
for t in unshare nsenter ip openssl python3 curl cc; do
  command -v "$t" >/dev/null || die "$t is missing (scripts/deps.sh)"
done
# runc: Debian 12's crun (1.8.1) refuses the spec containerd 2.4 writes ("OCI runtime create
# failed: unknown version specified")
runtime=${GS_K8S_RUNTIME:-$(command -v runc || true)}
[[ -x $runtime ]] || die "no OCI runtime: install runc (scripts/deps.sh)"
cni_bin=/usr/lib/cni
[[ -x $cni_bin/bridge && -x $cni_bin/host-local && -x $cni_bin/loopback ]] ||
  die "$cni_bin: the CNI plugins are missing (apt-get install containernetworking-plugins)"

envs=$("$here/build.sh" --env --offline kubernetes containerd etcd) ||
  die "the components are not built: scripts/k8s/build.sh (K8S_VERSION=${K8S_VERSION:-1.37})"
eval "$envs"
node=${GS_K8S_NODE:-gs-node}
gates=${GS_K8S_FEATURE_GATES:-}
timeout_ready=${GS_K8S_READY_TIMEOUT:-240}

mkdir -p "$dir"/{certs,logs,pids,run,ns/sysctl,kubelet,cdi,cni/net.d,cni/ipam,containerd/root,containerd/state,etcd,pod-logs,images,bin}
chmod 700 "$dir/certs" "$dir/etcd"
# a start that fails stops what it started (the logs stay in DIR)
trap 'rc=$?; if [[ $rc -ne 0 ]]; then echo "cluster.sh: start failed; stopping what started (logs in $dir/logs)" >&2; stop_cluster; fi' EXIT

# ---- certificates and keys (the way local-up-cluster.sh makes them, with openssl) ----
certs=$dir/certs
openssl req -x509 -new -noenc -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 30 \
  -subj "/CN=gpushare-k8s-real-ca" -keyout "$certs/ca.key" -out "$certs/ca.crt" 2>/dev/null
cert() { # cert NAME SUBJECT [SAN]
  local ext=$certs/$1.ext
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [[ -n ${3:-} ]] && echo "subjectAltName=$3"
  } >"$ext"
  openssl req -new -noenc -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "$2" \
    -keyout "$certs/$1.key" -out "$certs/$1.csr" 2>/dev/null
  openssl x509 -req -in "$certs/$1.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" \
    -set_serial "0x$(openssl rand -hex 12)" -days 30 -extfile "$ext" -out "$certs/$1.crt" 2>/dev/null
  rm -f "$certs/$1.csr" "$ext"
}
cert apiserver "/CN=kube-apiserver" \
  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$node_ip,IP:10.0.0.1"
cert admin "/O=system:masters/CN=admin"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kubelet "/O=system:nodes/CN=system:node:$node"
cert kubelet-serving "/O=system:nodes/CN=system:node:$node" "DNS:$node,DNS:localhost,IP:127.0.0.1,IP:$node_ip"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$certs/sa.key" 2>/dev/null
openssl pkey -in "$certs/sa.key" -pubout -out "$certs/sa.pub" 2>/dev/null

# ---- the namespaces: one holder process; everything else enters it ----
cgid=gs-k8s-$(basename "$dir" | tr -c 'a-zA-Z0-9\n' '-' | cut -c1-24)-$$
cat >"$dir/ns/init.sh" <<EOF
set -e
mount --make-rprivate /
ip link set lo up
# the node's address and default route: one end of a veth pair (this kernel has no dummy links)
ip link add gs0 type veth peer name gs1
ip addr add $node_ip/24 dev gs0
ip link set gs1 up
ip link set gs0 up
ip route add default dev gs0
# /run of the cluster's own: the host's entries bound back, except what the cluster's
# containerd, CNI and CDI use
mkdir -p "$dir/ns/hostrun"
mount --rbind /run "$dir/ns/hostrun"
mount -t tmpfs -o mode=755 gs-run /run
for e in "$dir/ns/hostrun"/* "$dir/ns/hostrun"/.[!.]*; do
  [ -e "\$e" ] || [ -L "\$e" ] || continue
  n=\$(basename "\$e")
  case \$n in containerd | netns | cdi | nri | crun | runc) continue ;; esac
  if [ -L "\$e" ]; then cp -P "\$e" /run/
  elif [ -d "\$e" ]; then mkdir -p "/run/\$n"; mount --rbind "\$e" "/run/\$n"
  else touch "/run/\$n"; mount --bind "\$e" "/run/\$n"; fi
done
# the kernel settings the kubelet sets (or, protectKernelDefaults, demands): the values it
# wants, read from the cluster's own files; the host's stay
for kv in kernel/panic=10 kernel/panic_on_oops=1 vm/overcommit_memory=1 vm/panic_on_oom=0 \\
          kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
  k=\${kv%%=*}; v=\${kv#*=}
  [ "\$(cat /proc/sys/\$k)" = "\$v" ] && continue
  f="$dir/ns/sysctl/\$(echo \$k | tr / _)"
  echo "\$v" >"\$f"
  mount --bind "\$f" "/proc/sys/\$k"
done
touch "$dir/ns/ready"
exec sleep infinity
EOF
rm -f "$dir/ns/ready"
setsid unshare -m -n --propagation private -- sh "$dir/ns/init.sh" >"$dir/logs/ns.log" 2>&1 </dev/null &
hold=$!
echo "$hold" >"$dir/pids/ns"
for _ in $(seq 100); do [[ -f $dir/ns/ready ]] && break; [[ -d /proc/$hold ]] || break; sleep 0.1; done
[[ -f $dir/ns/ready ]] || { cat "$dir/logs/ns.log" >&2; die "the namespace did not start"; }
readlink "/proc/$hold/ns/mnt" >"$dir/pids/ns.mnt"
readlink "/proc/$hold/ns/net" >"$dir/pids/ns.net"

# the kubelet's cgroup root, in every hierarchy (cpuset's cpus and mems copied from the root)
echo "$cgid" >"$dir/pids/cgroup"
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  mkdir -p "/sys/fs/cgroup/$cgid"
else
  for h in /sys/fs/cgroup/*/; do
    [[ -L ${h%/} ]] && continue
    [[ -f ${h}cgroup.procs ]] || continue
    mkdir -p "$h$cgid"
    if [[ -f $h/cpuset.cpus ]]; then
      cat "${h}cpuset.cpus" >"$h$cgid/cpuset.cpus"
      cat "${h}cpuset.mems" >"$h$cgid/cpuset.mems"
    fi
  done
fi

# free ports on the namespace's loopback
ports=$(in_ns python3 -c '
import socket
ss = [socket.socket() for _ in range(9)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r p_etcd p_peer p_api p_cm p_sched p_kubelet p_healthz p_etcdm _ <<<"$ports"

kubeconfig() { # kubeconfig FILE CERTNAME
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gs
  cluster: {server: "https://127.0.0.1:$p_api", certificate-authority: "$certs/ca.crt"}
users:
- name: $2
  user: {client-certificate: "$certs/$2.crt", client-key: "$certs/$2.key"}
contexts:
- name: gs
  context: {cluster: gs, user: $2}
current-context: gs
EOF
}
kubeconfig "$dir/kubeconfig" admin
kubeconfig "$dir/controller-manager.kubeconfig" controller-manager
kubeconfig "$dir/scheduler.kubeconfig" scheduler
kubeconfig "$dir/kubelet.kubeconfig" kubelet

cat >"$dir/env" <<EOF
K8S_DIR=$dir
K8S_BIN=$K8S_BIN
K8S_VERSION_FULL=$K8S_VERSION_FULL
CONTAINERD_BIN=$CONTAINERD_BIN
CONTAINERD_VERSION_FULL=$CONTAINERD_VERSION_FULL
ETCD_BIN=$ETCD_BIN
ETCD_VERSION_FULL=$ETCD_VERSION_FULL
K8S_NODE=$node
K8S_NODE_IP=$node_ip
K8S_API_PORT=$p_api
K8S_ETCD_PORT=$p_etcd
K8S_KUBELET_PORT=$p_kubelet
K8S_KUBECONFIG=$dir/kubeconfig
K8S_CONTAINERD_SOCKET=$dir/run/containerd.sock
K8S_KUBELET_ROOT=$dir/kubelet
K8S_PLUGINS_REGISTRY=$dir/kubelet/plugins_registry
K8S_CDI_DIR=$dir/cdi
K8S_CGROUP=$cgid
EOF

launch() { # launch NAME CMD...: in the namespace, its own session, log in logs/NAME.log
  local name=$1; shift
  mkdir -p "$dir/cmds"
  printf '%q ' "$@" >"$dir/cmds/$name" # (for restart)
  setsid nsenter -t "$hold" -m -n -- "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/pids/$name"
}
wait_for() { # wait_for NAME SECONDS CMD...: until CMD succeeds; fails when NAME exits
  local what=$1 s=$2 n=0; shift 2
  while ! "$@" >/dev/null 2>&1; do
    alive "$what" || return 1
    n=$((n + 1))
    if (( n > s * 5 )); then
      echo "cluster.sh: $what: not up after $s s; the end of its log:" >&2
      tail -n 25 "$dir/logs/$what.log" >&2
      return 1
    fi
    sleep 0.2
  done
}
alive() { pid_ok "$1" || { echo "cluster.sh: $1 exited; the end of its log:" >&2; tail -n 25 "$dir/logs/$1.log" >&2; return 1; }; }
curl_ns() { in_ns curl -sf --max-time 5 --cacert "$certs/ca.crt" --cert "$certs/admin.crt" --key "$certs/admin.key" "$@"; }

# ---- etcd ----
launch etcd "$ETCD_BIN/etcd" --name gs --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$p_etcd" --advertise-client-urls "http://127.0.0.1:$p_etcd" \
  --listen-peer-urls "http://127.0.0.1:$p_peer" --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
  --initial-cluster "gs=http://127.0.0.1:$p_peer" --listen-metrics-urls "http://127.0.0.1:$p_etcdm" \
  --log-level warn --unsafe-no-fsync
wait_for etcd 30 in_ns curl -sf "http://127.0.0.1:$p_etcd/health" 

# ---- kube-apiserver ----
gate_flag=()
[[ -n $gates ]] && gate_flag=(--feature-gates="$gates")
launch kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$p_etcd" --bind-address=127.0.0.1 --secure-port="$p_api" \
  --advertise-address="$node_ip" --cert-dir="$certs" \
  --tls-cert-file="$certs/apiserver.crt" --tls-private-key-file="$certs/apiserver.key" \
  --client-ca-file="$certs/ca.crt" \
  --kubelet-client-certificate="$certs/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$certs/apiserver-kubelet-client.key" \
  --service-account-key-file="$certs/sa.pub" --service-account-signing-key-file="$certs/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range=10.0.0.0/24 --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction --allow-privileged=true \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --storage-backend=etcd3 "${gate_flag[@]}" --v=1
wait_for kube-apiserver 90 curl_ns "https://127.0.0.1:$p_api/readyz" 

# ---- kube-controller-manager, kube-scheduler ----
launch kube-controller-manager "$K8S_BIN/kube-controller-manager" \
  --kubeconfig="$dir/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$dir/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$dir/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$p_cm" --cert-dir="$certs/controller-manager" \
  --leader-elect=false --use-service-account-credentials \
  --service-account-private-key-file="$certs/sa.key" --root-ca-file="$certs/ca.crt" \
  --cluster-signing-cert-file="$certs/ca.crt" --cluster-signing-key-file="$certs/ca.key" \
  "${gate_flag[@]}" --v=1
sched_cfg=()
if [[ -n ${GS_K8S_SCHEDULER_CONFIG:-} ]]; then
  sed "s|__KUBECONFIG__|$dir/scheduler.kubeconfig|g" "$GS_K8S_SCHEDULER_CONFIG" >"$dir/scheduler.yaml"
  sched_cfg=(--config="$dir/scheduler.yaml")
fi
launch kube-scheduler "$K8S_BIN/kube-scheduler" \
  --kubeconfig="$dir/scheduler.kubeconfig" \
  --authentication-kubeconfig="$dir/scheduler.kubeconfig" \
  --authorization-kubeconfig="$dir/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$p_sched" --cert-dir="$certs/scheduler" \
  --leader-elect=false "${sched_cfg[@]}" "${gate_flag[@]}" --v=1

# ---- containerd (CRI; CDI on, specs in DIR/cdi), the pause image ----
cat >"$dir/containerd/config.toml" <<EOF
version = 3
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
                    "io.containerd.snapshotter.v1.erofs", "io.containerd.nri.v1.nri",
                    "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$dir/run/containerd.sock"
[ttrpc]
  address = "$dir/run/containerd.sock.ttrpc"
[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = "$dir/containerd/opt"
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'localhost/gpushare/pause:1'
  [plugins.'io.containerd.cri.v1.runtime']
    cdi_spec_dirs = ['$dir/cdi']
    netns_mounts_under_state_dir = true
    # no CAP_SYS_RESOURCE here (a container's host): the pods' oom_score_adj no lower than
    # containerd's own (else runc: "failed to update /proc/self/oom_score_adj: Permission denied")
    restrict_oom_score_adj = true
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'oci'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.oci]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.oci.options]
          BinaryName = '$runtime'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['$cni_bin']
      conf_dir = '$dir/cni/net.d'
  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
EOF
cat >"$dir/cni/net.d/10-gs.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "gs-k8s", "plugins": [
  {"type": "bridge", "bridge": "gsbr0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam",
            "ranges": [[{"subnet": "10.88.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
launch containerd "$CONTAINERD_BIN/containerd" --config "$dir/containerd/config.toml" --log-level warn
ctr_ns() { in_ns "$CONTAINERD_BIN/ctr" -a "$dir/run/containerd.sock" "$@"; }
wait_for containerd 30 ctr_ns version 
cc -static -Os -s -o "$dir/bin/pause" "$here/pause.c"
python3 "$here/oci-image.py" "$dir/images/pause.tar" localhost/gpushare/pause:1 \
  --entrypoint '["/pause"]' "$dir/bin/pause=/pause" >/dev/null
ctr_ns -n k8s.io images import "$dir/images/pause.tar" >"$dir/logs/import.log" 2>&1 ||
  { cat "$dir/logs/import.log" >&2; false; }

# ---- kubelet ----
gates_yaml=""
if [[ -n $gates ]]; then
  gates_yaml="featureGates:"$'\n'
  IFS=, read -ra gl <<<"$gates"
  for g in "${gl[@]}"; do gates_yaml+="  ${g%%=*}: ${g#*=}"$'\n'; done
fi
: >"$dir/resolv.conf"
cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "$node_ip"
port: $p_kubelet
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $p_healthz
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$certs/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$certs/kubelet-serving.crt"
tlsPrivateKeyFile: "$certs/kubelet-serving.key"
cgroupDriver: cgroupfs
cgroupRoot: "/$cgid"
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$dir/run/containerd.sock"
podLogsDir: "$dir/pod-logs"
resolvConf: "$dir/resolv.conf"
clusterDomain: cluster.local
registerNode: true
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
protectKernelDefaults: false
maxPods: 110
$gates_yaml
EOF
launch kubelet "$K8S_BIN/kubelet" --config="$dir/kubelet.yaml" \
  --kubeconfig="$dir/kubelet.kubeconfig" --root-dir="$dir/kubelet" --cert-dir="$certs/kubelet" \
  --hostname-override="$node" --node-ip="$node_ip" --v=2
kubectl_ns() { in_ns "$K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }
node_ready() {
  [[ $(kubectl_ns get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}
n=0
until node_ready; do
  for c in "${components_all[@]}"; do alive "$c"; done
  n=$((n + 1))
  if (( n > timeout_ready )); then
    kubectl_ns describe node "$node" >&2 2>&1 || true
    tail -n 25 "$dir/logs/kubelet.log" >&2
    die "the node $node is not Ready after $timeout_ready s"
  fi
  sleep 1
done
trap - EXIT
echo "cluster: Kubernetes $K8S_VERSION_FULL, containerd $CONTAINERD_VERSION_FULL, etcd $ETCD_VERSION_FULL, $(basename "$runtime"); node $node Ready; API https://127.0.0.1:$p_api (in the cluster's network namespace: scripts/k8s/cluster.sh kubectl $dir ...)"
