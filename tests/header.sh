#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# <membarrier.h> compiles on its own as C89, C99, C11 and C++, with gcc
# and clang, warning-free; against the oldest <linux/membarrier.h> (Linux
# 4.3: no command but QUERY and SHARED); and in a program with its own
# static membarrier() (LIBMEMBARRIER_NO_MEMBARRIER_DECL, as liburcu needs).
set -u
: "${CC:=cc}" "${CXX:=c++}"
inc=${top_builddir:-.}/libmembarrier
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/use.c" <<'EOC'
#include <membarrier.h>
int use(void);
int use(void)
{
	struct membarrier_strategy st;
	membarrier_light();
	(membarrier_light)();
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		return -1;
	return membarrier(MEMBARRIER_CMD_QUERY, 0, 0) + membarrier_heavy() +
	       MEMBARRIER_CMD_GLOBAL + MEMBARRIER_CMD_SHARED + MEMBARRIER_CMD_GLOBAL_EXPEDITED +
	       MEMBARRIER_CMD_PRIVATE_EXPEDITED + MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE +
	       MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ + MEMBARRIER_CMD_FLAG_CPU +
	       MEMBARRIER_CMD_GET_REGISTRATIONS + MEMBARRIER_CMD_SHARED_EXPEDITED +
	       (membarrier_mechanism_name(st.heavy) != 0);
}
EOC
cp "$tmp/use.c" "$tmp/use.cc"
# Linux 4.3's <linux/membarrier.h>, in a directory searched first.
mkdir -p "$tmp/old/linux"
cat > "$tmp/old/linux/membarrier.h" <<'EOC'
#ifndef _UAPI_LINUX_MEMBARRIER_H
#define _UAPI_LINUX_MEMBARRIER_H
enum membarrier_cmd {
	MEMBARRIER_CMD_QUERY = 0,
	MEMBARRIER_CMD_SHARED = (1 << 0),
};
#endif
EOC
cat > "$tmp/own.c" <<'EOC'
#define _GNU_SOURCE
#define LIBMEMBARRIER_NO_MEMBARRIER_DECL
#include <membarrier.h>
#include <unistd.h>
#include <sys/syscall.h>
static int membarrier(int cmd, unsigned int flags, int cpu_id)
{
	return (int)syscall(__NR_membarrier, cmd, flags, cpu_id);
}
int use(void);
int use(void)
{
	membarrier_light();
	return membarrier(MEMBARRIER_CMD_QUERY, 0, 0) + membarrier_heavy();
}
EOC
# LIBMEMBARRIER_LIGHT_COMPILER_BARRIER: membarrier_light() reads no flag,
# and the object calls the start-up check from a constructor.
cat > "$tmp/optin.c" <<'EOC'
#define LIBMEMBARRIER_LIGHT_COMPILER_BARRIER 1
#include <membarrier.h>
int use(int *p);
int use(int *p)
{
	p[0] = 1;
	membarrier_light();
	return p[1];
}
EOC
cp "$tmp/optin.c" "$tmp/optin.cc"
optin() {
	"$@" || return 1
	syms=$(${NM:-nm} "$tmp/optin.o") || return 1
	echo "$syms" | grep -q ' U membarrier_require_barrier$' &&
		! echo "$syms" | grep -q 'libmembarrier_light_fence' &&
		${OBJDUMP:-objdump} -h "$tmp/optin.o" | grep -q '\.init_array'
}
# clang where this build is native (gcc -m32 included).
clang=
if command -v clang >/dev/null 2>&1 && [ -z "${TEST_EMULATOR:-}" ] &&
	[ "$(${CC%% *} -dumpmachine | cut -d- -f1)" = "$(uname -m)" ]; then
	case $CC in *-m32*) clang="clang -m32" ;; *) clang=clang ;; esac
fi
n=0 failed=0
echo "1..14"
try() {
	n=$((n + 1)); what=$1; shift
	if out=$("$@" 2>&1); then echo "ok $n - $what"
	else echo "not ok $n - $what"; echo "$out" | sed 's/^/# /'; failed=1; fi
}
w="-Wall -Wextra -Werror -pedantic-errors"
try "C89"   $CC  -std=c89   $w -I"$inc" -c "$tmp/use.c"  -o "$tmp/c89.o"
try "C99"   $CC  -std=c99   $w -I"$inc" -c "$tmp/use.c"  -o "$tmp/c99.o"
try "C11"   $CC  -std=c11   $w -I"$inc" -c "$tmp/use.c"  -o "$tmp/c11.o"
try "gnu89" $CC  -std=gnu89 -Wall -Wextra -Werror -I"$inc" -c "$tmp/use.c" -o "$tmp/gnu89.o"
try "C++11" $CXX -std=c++11 $w -I"$inc" -c "$tmp/use.cc" -o "$tmp/cxx11.o"
try "C++17" $CXX -std=c++17 $w -I"$inc" -c "$tmp/use.cc" -o "$tmp/cxx17.o"
try "every command with Linux 4.3's <linux/membarrier.h>" \
	$CC -std=c99 $w -I"$tmp/old" -I"$inc" -c "$tmp/use.c" -o "$tmp/old.o"
# ...and stays static: after the header's extern (and gnu_inline) membarrier(),
# gcc and clang accept "static int membarrier()" silently and emit it as a
# global symbol, which would take the library's place in the program.
own() {
	"$@" && ! ${NM:-nm} "$tmp/own.o" | grep -E ' [A-Z] membarrier$'
}
try "a program's own static membarrier() with LIBMEMBARRIER_NO_MEMBARRIER_DECL" \
	own $CC -std=c99 $w -I"$inc" -c "$tmp/own.c" -o "$tmp/own.o"
try "LIBMEMBARRIER_LIGHT_COMPILER_BARRIER, C11: no flag read, a start-up check" \
	optin $CC -std=c11 $w -O2 -I"$inc" -c "$tmp/optin.c" -o "$tmp/optin.o"
# (Compiled only: a cross build's CXX may be the build machine's g++,
# whose objects the target's nm cannot read.)
try "LIBMEMBARRIER_LIGHT_COMPILER_BARRIER, C++17" \
	$CXX -std=c++17 $w -O2 -I"$inc" -c "$tmp/optin.cc" -o "$tmp/optin-cxx.o"
if [ -n "$clang" ]; then
	try "clang C89" $clang -std=c89 $w -I"$inc" -c "$tmp/use.c" -o "$tmp/clang89.o"
	try "clang C11" $clang -std=c11 $w -I"$inc" -c "$tmp/use.c" -o "$tmp/clang11.o"
	try "clang C++17" ${clang%% *}++ ${clang#clang} -std=c++17 $w -I"$inc" -c "$tmp/use.cc" \
		-o "$tmp/clangxx.o"
	try "clang, own static membarrier()" own $clang -std=c99 $w -I"$inc" -c "$tmp/own.c" \
		-o "$tmp/own.o"
else
	for c in "C89" "C11" "C++17" "own static membarrier()"; do
		n=$((n + 1)); echo "ok $n - clang $c # SKIP no clang for this build ($CC)"
	done
fi
exit $failed
