# SPDX-License-Identifier: Apache-2.0
# Helpers of the Kubernetes integration tests (source after setting $tmp): the stand-in API
# server and the scheduler extender started on loopback on free ports, stopped by PID.

k8s_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${GS_BUILD_DIR:-build}
extender="$build/bin/gpushare-scheduler-extender"
apiserver_pid=
extender_pid=

# wait_file FILE SECONDS: until FILE exists and is not empty.
wait_file() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [[ -s "$1" ]] && return 0
        sleep 0.1
    done
    return 1
}

# start_apiserver [ARGS...]: the stand-in with tokens "writer" and "reader"; sets $api_port and
# $api ($api_scheme://127.0.0.1:port: set api_scheme=https with --tls-cert).
start_apiserver() {
    rm -f "$tmp/api.port"
    python3 "$k8s_dir/apiserver.py" --port-file "$tmp/api.port" --token writer \
        --read-token reader "$@" 2>>"$tmp/apiserver.log" &
    apiserver_pid=$!
    wait_file "$tmp/api.port" 10 || { echo "the stand-in API server did not start" >&2; return 1; }
    api_port=$(cat "$tmp/api.port")
    api="${api_scheme:-http}://127.0.0.1:$api_port"
}

stop_apiserver() {
    if [[ -n "$apiserver_pid" ]]; then
        kill "$apiserver_pid" 2>/dev/null || true
        wait "$apiserver_pid" 2>/dev/null || true
        apiserver_pid=
    fi
}

# api METHOD PATH [BODY] [CONTENT-TYPE]: a request to the stand-in as the writer; prints
# "CODE BODY".
api() {
    local args=(-s --max-time 5 -o "$tmp/api.out" -w '%{http_code}' -X "$1"
        -H 'Authorization: Bearer writer' -H "Content-Type: ${4:-application/json}")
    [[ -n "${3:-}" ]] && args+=(--data-binary "$3")
    local code
    code=$(curl "${args[@]}" "$api$2")
    echo "$code $(cat "$tmp/api.out")"
}

# start_extender TOKEN [ARGS...]: the extender on the stand-in, logging to $tmp/$ext_log
# (extender.log); sets $ext.
start_extender() {
    local token=$1
    shift
    printf '%s\n' "$token" >"$tmp/token"
    rm -f "$tmp/ext.port"
    "$extender" --listen 127.0.0.1:0 --port-file "$tmp/ext.port" --server "$api" \
        --token-file "$tmp/token" --watch-seconds 3 --backoff-max 1 "$@" \
        2>>"$tmp/${ext_log:-extender.log}" &
    extender_pid=$!
    wait_file "$tmp/ext.port" 10 || { echo "the extender did not start" >&2; return 1; }
    ext="http://127.0.0.1:$(cat "$tmp/ext.port")"
}

# stop_extender: SIGTERM, and it must be gone within 5 s with status 0.
stop_extender() {
    local i status=0
    [[ -n "$extender_pid" ]] || return 0
    kill -TERM "$extender_pid"
    for ((i = 0; i < 50; i++)); do
        kill -0 "$extender_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$extender_pid" 2>/dev/null; then
        kill -KILL "$extender_pid"
        echo "the extender did not stop within 5 s of SIGTERM" >&2
        status=1
    fi
    wait "$extender_pid" || status=$?
    extender_pid=
    return $status
}

# verb NAME FILE: POSTs FILE to the extender's verb; prints the answer (fails after 5 s).
verb() {
    curl -s --max-time 5 -X POST -H 'Content-Type: application/json' --data-binary "@$2" \
        "$ext/$1"
}

# ready_is CODE SECONDS: /readyz answers CODE within SECONDS.
ready_is() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [[ "$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' "$ext/readyz")" == "$1" ]] &&
            return 0
        sleep 0.1
    done
    return 1
}
