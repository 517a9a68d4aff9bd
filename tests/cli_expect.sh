# SPDX-License-Identifier: Apache-2.0
# Checks shared by the standalone test scripts (test_plan_cli.sh, test_mig_cli.sh, version.sh,
# licence_*.sh): source it after setting $tmp (a scratch directory). Each check counts its
# failures in $failures and goes on; the script ends with `[[ $failures -eq 0 ]]`.
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect_eq GOT WANT WHAT
expect_eq() {
    [[ "$1" == "$2" ]] || fail "$3: expected [$2], got [$1]"
}

# expect_line OUTPUT LINE: OUTPUT has exactly this line.
expect_line() {
    grep -qxF -- "$2" <<<"$1" || fail "missing line: [$2] in:"$'\n'"$1"
}

# expect_error STATUS MESSAGE CMD...: CMD exits with STATUS and prints exactly MESSAGE (one line)
# on stderr and nothing on stdout.
expect_error() {
    local want_status=$1 want=$2 status=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    [[ $status -eq $want_status ]] || fail "exit $status (want $want_status): $*"
    [[ "$(cat "$tmp/err")" == "$want" ]] || fail "stderr [$(cat "$tmp/err")] want [$want]"
    [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "stderr is not one line: $*"
    [[ ! -s "$tmp/out" ]] || fail "stdout not empty: $*"
}
