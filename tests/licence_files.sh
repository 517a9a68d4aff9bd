#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The licence files: LICENSE is the Apache License 2.0 as Debian ships it, NOTICE names it,
# packaging/copyright (the Debian packages' copyright file) is well-formed machine-readable
# DEP-5 whose Files: * is Apache-2.0 and whose every licence has its text, and THIRD-PARTY.md
# lists every package of scripts/deps.sh and every package the build's programs load.
set -euo pipefail
build=${GS_BUILD_DIR:?run through ctest (GS_BUILD_DIR is not set)}
src=${GS_SOURCE_DIR:?run through ctest}
source "$(dirname "$0")/cli_expect.sh" # fail, expect_eq; failures counted in $failures

# LICENSE and NOTICE.
if [[ -f /usr/share/common-licenses/Apache-2.0 ]]; then
  cmp -s "$src/LICENSE" /usr/share/common-licenses/Apache-2.0 ||
    fail "LICENSE differs from /usr/share/common-licenses/Apache-2.0"
fi
grep -q 'Apache License' "$src/LICENSE" && grep -q 'Version 2.0, January 2004' "$src/LICENSE" ||
  fail "LICENSE is not the Apache License 2.0"
grep -q 'Apache License, Version 2.0' "$src/NOTICE" || fail "NOTICE does not name the licence"

# packaging/copyright: DEP-5 (copyright-format 1.0). Prints one line per problem.
problems=$(awk '
  function end_paragraph() {
    if (n == 0)
      return
    if (++paragraphs == 1) {
      if (!("Format" in f) || !("Upstream-Name" in f))
        print "the header paragraph lacks Format or Upstream-Name"
    } else if ("Files" in f) {
      if (!("Copyright" in f) || !("License" in f))
        print "Files paragraph " f["Files"] " lacks Copyright or License"
      used[f["License"]] = 1
      if (f["Files"] == "*")
        star = f["License"]
    } else if ("License" in f) {
      if (!body)
        print "License paragraph " f["License"] " has no text"
      texts[f["License"]] = 1
    } else {
      print "paragraph " paragraphs " is neither Files nor License"
    }
    delete f
    n = body = 0
  }
  NR == 1 && $0 != "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" {
    print "line 1 is not the Format line"
  }
  /^[ \t]*$/ { end_paragraph(); next }
  /^[ \t]/ { if (key == "License") body = 1; next }
  /^[A-Za-z-]+:/ {
    key = substr($0, 1, index($0, ":") - 1)
    value = substr($0, index($0, ":") + 1)
    gsub(/^[ \t]+|[ \t]+$/, "", value)
    if (key in f)
      print "field " key " twice in one paragraph"
    f[key] = value
    n++
    next
  }
  { print "line " NR " is not a field nor a continuation: " $0 }
  END {
    end_paragraph()
    if (star != "Apache-2.0")
      print "Files: * is not Apache-2.0"
    for (l in used)
      if (!(l in texts))
        print "licence " l " has no License paragraph"
  }' "$src/packaging/copyright")
[[ -z $problems ]] || fail "packaging/copyright:"$'\n'"$problems"

# THIRD-PARTY.md names every package (in backquotes, in a table row).
rows=$(grep -E '^\|' "$src/THIRD-PARTY.md")
listed() {
  grep -qF -- "\`$1\`" <<<"$rows"
}
for pkg in $("$src/scripts/deps.sh" --list); do
  listed "$pkg" || fail "THIRD-PARTY.md does not list $pkg (scripts/deps.sh)"
done
loaded=$("$src/scripts/licence-check.sh" "$build" | sed -n 's/^licence-check: ok   \([^:]*\):.*/\1/p')
[[ -n $loaded ]] || fail "the licence check named no package of the build"
for pkg in $loaded; do
  listed "$pkg" || fail "THIRD-PARTY.md does not list $pkg (loaded by the build's programs)"
done

[[ $failures -eq 0 ]] || exit 1
echo "ok: LICENSE, NOTICE, packaging/copyright and THIRD-PARTY.md ($(wc -w <<<"$loaded") run-time packages)"
