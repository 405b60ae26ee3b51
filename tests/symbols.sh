#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The library exports exactly the version script's symbols, each in a
# version node of the script (LIBMEMBARRIER_1.0, LIBMEMBARRIER_1.1), and its SONAME is libmembarrier.so.1.  It needs no
# libatomic: no undefined __atomic_* symbol (its state words are lock-free
# on every Debian architecture, i386 included).  The static library
# libmembarrier.a is one object (a static link that uses any of it links
# the constructor too) that defines the same global symbols, and no other
# (on MIPS, also the internal lmb_* ones: configure.ac says why).
set -u
# A cross build's binutils (configure's NM and OBJDUMP) read its library.
: "${NM:=nm}" "${OBJDUMP:=objdump}"
lib=${top_builddir:-.}/libmembarrier/.libs/libmembarrier.so.1
map=${top_srcdir:-.}/libmembarrier/libmembarrier.sym
echo "1..6"
[ -e "$lib" ] || { echo "Bail out! $lib not built"; exit 99; }
want=$(sed -n 's/^[[:space:]]*\([a-z_][a-z_0-9]*\);$/\1/p' "$map" | sort)
nodes=$(sed -n 's/^\(LIBMEMBARRIER_[0-9.]*\) {$/\1/p' "$map")
have=$($NM -D --defined-only "$lib" | awk '$3 !~ /^LIBMEMBARRIER_[0-9.]*$/ {print $3}' | sed 's/@.*//' | sort)
if [ "$want" = "$have" ]; then echo "ok 1 - exports are the version script's"
else echo "not ok 1 - exports differ from the version script"
	diff -u /dev/fd/3 /dev/fd/4 3<<E 4<<F | sed 's/^/# /'
$want
E
$have
F
fi
# Each export in the node the script gives it.
bad=
for node in $nodes; do
	syms=$(sed -n "/^$node {/,/^}/s/^[[:space:]]*\([a-z_][a-z_0-9]*\);$/\1/p" "$map")
	for sym in $syms; do
		$NM -D --defined-only "$lib" | awk '{print $3}' | grep -qx "$sym@@$node" ||
			bad="$bad $sym@@$node"
	done
done
if [ -z "$bad" ] && [ -n "$nodes" ]; then echo "ok 2 - every export is in its version node:" $nodes
else echo "not ok 2 - exports not in their version node:$bad"; fi
soname=$($OBJDUMP -p "$lib" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" = libmembarrier.so.1 ]; then echo "ok 3 - SONAME $soname"
else echo "not ok 3 - SONAME '$soname'"; fi
atomics=$($NM -D --undefined-only "$lib" | awk '$2 ~ /^__atomic_/ {print $2}')
if [ -z "$atomics" ] && ! $OBJDUMP -p "$lib" | grep -q 'NEEDED.*libatomic'
then echo "ok 4 - no libatomic: no undefined __atomic_ symbol"
else echo "not ok 4 - needs libatomic:" $atomics; fi
a=${top_builddir:-.}/libmembarrier/libmembarrier.a
members=$($NM "$a" 2>&1 | sed -n 's/^\(.*\):$/\1/p')
if [ "$(printf '%s\n' "$members" | grep -c .)" = 1 ]; then echo "ok 5 - libmembarrier.a is one object: $members"
else echo "not ok 5 - libmembarrier.a is not one object:" $members; fi
# ASan adds an indicator of its one-definition-rule check for each
# exported object (__odr_asan.NAME).
globals=$($NM -g --defined-only "$a" 2>&1 | awk 'NF == 3 && $3 !~ /^__odr_asan\./ {print $3}' | sort)
case $(${CC:-cc} -dumpmachine) in
mips*) globals=$(printf '%s\n' "$globals" | grep -v '^lmb_'); mips=" and internal lmb_* (MIPS)" ;;
*) mips= ;;
esac
if [ "$want" = "$globals" ]; then echo "ok 6 - libmembarrier.a's global symbols are the exports$mips"
else echo "not ok 6 - libmembarrier.a's global symbols differ from the exports"
	diff -u /dev/fd/3 /dev/fd/4 3<<E 4<<F | sed 's/^/# /'
$want
E
$globals
F
fi
