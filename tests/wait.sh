# SPDX-License-Identifier: Apache-2.0
# The test scripts' waits with deadlines as stated (issue 41): LIMIT is seconds ("2", "0.5") or
# milliseconds ("250ms"), measured on the wall clock to the microsecond ($EPOCHREALTIME), so that
# "within 1 s" fails after 1 s (bash's $SECONDS counts whole seconds: a deadline on it passes up
# to a second late). Sourced by tests/daemon/lib.sh and tests/slurm/lib.sh, which define fail.

# gs_now_us: sets GS_NOW_US to the wall clock in microseconds (whatever the locale's decimal
# point; no subshell).
gs_now_us() {
  GS_NOW_US=${EPOCHREALTIME//[!0-9]/}
}

# gs_deadline LIMIT: sets GS_DEADLINE_US to now plus LIMIT ("2", "0.5", "250ms").
gs_deadline() {
  local limit=$1 us frac
  if [[ $limit =~ ^([0-9]+)ms$ ]]; then
    us=$((10#${BASH_REMATCH[1]} * 1000))
  elif [[ $limit =~ ^([0-9]+)(\.([0-9]{1,6}))?$ ]]; then
    frac=${BASH_REMATCH[3]}000000
    us=$((10#${BASH_REMATCH[1]} * 1000000 + 10#${frac:0:6}))
  else
    fail "a wait's limit \"$limit\": seconds (2, 0.5) or milliseconds (250ms)"
  fi
  gs_now_us
  GS_DEADLINE_US=$((GS_NOW_US + us))
}

# wait_until LIMIT CMD...: runs CMD every 50 ms until it succeeds; fails the test when no run
# of it that began within LIMIT did. (CMD's arguments are expanded once: use wait_eq for values
# that change.)
wait_until() {
  gs_deadline "$1"
  local deadline=$GS_DEADLINE_US
  shift
  until "$@"; do
    sleep 0.05
    gs_now_us
    ((GS_NOW_US < deadline)) || fail "timed out waiting for: $*"
  done
}

# wait_eq LIMIT EXPECTED CMD...: runs CMD every 50 ms until it prints EXPECTED; fails the test
# when no run of it that began within LIMIT did.
wait_eq() {
  gs_deadline "$1"
  local deadline=$GS_DEADLINE_US expected=$2 got
  shift 2
  until got=$("$@") && [[ $got == "$expected" ]]; do
    sleep 0.05
    gs_now_us
    ((GS_NOW_US < deadline)) || fail "timed out waiting for \"$*\" to print \"$expected\" (last: \"$got\")"
  done
}
