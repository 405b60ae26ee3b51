#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every manual page is clean under the checkers that man-pages and Debian
# use: mandoc's linter, groff with all warnings, the exact man(1) command
# of lintian's groff-message tag, and lexgrog (lintian's bad-whatis-entry).
# A missing checker is a failure, not a skip: CI installs them all.
#
# .so stubs are checked as man(1) will read them: from the top of the
# manual tree, so that ".so man3/membarrier.3" resolves.  mandoc's only
# complaint about them, that .so is fragile, is expected: they are the
# upstream form, and dh_installman turns them into symlinks.  man(1)
# reads an installed symlink's preprocessors from its target's first line
# ('\" t: tbl), as it does for the target; groff runs soelim first (-s),
# as man does, so that tbl sees the tables the stub pulls in.  (groff
# 1.23, Debian 13's, warns "tbl preprocessor failed, or it or soelim was
# not run" when a checker reads a stub without them; a reader of the
# installed page does not meet that: debian/tests/manual-pages.)
set -u
mandir=${top_srcdir:-.}/man
cd "$mandir" || { echo "Bail out! no $mandir"; exit 1; }

pages=$(ls man?/*.[1-8] | LC_ALL=C sort)
set -- $pages
echo "1..$(($# * 4))"

n=0 failed=0
report() {	# report CHECKER PAGE OUTPUT
	n=$((n + 1))
	if [ -z "$3" ]; then
		echo "ok $n - $1 $2"
	else
		echo "not ok $n - $1 $2"
		printf '%s\n' "$3" | sed 's/^/# /'
		failed=1
	fi
}
need() {	# need TOOL: the message if it is missing
	command -v "$1" >/dev/null 2>&1 || echo "$1 is not installed"
}

for page in "$@"; do
	out=$(need mandoc)
	[ -n "$out" ] || out=$(mandoc -Tlint -W warning "$page" 2>&1 |
		grep -v 'WARNING: \.so is fragile, better use ln(1): so man[1-8]/')
	report mandoc "$page" "$out"

	# groff -t would hide a page whose table man(1) never hands to tbl:
	# a page with a table must ask for tbl on its first line ('\" t).
	out=$(need groff)
	[ -n "$out" ] || out=$(groff -s -t -man -ww -z "$page" 2>&1)
	if grep -q '^\.TS' "$page" && ! sed -n 1p "$page" | grep -q "^'\\\\\" [a-z]*t"; then
		out="$out${out:+
}a table (.TS) but no '\\\" t on the first line: man(1) would not run tbl"
	fi
	report groff "$page" "$out"

	# A stub: its target's preprocessors, as man reads them through the
	# installed symlink.
	target=$(sed -n '1s/^\.so[[:space:]]\{1,\}//p' "$page")
	pp=
	[ -z "$target" ] || pp=$(sed -n "1s/^'\\\\\" //p" "$target")
	out=$(need man)
	[ -n "$out" ] || out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man ${pp:+-p "$pp"} --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	report man "$page" "$out"

	# whatis needs "name, name \- description", and every page's own
	# name must be among the names.
	out=$(need lexgrog)
	if [ -z "$out" ]; then
		name=$(basename "$page"); name=${name%.*}
		what=$(lexgrog "$page" 2>&1) ||
			out="lexgrog failed: $what"
		[ -n "$out" ] || printf '%s\n' "$what" | grep -q ": \"$name - " ||
			out="no whatis entry for $name: $what"
	fi
	report lexgrog "$page" "$out"
done
exit $failed
