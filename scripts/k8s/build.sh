#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the real Kubernetes components the k8s-real tests run (issue 35) from their Go modules,
# through the Go module proxy, into a cache outside the repository keyed by component and
# version; a component already in the cache is reused, never rebuilt.
#
# Usage: scripts/k8s/build.sh [--env] [--offline] [COMPONENT...]
#   COMPONENT: kubernetes containerd etcd helm (default: kubernetes containerd etcd; helm only
#              when named or GS_K8S_HELM=1)
#   --env      builds nothing: prints, as shell assignments, where each component's binaries are
#              (K8S_BIN=, CONTAINERD_BIN=, ETCD_BIN=, HELM_BIN=, K8S_VERSION_FULL=, ...), for the
#              versions selected, found in the cache; exits 3 when one is missing.
#   --offline  never asks the module proxy which versions exist: uses the newest one in the
#              cache that matches (also the fallback when the proxy cannot be reached).
# Inputs (environment):
#   K8S_VERSION         1.37 (default: the newest v1.37.x the proxy serves), 1.36, or 1.36.3
#   CONTAINERD_VERSION  2 (default: newest v2.x), 2.4, or 2.4.2
#   ETCD_VERSION        3.7 (default: newest v3.7.x; 3.7 is what Kubernetes 1.37 pins), or full
#   HELM_VERSION        4 (default) or 3, or a full version
#   GS_CACHE_DIR        default ${XDG_CACHE_HOME:-$HOME/.cache}/gpushare
#   GS_K8S_JOBS         go build -p and GOMAXPROCS (default 2; builds run under nice -n 19)
# Outputs: $GS_CACHE_DIR/k8s/<component>-<version>/bin/..., with the build's time and log in
#   $GS_CACHE_DIR/k8s/<component>-<version>/build.txt and a line per build appended to
#   $GS_CACHE_DIR/k8s/builds.log; one line per component on stdout (built in N s / reused), then
#   the cache's size. Build trees live in a temporary directory, removed afterwards.
#   kubernetes: kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
#   containerd: containerd ctr containerd-shim-runc-v2
#   etcd: etcd etcdctl          helm: helm
# Exit: 0 done; 1 a build failed (its log's tail on stderr); 2 usage; 3 (--env) not built.
set -euo pipefail

cache_root=${GS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare}
cache=$cache_root/k8s
jobs=${GS_K8S_JOBS:-2}
mode=build
offline=0
components=()
for a in "$@"; do
  case $a in
    --env) mode=env ;;
    --offline) offline=1 ;;
    kubernetes | containerd | etcd | helm) components+=("$a") ;;
    -h | --help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument: $a" >&2; exit 2 ;;
  esac
done
if [[ ${#components[@]} -eq 0 ]]; then
  components=(kubernetes containerd etcd)
  [[ ${GS_K8S_HELM:-0} == 1 ]] && components+=(helm)
fi
command -v go >/dev/null || { echo "build.sh: go is not installed (Go 1.26 builds these)" >&2; exit 1; }

# module path, cache name and default version prefix of each component
declare -A module=([kubernetes]=k8s.io/kubernetes [containerd]=github.com/containerd/containerd/v2
                   [etcd]=go.etcd.io/etcd/server/v3 [helm]=helm.sh/helm/v4)
declare -A want=([kubernetes]=${K8S_VERSION:-1.37} [containerd]=${CONTAINERD_VERSION:-2}
                 [etcd]=${ETCD_VERSION:-3.7} [helm]=${HELM_VERSION:-4})
case ${want[helm]} in 3 | 3.*) module[helm]=helm.sh/helm/v3 ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gs-k8s-build.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# Go must not see the repository's (or any) module while listing versions.
export GOWORK=off GOTOOLCHAIN=local

# resolve COMPONENT: prints the full version (vX.Y.Z) to use.
resolve() {
  local c=$1 w=${want[$1]} v prefix
  w=${w#v}
  if [[ $w =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then echo "v$w"; return; fi
  prefix="v$w."
  if [[ $offline == 0 ]]; then
    v=$(cd "$tmp" && timeout 120 go list -m -versions "${module[$c]}" 2>/dev/null |
          tr ' ' '\n' | grep -E "^${prefix//./\\.}[0-9.]*$" | sort -V | tail -1) || v=
    [[ -n $v ]] && { echo "$v"; return; }
  fi
  # offline, or the proxy did not answer: the newest built one in the cache
  v=$(ls -d "$cache/$c-$prefix"* 2>/dev/null | sed "s|.*/$c-||" | grep -E '^v[0-9.]+$' | sort -V |
        tail -1) || v=
  [[ -n $v ]] && { echo "$v"; return; }
  echo "build.sh: no $c version $prefix* from the module proxy nor in $cache" >&2
  return 1
}

declare -A bins=([kubernetes]="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
                 [containerd]="containerd ctr containerd-shim-runc-v2" [etcd]="etcd etcdctl"
                 [helm]=helm)

# The recipe's revision of each component: a cached build of an older recipe is built again
# (kubernetes 2: the release's version compiled in, not v0.0.0-master).
declare -A recipe=([kubernetes]=2 [containerd]=1 [etcd]=1 [helm]=1)
built() { # built COMPONENT DIR: every binary is there, built by this recipe
  local b
  for b in ${bins[$1]}; do [[ -x $2/bin/$b ]] || return 1; done
  grep -q " recipe=${recipe[$1]}\( \|$\)" "$2/build.txt" 2>/dev/null
}
timed() { # timed NAME CMD...: CMD, its time appended to $times ("NAME=SECONDS")
  local name=$1 t0=$SECONDS; shift
  "$@" || return 1
  echo "$name=$((SECONDS - t0))" >>"$times"
}

goenv=(env GOWORK=off GOTOOLCHAIN=local GOMAXPROCS="$jobs" CGO_ENABLED=0 GOFLAGS=-mod=mod)
gobuild=(nice -n 19 "${goenv[@]}" go build -p "$jobs" -trimpath)
ldflags="-s -w"

# src COMPONENT VERSION: the module's source, copied writable into $tmp/src; prints the path.
src() {
  local dir
  dir=$(cd "$tmp" && timeout 900 go mod download -json "${module[$1]}@$2" | jq -r .Dir) || return 1
  [[ -d $dir ]] || return 1
  rm -rf "$tmp/src-$1"
  cp -r "$dir" "$tmp/src-$1"
  chmod -R u+w "$tmp/src-$1"
  echo "$tmp/src-$1"
}

# k8s.io/kubernetes: its go.mod replaces the staging modules with ./staging/src/k8s.io/*, which
# the module zip leaves out (they are modules of their own); each is fetched at the matching
# v0.Y.Z (published from the same tree) and put where the replace expects it.
build_kubernetes() { # VERSION OUTDIR
  local v=$1 out=$2 s m sv d b
  s=$(src kubernetes "$v") || return 1
  sv=v0.${v#v1.}
  for m in $(sed -n '/^replace (/,/^)/p' "$s/go.mod" | awk '$2 == "=>" && $3 ~ /^\.\/staging/ {print $1}'); do
    if ! d=$(cd "$tmp" && timeout 600 go mod download -json "$m@$sv" 2>&1) ||
       ! d=$(jq -r .Dir <<<"$d") || [[ ! -d $d ]]; then
      # a staging module never published (k8s.io/sample-cli-plugin): no command needs it
      echo "staging module $m@$sv: not served by the proxy; dropped from go.mod"
      (cd "$s" && go mod edit -dropreplace="$m" -droprequire="$m")
      continue
    fi
    mkdir -p "$s/staging/src/$(dirname "$m")"
    cp -r "$d" "$s/staging/src/$m"
    chmod -R u+w "$s/staging/src/$m"
  done
  rm -f "$s/go.work" "$s/go.work.sum"
  # the version as hack/lib/version.sh compiles it in (else "v0.0.0-master+$Format:%H$")
  local major=${v#v} minor x vflags=
  minor=${major#*.}; minor=${minor%%.*}; major=${major%%.*}
  for x in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    vflags+=" -X $x.gitVersion=$v -X $x.gitMajor=$major -X $x.gitMinor=$minor"
    vflags+=" -X $x.gitTreeState=clean -X $x.buildDate=$(date -u +%FT%TZ)"
  done
  mkdir -p "$out/bin"
  for b in ${bins[kubernetes]}; do
    echo "== go build ./cmd/$b"
    (cd "$s" && timed "$b" "${gobuild[@]}" "-ldflags=$ldflags$vflags" -o "$out/bin/$b" "./cmd/$b") || return 1
  done
}

# containerd 2.x: no replace directives; built from a copy of its tree (go.sum is complete).
# CGO_ENABLED=0 leaves out the btrfs snapshotter (overlayfs and native are there).
build_containerd() {
  local v=$1 out=$2 s b
  s=$(src containerd "$v") || return 1
  mkdir -p "$out/bin"
  for b in ${bins[containerd]}; do
    echo "== go build ./cmd/$b"
    (cd "$s" && timed "$b" "${gobuild[@]}" "-ldflags=$ldflags" -tags no_btrfs -o "$out/bin/$b" "./cmd/$b") || return 1
  done
}

# etcd: the server (go.etcd.io/etcd/server/v3) and etcdctl (go.etcd.io/etcd/etcdctl/v3) modules
# replace their sibling modules (api, client, pkg) with ../api etc., so `go install` refuses them;
# each is built from a copy whose relative replaces are dropped (the siblings then come from the
# proxy at the versions its go.mod requires: the same release).
build_dropreplace() { # MODULE VERSION OUTFILE
  local s d r
  d=$(cd "$tmp" && timeout 900 go mod download -json "$1@$2" | jq -r .Dir) || return 1
  s=$tmp/src-$(basename "$3")
  rm -rf "$s"; cp -r "$d" "$s"; chmod -R u+w "$s"
  for r in $(cd "$s" && go mod edit -json | jq -r '.Replace[]? | select(.New.Path | startswith(".")) | .Old.Path'); do
    (cd "$s" && go mod edit -dropreplace="$r")
  done
  echo "== go build $1@$2"
  (cd "$s" && timed "$(basename "$3")" "${gobuild[@]}" "-ldflags=$ldflags" -o "$3" .) || return 1
}
build_etcd() {
  local v=$1 out=$2
  mkdir -p "$out/bin"
  build_dropreplace go.etcd.io/etcd/server/v3 "$v" "$out/bin/etcd" || return 1
  build_dropreplace go.etcd.io/etcd/etcdctl/v3 "$v" "$out/bin/etcdctl" || return 1
}

build_helm() {
  local v=$1 out=$2 s
  s=$(src helm "$v") || return 1
  mkdir -p "$out/bin"
  echo "== go build ./cmd/helm"
  (cd "$s" && timed helm "${gobuild[@]}" "-ldflags=$ldflags" -o "$out/bin/helm" ./cmd/helm) || return 1
}

declare -A envname=([kubernetes]=K8S [containerd]=CONTAINERD [etcd]=ETCD [helm]=HELM)
rc=0
for c in "${components[@]}"; do
  if ! v=$(resolve "$c"); then rc=1; continue; fi
  dir=$cache/$c-$v
  if [[ $mode == env ]]; then
    echo "${envname[$c]}_VERSION_FULL=$v"
    echo "${envname[$c]}_BIN=$dir/bin"
    built "$c" "$dir" || { echo "build.sh: $c $v is not built in $dir (run scripts/k8s/build.sh)" >&2; rc=3; }
    continue
  fi
  if built "$c" "$dir"; then
    echo "$c $v: reused ($dir/bin)"
    continue
  fi
  mkdir -p "$cache"
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  log=$dir.partial/build.log
  times=$dir.partial/times
  echo "$c $v: building (${module[$c]}, go build -p $jobs, nice 19; log $log) ..."
  t0=$(date +%s)
  if "build_$c" "$v" "$dir.partial" >"$log" 2>&1; then
    t=$(( $(date +%s) - t0 ))
    size=$(du -sh "$dir.partial/bin" | cut -f1)
    printf 'component=%s version=%s module=%s seconds=%s bin_size=%s go=%s jobs=%s date=%s recipe=%s\n' \
      "$c" "$v" "${module[$c]}" "$t" "$size" "$(go env GOVERSION)" "$jobs" "$(date -u +%FT%TZ)" \
      "${recipe[$c]}" >"$dir.partial/build.txt"
    echo "seconds per binary (the first pays for the shared packages): $(tr '\n' ' ' <"$times")" \
      >>"$dir.partial/build.txt"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
    cat "$dir/build.txt" >>"$cache/builds.log"
    echo "$c $v: built in ${t} s ($size of binaries in $dir/bin; per binary: $(tr '\n' ' ' <"$dir/times"))"
  else
    t=$(( $(date +%s) - t0 ))
    echo "build.sh: $c $v failed after ${t} s; the end of $log:" >&2
    tail -n 30 "$log" >&2
    rc=1
  fi
  rm -rf "$tmp"/src-*
done
if [[ $mode == build ]]; then
  echo "cache: $(du -sh "$cache" 2>/dev/null | cut -f1) in $cache (Go's module cache: $(du -sh "$(go env GOMODCACHE)" 2>/dev/null | cut -f1) in $(go env GOMODCACHE))"
fi
exit $rc
