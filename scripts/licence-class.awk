# SPDX-License-Identifier: Apache-2.0
# The licence of a Debian package's copyright file, for scripts/licence-check.sh. Prints one line
# "CLASS<TAB>LICENCE (WHERE)": CLASS is gpl when the licence is the GPL alone, ok otherwise.
#   awk -v stems="libblkid blkid" -f scripts/licence-class.awk /usr/share/doc/PKG/copyright
# stems: the names of the package's libraries that the binaries load, without "lib" (blkid).
#
# A machine-readable (DEP-5) file: the License of the Files paragraphs whose patterns name one of
# the libraries (a path component such as libblkid/* or lib/ext2fs/*: a source package that
# builds several things says which licence its library has), else of the "Files: *" paragraph
# (the package's own licence; other paragraphs are single files, tests, packaging), else of every
# paragraph. An expression is GPL-only when each alternative ("or") has a GPL or AGPL part ("and",
# ",") with no "with ... exception": LGPL, "GPL-2+ with OpenSSL exception" and "GPL-2+ or MIT"
# are not. Several paragraphs: GPL-only when each one is.
# A free-form file: GPL-only when the text names the GPL and nothing that would allow linking
# with other licences: no LGPL, no exception, no permissive licence (the MIT, BSD, ISC and zlib
# permission texts, MPL, Apache, public domain). This is a reading of prose, so it can err: where
# it does, scripts/licence-check.sh takes a reviewed file from GS_LICENCE_OVERRIDE.

function gpl_only(expr,    alts, n, i, parts, m, j, p, bad) {
    n = split(tolower(expr), alts, / or |\|/)
    for (i = 1; i <= n; i++) {
        m = split(alts[i], parts, / and |,|&/)
        bad = 0
        for (j = 1; j <= m; j++) {
            p = parts[j]
            gsub(/^[ (]+|[ )]+$/, "", p)
            if (p ~ /^a?gpl([-0-9.+ ]|$)/ && p !~ / with /)
                bad = 1
        }
        if (!bad)
            return 0
    }
    return n > 0
}

# Whether a Files pattern names one of the libraries' source directories: a directory named
# "lib" and a stem (libblkid/*, src/libacl/*.c), or a stem right below "lib" (lib/ext2fs/*),
# followed by a glob of its files; or a glob in the last place that reads as such a name (lib*).
# "*" alone names everything and does not count; a single file deeper down (a binding's header
# in contribs/perlapi/libslurm/perl/) is not the library.
function names_library(pattern,    comps, n, i, re, s) {
    n = split(pattern, comps, "/")
    for (i = n - 1; i <= n; i++) {
        if (i < 1 || comps[i] == "*" || comps[i] == "" || (i == n - 1 && comps[n] !~ /\*/) ||
            (i == n && comps[i] !~ /\*/))
            continue
        re = comps[i]
        gsub(/[.+^$(){}|\\]/, "[&]", re)
        gsub(/\*/, ".*", re)
        gsub(/\?/, ".", re)
        for (s in stem) {
            if (("lib" s) ~ ("^" re "$") || (i > 1 && comps[i - 1] == "lib" && s ~ ("^" re "$")))
                return 1
        }
    }
    return 0
}

function end_paragraph(    tok, n, i, star, named) {
    gsub(/^[ \t]+|[ \t]+$/, "", license)
    if (files != "" && license != "") {
        n = split(files, tok, /[ \t]+/)
        star = named = 0
        for (i = 1; i <= n; i++) {
            if (tok[i] == "*")
                star = 1
            else if (tok[i] != "" && names_library(tok[i]))
                named = 1
        }
        if (star)
            main = license
        if (named) {
            own[++owns] = license
            gsub(/[ \t]+/, " ", files)
            where = where (where == "" ? "" : ", ") substr(files, 2)
        }
        all[++count] = license
    }
    files = license = field = ""
}

# GPL-only when every licence in list[1..n] is; prints the verdict with the licences.
function verdict(list, n, what,    i, gpl, seen, text) {
    gpl = n > 0
    text = ""
    for (i = 1; i <= n; i++) {
        if (!gpl_only(list[i]))
            gpl = 0
        if (!(list[i] in seen))
            text = text (text == "" ? "" : "; ") list[i]
        seen[list[i]] = 1
    }
    printf "%s\t%s (%s)\n", gpl ? "gpl" : "ok", text, what
}

function free_form(    t, gpl, lgpl, exc, perm) {
    t = text
    gsub(/[ \t\n]+/, " ", t)
    gpl = t ~ /GNU (Affero )?General Public License|(^|[^L])GPL/
    lgpl = t ~ /(Lesser|Library) General Public License|LGPL/
    exc = tolower(t) ~ /exception/
    perm = t ~ /Permission is hereby granted|Redistribution and use in source and binary forms|Permission to use, copy, modify|[Pp]ublic [Dd]omain|Mozilla Public License|Apache License/
    if (!gpl)
        printf "ok\tno GPL (free-form text)\n"
    else if (lgpl || exc || perm)
        printf "ok\tGPL%s%s%s (free-form text)\n", lgpl ? ", LGPL" : "", exc ? ", an exception" : "",
            perm ? ", a permissive licence" : ""
    else
        printf "gpl\tGPL only (free-form text)\n"
}

BEGIN {
    n = split(stems, tmp, /[ \t]+/)
    for (i = 1; i <= n; i++)
        if (tmp[i] != "")
            stem[tmp[i]] = 1
}
NR == 1 && /^Format:/ { dep5 = 1 }
{ text = text "\n" $0 }
# DEP-5: a paragraph is a run of non-blank lines; continuation lines start with blanks.
dep5 && /^[ \t]*$/ { end_paragraph(); next }
dep5 && /^Files:/ { field = "files"; files = substr($0, 7); next }
dep5 && /^License:/ { if (license == "") license = substr($0, 9); field = "license"; next }
dep5 && /^[ \t]/ && field == "files" { files = files " " $0; next }
dep5 && /^[^ \t]/ { field = "" }
END {
    if (!dep5) {
        free_form()
        exit
    }
    end_paragraph()
    if (owns > 0) {
        if (length(where) > 60)
            where = substr(where, 1, 57) "..."
        verdict(own, owns, "Files: " where)
    } else if (main != "") {
        one[1] = main
        verdict(one, 1, "Files: *")
    } else {
        verdict(all, count, "every Files paragraph")
    }
}
