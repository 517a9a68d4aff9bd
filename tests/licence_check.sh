#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/licence-check.sh: the build links no GPL-only library; the check fails when a binary
# links one (a copyright file of a package gpushare links, replaced through GS_LICENCE_OVERRIDE
# by a GPL-only one; and GLPK itself where it is installed), when a library is in no Debian
# package, and its reading of copyright files, DEP-5 and free-form, case by case.
set -euo pipefail
build=${GS_BUILD_DIR:?run through ctest (GS_BUILD_DIR is not set)}
src=${GS_SOURCE_DIR:?run through ctest}
check=$src/scripts/licence-check.sh
tmp=$(mktemp -d /tmp/gs-licence-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/cli_expect.sh" # fail, expect_eq; failures counted in $failures

# 1. The build itself: no GPL-only library, the LP solver read as EPL.
rc=0
out=$("$check" "$build" 2>&1) || rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "the build links a GPL-only or unreadable library (exit $rc)"
grep -q '^licence-check: no GPL-only library in [0-9]* files$' <<<"$out" || fail "no summary line"
grep -q '^licence-check: ok   coinor-libclp1: EPL' <<<"$out" || fail "CLP not read as EPL"
grep -q 'glpk' <<<"$out" && fail "GLPK is linked"

# 2. A package of the build made GPL-only through an override: the check fails and names it.
jansson=$(ldd "$build/bin/gpushare" | awk '/libjansson/ {print $3}')
pkg=$(dpkg -S "$(readlink -f "$jansson")" 2>/dev/null || dpkg -S "$jansson")
pkg=${pkg%%:*}
mkdir -p "$tmp/override/$pkg"
printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nCopyright: 2024 Someone\nLicense: GPL-3+\n' \
  >"$tmp/override/$pkg/copyright"
rc=0
out=$(GS_LICENCE_OVERRIDE=$tmp/override "$check" --files "$build/bin/gpushare" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a GPL-only $pkg passed (exit $rc): $out"
grep -qF "licence-check: FAIL $pkg is GPL-only: GPL-3+ (Files: *) ($tmp/override/$pkg/copyright;" <<<"$out" ||
  fail "no FAIL line for $pkg: $out"

# 2b. The reviewed overrides (scripts/licence-overrides.txt): libcurl's libidn2 is read as GPL-only
# without them; with them it passes while its copyright file is the reviewed one, and fails,
# saying so, once the file changes.
k8s=$build/bin/gpushare-k8s
rc=0
out=$(GS_LICENCE_OVERRIDES=/dev/null "$check" --files "$k8s" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "gpushare-k8s passed without the reviewed overrides (exit $rc): $out"
grep -q '^licence-check: FAIL libidn2-0 is GPL-only: GPL-3+' <<<"$out" ||
  fail "libidn2-0 not read as GPL-only without its override: $out"
out=$("$check" --files "$k8s" 2>&1) || fail "gpushare-k8s fails with the overrides: $out"
grep -q '^licence-check: ok   libidn2-0: LGPL-3+ or GPL-2+ (reviewed override' <<<"$out" ||
  fail "libidn2-0 not passed by its override: $out"
mkdir -p "$tmp/override/libidn2-0"
{ cat /usr/share/doc/libidn2-0/copyright; echo " (a later Debian revision)"; } \
  >"$tmp/override/libidn2-0/copyright"
rc=0
out=$(GS_LICENCE_OVERRIDE=$tmp/override "$check" --files "$k8s" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a changed copyright file kept its override (exit $rc): $out"
grep -q '^licence-check: FAIL libidn2-0: its copyright file changed since the override was reviewed' <<<"$out" ||
  fail "no FAIL line for the changed copyright file: $out"
expect_eq "$("$check" --review libidn2-0)" \
  "libidn2-0 $(sha256sum /usr/share/doc/libidn2-0/copyright | cut -d' ' -f1) | LICENCE | WHY" "--review"

# 3. A real GPL-only library where one is installed: a tiny program linked with GLPK.
if [[ -f /usr/include/glpk.h ]] && cc -o "$tmp/glpk-user" -x c - -lglpk 2>/dev/null <<<'
#include <glpk.h>
int main(void) { glp_delete_prob(glp_create_prob()); return 0; }'; then
  rc=0
  out=$("$check" --files "$tmp/glpk-user" 2>&1) || rc=$?
  [[ $rc -eq 1 ]] || fail "a program linked with GLPK passed (exit $rc): $out"
  grep -q '^licence-check: FAIL libglpk[0-9]* is GPL-only: GPL-3+' <<<"$out" || fail "GLPK not named: $out"
else
  echo "GLPK is not installed: its case is covered by the override above"
fi

# 4. A library of no Debian package: its licence cannot be read, the check fails.
mkdir -p "$tmp/lib" "$tmp/bin"
cc -shared -fPIC -o "$tmp/lib/libgsfake.so" -x c - <<<'int gs_fake(void) { return 1; }'
cc -o "$tmp/bin/fake-user" -x c - -L"$tmp/lib" -lgsfake -Wl,-rpath,"$tmp/lib" <<<'
int gs_fake(void);
int main(void) { return gs_fake(); }'
rc=0
out=$("$check" --files "$tmp/bin/fake-user" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a library of no package passed (exit $rc): $out"
grep -qF "licence-check: FAIL $tmp/lib/libgsfake.so (linked by $tmp/bin/fake-user) is in no Debian package" <<<"$out" ||
  fail "no FAIL line for the unpackaged library: $out"

# 5. How copyright files read: CLASS for a DEP-5 file whose Files paragraphs are $3.
dep5() {
  printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: x\n\n%b' "$1" \
    >"$tmp/copyright"
}
# expect_class CLASS LIBS: the class --classify gives $tmp/copyright for the libraries LIBS.
expect_class() {
  local got
  got=$("$check" --classify "$tmp/copyright" "${2:-}" | cut -f1)
  [[ $got == "$1" ]] || fail "class $got, want $1, for libraries [${2:-}] of:"$'\n'"$(cat "$tmp/copyright")"
}
for case in 'GPL-3+:gpl' 'GPL-2:gpl' 'AGPL-3+:gpl' 'GPL:gpl' 'GPL-2+ and MIT:gpl' 'LGPL-2.1+:ok' \
  'GPL-2+ with OpenSSL exception:ok' 'GPL-3+ with GCC-exception-3.1:ok' 'GPL-2+ or MIT:ok' \
  'LGPL-3+ or GPL-2+:ok' 'Expat:ok' 'EPL-2.0:ok' 'Apache-2.0:ok' 'BSD-3-clause | GPL-2:ok'; do
  dep5 "Files: *\nCopyright: 2024 A\nLicense: ${case%:*}\n"
  expect_class "${case##*:}"
done
# The paragraph that names the library's directory decides; else Files: *.
dep5 'Files: *\nCopyright: A\nLicense: GPL-2+\n\nFiles: libfoo/*\n libfoo/src/*\nCopyright: A\nLicense: LGPL-2.1+\n\nFiles: debian/*\nCopyright: B\nLicense: GPL-2+\n'
expect_class ok libfoo.so.1
expect_class gpl libbar.so.1
dep5 'Files: *\nCopyright: A\nLicense: GPL-2+\n\nFiles: lib/foo/*\nCopyright: A\nLicense: LGPL-2\n'
expect_class ok libfoo.so.1
dep5 'Files: *\nCopyright: A\nLicense: MIT\n\nFiles: contrib/libfoo/perl/ppport.h\nCopyright: A\nLicense: GPL-2+\n'
expect_class ok libfoo.so.1
# No Files: * paragraph: GPL-only when every paragraph is.
dep5 'Files:\n src/*\nCopyright: A\nLicense: GPL-2+\n\nFiles: doc/*\nCopyright: A\nLicense: GPL-3+\n'
expect_class gpl
dep5 'Files:\n src/*\nCopyright: A\nLicense: GPL-2+\n\nFiles: compat/*\nCopyright: A\nLicense: BSD-2-clause\n'
expect_class ok
# Free-form files, by their text.
printf 'This package is free software; you can redistribute it under the terms of the GNU General\nPublic License, version 2. On Debian systems see /usr/share/common-licenses/GPL-2.\n' >"$tmp/copyright"
expect_class gpl
printf 'It is licensed under the GNU Lesser General Public License, version 2.1.\n' >"$tmp/copyright"
expect_class ok
printf 'Parts are GPL; the library is under: Permission is hereby granted, free of charge, ...\n' >"$tmp/copyright"
expect_class ok
printf 'GPL version 3 with the GCC Runtime Library Exception, version 3.1.\n' >"$tmp/copyright"
expect_class ok
printf 'Permission to use, copy, modify, and distribute this software ...\n' >"$tmp/copyright"
expect_class ok

[[ $failures -eq 0 ]] || exit 1
echo "ok: the licence check passes the build and fails on GPL-only and unreadable libraries"
