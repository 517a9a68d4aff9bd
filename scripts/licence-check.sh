#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Licence check (CI runs it after the build): fails when a program or library gpushare builds
# links a shared library whose licence is the GPL alone, which would put the binary under the GPL
# when it is distributed. For each ELF file it lists the shared libraries it loads (ldd: the
# whole tree, not only the direct ones), finds each library's Debian package (dpkg -S), reads the
# package's /usr/share/doc/PKG/copyright and classifies its licence (scripts/licence-class.awk:
# from a machine-readable DEP-5 file, the paragraph that names the library, else "Files: *"; from
# a free-form file, by its text). GPL-only fails; LGPL, "GPL-2+ with X exception", "GPL-2+ or MIT"
# and permissive licences pass.
# A library from no Debian package, or a package without a copyright file, fails the check too:
# its licence cannot be read. Libraries of the build itself (gpusim's) are gpushare's own.
# Usage: scripts/licence-check.sh [BUILD]           BUILD/bin/*, BUILD/lib/*.so, BUILD/sim/* (build)
#        scripts/licence-check.sh --files FILE...   the given ELF files
#        scripts/licence-check.sh --classify FILE [LIBS]  one copyright file's class (ok|gpl)
#                                                   and licence, for the named libraries
#        scripts/licence-check.sh --review PACKAGE  the override line's package and SHA-256
#                                                   for the package's copyright file now
#        GS_LICENCE_OVERRIDE=DIR                    DIR/PKG/copyright is read instead of
#                                                   /usr/share/doc/PKG/copyright (tests use it)
#        GS_LICENCE_OVERRIDES=FILE                  the reviewed overrides (default:
#                                                   scripts/licence-overrides.txt; tests use it)
# A package of the reviewed overrides passes with the licence written there while its copyright
# file is the one reviewed (same SHA-256), and fails, saying so, once Debian ships another.
# Prints one line per package (ok or GPL-only, the licence, which libraries and files); exits 0
# when none is GPL-only or unreadable, 1 otherwise, 2 on bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
override=${GS_LICENCE_OVERRIDE:-}
overrides_file=${GS_LICENCE_OVERRIDES:-$here/licence-overrides.txt}

# The reviewed overrides: reviewed_sha[PKG], reviewed_licence[PKG], reviewed_why[PKG].
declare -A reviewed_sha reviewed_licence reviewed_why
load_overrides() {
  local line pkg sha rest
  [[ -f $overrides_file ]] || return 0
  while IFS= read -r line; do
    [[ -z ${line// /} || $line == \#* ]] && continue
    read -r pkg sha rest <<<"$line"
    rest=${rest#| }
    reviewed_sha[$pkg]=$sha
    reviewed_licence[$pkg]=${rest%% | *}
    reviewed_why[$pkg]=${rest#* | }
  done <"$overrides_file"
}

# The class and licence of copyright file $1 for the libraries named $2 (scripts/licence-class.awk).
classify() {
  local stems= name
  for name in ${2:-}; do
    name=${name##*/} name=${name%%.so*}
    stems+=" ${name#lib}"
  done
  awk -v stems="$stems" -f "$here/licence-class.awk" "$1"
}

# The ELF files of a build: its programs, its libraries and gpusim's.
build_files() {
  local build=$1 f
  for f in "$build"/bin/* "$build"/lib/*.so "$build"/sim/*; do
    [[ -f $f && ! -L $f ]] || continue
    [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] && echo "$f"
  done
  return 0
}

# Lines "FILE LIBNAME PATH" for every library the files load, leaving out the build's own
# (gpusim's, under root) and those beside a file ($ORIGIN): they are gpushare's. A library ldd
# cannot find fails the check.
linked() {
  local f out own real name path bad=0
  for f in "$@"; do
    out=$(ldd "$f" 2>&1) || { echo "licence-check: FAIL ldd $f: $out" >&2; bad=1; continue; }
    own=$(cd "$(dirname "$f")" && pwd)
    while read -r name path; do
      if [[ $path == "not found" ]]; then
        echo "licence-check: FAIL $f: $name not found" >&2
        bad=1
        continue
      fi
      real=$(readlink -f "$path")
      [[ $real == "$own"/* || (-n $root && $real == "$root"/*) ]] && continue
      echo "$f $name $path"
    done < <(awk '/=> not found/ {print $1, "not found"; next} /=>/ && $3 ~ /^\// {print $1, $3; next}
                  $1 ~ /^\// {print $1, $1}' <<<"$out")
  done
  return $bad
}

# Fills package_of[PATH] for the given library paths with one dpkg -S (it is slow): each path is
# looked up as ldd gives it, resolved, and with /usr added or taken off (a merged /usr).
declare -A package_of
find_packages() {
  local -A owner
  local -a cands
  local p real line pkgs file
  for p in "$@"; do
    real=$(readlink -f "$p")
    cands+=("$p" "$real" "${real#/usr}" "/usr$p")
  done
  while IFS= read -r line; do
    [[ $line == diversion* || $line != *": /"* ]] && continue
    pkgs=${line%%: /*} file=/${line#*: /}
    owner[$file]=${pkgs%%[:,]*}
  done < <(dpkg -S "${cands[@]}" 2>/dev/null || true)
  for p in "$@"; do
    real=$(readlink -f "$p")
    package_of[$p]=${owner[$p]:-${owner[$real]:-${owner[${real#/usr}]:-${owner[/usr$p]:-}}}}
  done
}

# Checks one package: its copyright file's class. Returns 1 when GPL-only or unreadable.
check_package() {
  local pkg=$1 libs=$2 what=$3 copyright=/usr/share/doc/$1/copyright class licence
  [[ -n $override && -f $override/$pkg/copyright ]] && copyright=$override/$pkg/copyright
  if [[ ! -f $copyright ]]; then
    echo "licence-check: FAIL $pkg: no $copyright, its licence cannot be read ($what)"
    return 1
  fi
  if [[ -n ${reviewed_sha[$pkg]:-} ]]; then
    local sha
    sha=$(sha256sum "$copyright" | cut -d' ' -f1)
    if [[ $sha == "${reviewed_sha[$pkg]}" ]]; then
      echo "licence-check: ok   $pkg: ${reviewed_licence[$pkg]} (reviewed override, $(basename "$overrides_file"); $what)"
      return 0
    fi
    echo "licence-check: FAIL $pkg: its copyright file changed since the override was reviewed (SHA-256 $sha, reviewed ${reviewed_sha[$pkg]}): read $copyright again and update $overrides_file ($what)"
    return 1
  fi
  IFS=$'\t' read -r class licence < <(classify "$copyright" "$libs")
  if [[ $class == gpl ]]; then
    echo "licence-check: FAIL $pkg is GPL-only: $licence ($copyright; $what)"
    return 1
  fi
  echo "licence-check: ok   $pkg: $licence ($what)"
}

files=() root=
case ${1:-} in
  --files) shift; files=("$@") ;;
  --classify) classify "$2" "${3:-}"; exit 0 ;;
  --review)
    [[ -n ${2:-} ]] || { echo "usage: scripts/licence-check.sh --review PACKAGE" >&2; exit 2; }
    echo "$2 $(sha256sum "/usr/share/doc/$2/copyright" | cut -d' ' -f1) | LICENCE | WHY"
    exit 0
    ;;
  -*) echo "usage: scripts/licence-check.sh [BUILD] | --files FILE... | --classify COPYRIGHT | --review PACKAGE" >&2; exit 2 ;;
  *)
    root=$(cd "${1:-build}" && pwd)
    mapfile -t files < <(build_files "$root")
    ;;
esac
[[ ${#files[@]} -gt 0 ]] || { echo "licence-check: no ELF files to check" >&2; exit 2; }

load_overrides
fail=0
links=$(linked "${files[@]}") || fail=1
[[ -n $links ]] && mapfile -t paths < <(awk '{print $3}' <<<"$links" | sort -u) || paths=()
[[ ${#paths[@]} -gt 0 ]] && find_packages "${paths[@]}"
declare -A users libs # package -> the files and libraries that bring it in
while read -r f name path; do
  [[ -n ${f:-} ]] || continue
  pkg=${package_of[$path]:-}
  if [[ -z $pkg ]]; then
    echo "licence-check: FAIL $path (linked by $f) is in no Debian package: its licence is unknown"
    fail=1
    continue
  fi
  [[ " ${users[$pkg]:-} " == *" ${f##*/} "* ]] || users[$pkg]+=" ${f##*/}"
  [[ " ${libs[$pkg]:-} " == *" $name "* ]] || libs[$pkg]+=" $name"
done <<<"$links"
for pkg in $(printf '%s\n' "${!users[@]}" | sort); do
  check_package "$pkg" "${libs[$pkg]}" "${libs[$pkg]# } ←${users[$pkg]}" || fail=1
done
[[ $fail -eq 0 ]] && echo "licence-check: no GPL-only library in ${#files[@]} files"
exit $fail
