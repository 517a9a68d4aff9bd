#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fault-injection suite (issue 25): gpushared on a gpusim node (GPU 0 shared, GPU 1 mig, GPU 2
# mps) under a random mix of acquire / release / expire / queue / MIG / MPS leases from three
# users, while faults are injected between the operations, and invariants checked after each
# fault and at the end. One seed names one run: the same seed gives the same sequence of choices
# (operations, fault kinds, users, profiles; every draw is made in the suite's own shell, never in
# a $( ) subshell, where bash reseeds $RANDOM); what the processes do meanwhile is theirs.
#
# usage: tests/faults/run.sh [SEED [SECONDS]]   (root; through ctest or with GS_BUILD_DIR set)
#
# Faults (kinds): daemon_kill9 (then a restart, as a supervisor would), daemon_term, job_kill9,
# holder_kill9, holder_stop (SIGSTOP of a gpushare run client, SIGCONT later), mps_kill9 (the MPS
# control daemon), ledger_enospc (the state directory's filesystem full for a while), ledger_eio
# (its writes fail, an interposer), nvml_fail (NVML calls failing for a while, gpusim's
# GPUSIM_NVML_FAULTS), mig_halfway (a MIG instance whose compute instance cannot be made),
# clock_jump (CLOCK_REALTIME as gpushared sees it jumps by minutes to hours, either way).
#
# Invariants: no lease lost or doubled across restarts, and no id given twice; the ledger (read
# while gpushared is down) and the leases listed after the restart agree; leased <= leasable on
# every GPU (compute, slots too); no lease's processes hold more than its limit (gpusim's NVML,
# and the watchdog's figure); no process of an ended lease alive kill_grace after it ended; every
# MIG instance gpusim has is one gpushared knows, and every leased one belongs to a live lease.
#
# Half the steps inject a fault, the others are operations; the invariants are checked after
# every fault, every fourth operation and at the end; a daemon up but silent for 20 s is a
# violation. A fault is counted when its effect was seen (issue 41): a signalled process gone
# or stopped (/proc, the daemon's wait status), a ledger write failed with EIO or ENOSPC or a
# shifted clock returned (the interposer's fired.* files), an NVML call of gpushared's failed
# (gpusim's GPUSIM_NVML_FAULTS_FIRED); the ledger's, the clock's and NVML's faults are followed by
# an operation. One drawn with nothing to do it to is not injected. An interposer that gpushared
# did not load is an error. Prints the faults by kind (injected, seen to take effect), the
# invariant checks, the violations (with what was seen), and the daemon's RSS and open
# descriptors at the start and the end, each idle after a lease of each kind. Exit status: 0 with
# no violation and every kind injected seen to take effect, 1 otherwise, 77 when not root.
seed=${1:-1}
seconds=${2:-45}
# shellcheck source=../daemon/hostile_lib.sh
source "$(dirname "$0")/../daemon/hostile_lib.sh"
source "$(dirname "$0")/lib.sh"
faults_main
