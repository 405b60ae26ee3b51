#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The library is laid out bottom-up, each file one job (libmembarrier/
# sig.h names them): no two of its files call each other, directly or
# round a circle, and no source file is much over 400 lines.  The calls
# are read from the objects the build made: a file calls another when it
# has an undefined symbol that the other defines.
set -u
: "${NM:=nm}"
src=${top_srcdir:-.}/libmembarrier
objdir=${top_builddir:-.}/libmembarrier
echo "1..3"
# The objects of the installed library (init.c, and the rest through
# libmembarrier-internal.la): libtool's PIC objects, or the plain ones of
# a build without shared libraries.
objs=
for d in "$objdir/.libs" "$objdir"; do
	objs=$(ls "$d"/libmembarrier_la-*.o "$d"/libmembarrier_internal_la-*.o 2>/dev/null) &&
		break
	objs=
done
[ -n "$objs" ] || { echo "Bail out! no objects of libmembarrier.la in $objdir"; exit 99; }

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
for o in $objs; do
	f=$(basename "$o" .o)
	f=${f#libmembarrier_la-}
	f=${f#libmembarrier_internal_la-}
	$NM --defined-only "$o" | awk -v f="$f" 'NF == 3 && $2 ~ /[A-Z]/ {print $3, f}' >>"$tmp/defs"
	$NM --undefined-only "$o" | awk -v f="$f" '{print $NF, f}' >>"$tmp/uses"
done
# "caller callee" for each call between two files.
sort -k1,1 "$tmp/defs" >"$tmp/defs.s"
sort -k1,1 "$tmp/uses" >"$tmp/uses.s"
join "$tmp/uses.s" "$tmp/defs.s" | awk '$2 != $3 {print $2, $3}' | sort -u >"$tmp/edges"
nfiles=$(echo "$objs" | wc -l)
nedges=$(wc -l <"$tmp/edges")

if [ "$nedges" -gt 0 ] && tsort "$tmp/edges" >"$tmp/order" 2>"$tmp/loops"; then
	echo "ok 1 - $nfiles files, $nedges calls between them, no circle"
	sed 's/^/# calls: /' "$tmp/edges"
else
	echo "not ok 1 - the calls between files go round a circle ($nedges calls)"
	sed 's/^/# /' "$tmp/loops" "$tmp/edges"
fi

# The same, stated pairwise, so that a failure names both files.
pairs=$(awk '{print $1, $2; print $2, $1}' "$tmp/edges" | sort | uniq -d |
	awk '$1 < $2 {print $1 "<->" $2}')
if [ -z "$pairs" ]; then
	echo "ok 2 - no two files call each other"
else
	echo "not ok 2 - files that call each other:" $pairs
fi

long=
for f in "$src"/*.c "$src"/*.h "$src"/*.h.in; do
	[ -e "$f" ] || continue
	n=$(wc -l <"$f")
	[ "$n" -le 420 ] || long="$long $(basename "$f"):$n"
done
if [ -z "$long" ]; then
	echo "ok 3 - no source file over 420 lines"
else
	echo "not ok 3 - source files over 420 lines:$long"
fi
