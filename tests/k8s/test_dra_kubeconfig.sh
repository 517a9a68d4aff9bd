#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushare-k8s reaches the API server as a kubeconfig says (YAML: the current context's cluster
# and user): HTTPS verified against certificate-authority-data, a bearer token; a CA that did not
# sign the server's certificate is refused with a line saying why; a kubeconfig it cannot use
# (exec plugins) and bad options stop it at start with one line.
export GPUSIM_DEVICES=H100-80GB
source "$(dirname "$0")/dra_lib.sh"
start_daemon
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/other.key" -out "$WORK/other.pem" -days 1 \
  -subj /CN=other 2>/dev/null
start_api --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
API=https://${API#http://}

# kubeconfig CA-FILE: a kubeconfig of the stand-in with that CA and the writer's token.
kubeconfig() {
  cat <<EOF
apiVersion: v1
kind: Config
current-context: test
contexts:
- name: other
  context: {cluster: nowhere, user: nobody}
- name: test
  context:
    cluster: standin
    user: plugin
clusters:
- name: standin
  cluster:
    server: $API
    certificate-authority-data: $(base64 -w0 "$1")
users:
- name: plugin
  user:
    token: writer
EOF
}
kubeconfig "$WORK/cert.pem" >"$WORK/kubeconfig"
# gpushare-k8s without --server and --token-file
plugin=("$PLUGIN" --node-name "$NODE" --registry-dir "$WORK/registry" --plugin-dir "$WORK/plugin"
  --cdi-dir "$WORK/cdi" --resync 0.3)
bg "${plugin[@]}" --kubeconfig "$WORK/kubeconfig" >>"$WORK/plugin.log" 2>&1
PLUGIN_PID=$!
wait_until 10 bash -c "[[ \$(curl -s --cacert '$WORK/cert.pem' -H 'Authorization: Bearer writer' '$API/apis/resource.k8s.io/v1/resourceslices' | jq '.items | length') == 1 ]]"
[[ $(stat -c %a "$WORK/plugin/kubeconfig-ca.crt") == 600 ]] || fail "the CA data file is not 0600"
kill -TERM "$PLUGIN_PID"
wait "$PLUGIN_PID" || fail "the plugin exited with $? on SIGTERM"
pass "a kubeconfig: HTTPS verified against its CA data, its token"

# A CA that did not sign the server's certificate: refused, said once.
kubeconfig "$WORK/other.pem" >"$WORK/kubeconfig-bad"
bg "${plugin[@]}" --kubeconfig "$WORK/kubeconfig-bad" >>"$WORK/plugin-bad.log" 2>&1
wait_until 10 grep -q "ResourceSlices: API server $API: .*certificate" "$WORK/plugin-bad.log"
kill -TERM "$!"
pass "a CA that did not sign the server's certificate is refused: $(grep -m1 'ResourceSlices: API' "$WORK/plugin-bad.log" | sed 's/.*warn: //')"

# What it cannot use stops it at start with one line.
expect_start_error() { # STATUS LINE ARGS...
  local want=$1 line=$2 out rc=0
  shift 2
  out=$("${plugin[@]}" "$@" 2>&1) || rc=$?
  expect_eq "$rc" "$want" "exit status of gpushare-k8s $*"
  expect_eq "$(sed 's/^[^:]*: //' <<<"$out")" "$line" "the line of gpushare-k8s $*"
}
sed 's/    token: writer/    exec: {command: aws}/' "$WORK/kubeconfig" >"$WORK/kubeconfig-exec"
expect_start_error 1 "error: kubeconfig: the user authenticates with exec or an auth-provider, which gpushare-k8s does not run: use a token or a client certificate" \
  --kubeconfig "$WORK/kubeconfig-exec"
expect_start_error 1 "error: kubeconfig $WORK/none: No such file or directory" --kubeconfig "$WORK/none"
expect_start_error 1 "error: not in a pod (KUBERNETES_SERVICE_HOST and _PORT are not set): give --kubeconfig or --server"
expect_start_error 2 "--device-order is index or tightest (see --help)" --device-order policy
pass "an unusable kubeconfig, no API server, a bad option: one line at start"
