#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every EXAMPLES program in the manual pages, marked the man-pages way
# (.\" SRC BEGIN (name.c) ... .\" SRC END), is extracted, compiled
# warning-free against the build tree's <membarrier.h> and library, and
# run: it must exit 0.  The examples therefore cannot rot, and they work
# both with the kernel's membarrier(2) and in the library's fallbacks.
set -u
: "${CC:=cc}"
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
libdir=$top_builddir/libmembarrier/.libs
tmp=$(mktemp -d) || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

# Turn the roff between the markers back into C: drop .EX/.EE and
# comments, and undo the escapes the pages use in code (\e, \-, \&).
extract() {	# extract PAGE NAME
	sed -n "/^\.\\\\\" SRC BEGIN ($2)\$/,/^\.\\\\\" SRC END\$/p" "$1" |
	sed -e '/^\.\\"/d' -e '/^\.EX$/d' -e '/^\.EE$/d' \
	    -e 's/^\\&$//' -e 's/\\-/-/g' -e 's/\\e/\\/g'
}

list=$(grep -H '^\.\\" SRC BEGIN (' "$top_srcdir"/man/man?/*.[1-8] |
	sed 's/^\([^:]*\):\.\\" SRC BEGIN (\(.*\))$/\1 \2/')
count=$(printf '%s\n' "$list" | grep -c .)
if [ "$count" -eq 0 ]; then
	echo "Bail out! no SRC BEGIN marker in $top_srcdir/man"
	exit 1
fi
echo "1..$((count * 2))"

n=0 failed=0
# SAN_FLAGS: a sanitizer build's library needs its runtime in the program.
cflags="-Wall -Wextra -Wstrict-prototypes -Werror ${SAN_FLAGS:-}"
printf '%s\n' "$list" | {
while read -r page name; do
	prog=$tmp/${name%.c}
	extract "$page" "$name" > "$tmp/$name"
	n=$((n + 1))
	if out=$($CC $cflags -I"$top_builddir/libmembarrier" -o "$prog" "$tmp/$name" \
		 -L"$libdir" -lmembarrier -lpthread 2>&1); then
		echo "ok $n - $name from $(basename "$page") compiles"
	else
		echo "not ok $n - $name from $(basename "$page") compiles"
		printf '%s\n' "$out" | sed 's/^/# /'
		failed=1
	fi
	n=$((n + 1))
	if [ ! -x "$prog" ]; then
		echo "not ok $n - $name runs (not built)"
		failed=1
		continue
	fi
	# A cross build's programs run under TEST_EMULATOR (configure).
	out=$(LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ${TEST_EMULATOR:-} \
		"$prog" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok $n - $name runs"
	else
		echo "not ok $n - $name runs (exit $rc)"
		failed=1
	fi
	printf '%s\n' "$out" | sed 's/^/# /'
done
exit $failed
}
