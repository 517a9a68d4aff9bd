#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every mutant of tests/mutants/mutants.tsv (the mutation check; .ci/run runs the fast ones): each
# breaks one promise of the README, and the test it names must fail. Prints a line a mutant and
# exits 1 when one survives or no longer applies (tests/mutants/run.sh).
set -euo pipefail
exec bash "$(dirname "$0")/../tests/mutants/run.sh" "$@"
