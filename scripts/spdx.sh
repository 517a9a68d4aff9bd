#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that every tracked source, build and script file carries the project's SPDX line in
# its first three lines (CI runs this); with --fix, adds it where it is missing, in the file's
# own comment syntax (after a shebang line or a man page's preprocessor line). Data, prose and
# test corpora (CSV, TSV, Markdown, JSON, fuzz corpora) are not source files and are skipped:
# their provenance is stated in data/README.md and THIRD-PARTY.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="SPDX-License-Identifier: Apache-2.0"
fix=0
[[ ${1:-} == --fix ]] && fix=1

# The comment line for file f, or nothing when f is not a source file.
comment_for() {
  case "$1" in
    *.md | *.csv | *.tsv | *.json | */corpus/* | LICENSE | NOTICE) ;;
    packaging/deb/conffiles) ;; # dpkg reads every line as a path: no comments
    packaging/copyright) ;;     # DEP-5: it states its own licences, in its own fields
    *.c | *.h | *.h.in | *.def | *.cu | *.proto | *.go) echo "/* $tag */" ;;
    *.1 | *.8) echo ".\\\" $tag" ;;
    *.py | *.sh | *.awk | *.cmake | *.in | *.txt | *.yaml | *.yml | *.conf.example | Makefile | \
      .gitignore | .clang-format | .ci/* | packaging/deb/*) echo "# $tag" ;;
    *) ;;
  esac
}

# Inserts line into f after its first line when that is a shebang or a man page's '\" line.
insert() {
  local f=$1 line=$2 tmp
  tmp=$(mktemp)
  if head -1 "$f" | grep -qE "^(#!|'\\\\\")"; then
    { head -1 "$f"; printf '%s\n' "$line"; tail -n +2 "$f"; } >"$tmp"
  else
    { printf '%s\n' "$line"; cat "$f"; } >"$tmp"
  fi
  cat "$tmp" >"$f" # keeps the file's mode
  rm -f "$tmp"
}

bad=0
while IFS= read -r f; do
  [[ -f $f ]] || continue
  line=$(comment_for "$f")
  [[ -n $line ]] || continue
  head -3 "$f" | grep -qF "$tag" && continue
  if [[ $fix == 1 ]]; then
    insert "$f" "$line"
  else
    echo "spdx: $f has no '$tag' line in its first three lines (run: scripts/spdx.sh --fix)" >&2
    bad=1
  fi
done < <(git ls-files --cached --others --exclude-standard)
exit $bad
