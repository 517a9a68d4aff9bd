#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance: two processes on one device. A process's own context takes the model's context
# footprint of the free memory (issue 12: 518 MiB on an H100-80GB, as measured on a real one);
# while the first holds 10 GiB, the second's cuMemGetInfo free is exactly 10 GiB and the first's
# context lower; after the first is SIGKILLed, free is back to its earlier value, also when the
# holder forked a child that outlives it without calling CUDA.
# Run by sim_cuda_run.sh (private GPUSIM_STATE, LD_LIBRARY_PATH=build/sim).
set -euo pipefail
progs="${GSIM_CUDA_PROGS:?}"
fail() { echo "sim_cuda_two_procs: $*" >&2; exit 1; }

# CUDA's total of an H100-80GB (NVML's 85520809984 less 480 MiB reserved) and one context.
cuda_total=85017493504
context=543162368
read -r before total < <("$progs/meminfo")
[[ "$total" == "$cuda_total" ]] || fail "total $total, expected $cuda_total"
[[ "$before" == $((total - context)) ]] || fail "free $before with only our context, expected $((total - context))"
taken=$(((10 << 30) + context)) # the holder's allocation and its context

fifo=$(mktemp -u "${TMPDIR:-/tmp}/gpusim-hold.XXXXXX")
mkfifo "$fifo"
"$progs/memhold" 10 > "$fifo" &
holder=$!
trap 'kill -9 $holder 2>/dev/null || true; rm -f "$fifo"' EXIT
read -r word held _ < "$fifo" || fail "the holder did not report"
[[ "$word" == held && "$held" == $((10 << 30)) ]] || fail "holder said: $word $held"

read -r during _ < <("$progs/meminfo")
[[ "$during" == $((before - taken)) ]] || fail "free $during while 10 GiB are held, expected $((before - taken))"

kill -9 "$holder"
wait "$holder" 2>/dev/null || true
read -r after _ < <("$progs/meminfo")
[[ "$after" == "$before" ]] || fail "free $after after SIGKILL, expected $before"

# The holder forks first; its child inherits the node descriptor and lives on after the SIGKILL.
"$progs/memhold" 10 fork > "$fifo" &
holder=$!
read -r word held child < "$fifo" || fail "the forking holder did not report"
trap 'kill -9 $holder $child 2>/dev/null || true; rm -f "$fifo"' EXIT
[[ "$word" == held && "$child" -gt 0 ]] || fail "forking holder said: $word $held $child"
read -r during _ < <("$progs/meminfo")
[[ "$during" == $((before - taken)) ]] || fail "free $during with the forking holder"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
kill -0 "$child" || fail "the holder's child died with it"
read -r after _ < <("$progs/meminfo")
[[ "$after" == "$before" ]] || fail "free $after after SIGKILL of a parent whose child lives, expected $before"
kill -9 "$child"
