#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# <membarrier.h> compiles on its own as C99, C11 and C++, warning-free.
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
	       MEMBARRIER_CMD_GET_REGISTRATIONS + MEMBARRIER_CMD_SHARED_EXPEDITED +
	       (membarrier_mechanism_name(st.heavy) != 0);
}
EOC
cp "$tmp/use.c" "$tmp/use.cc"
n=0 failed=0
echo "1..5"
try() {
	n=$((n + 1)); what=$1; shift
	if out=$("$@" 2>&1); then echo "ok $n - $what"
	else echo "not ok $n - $what"; echo "$out" | sed 's/^/# /'; failed=1; fi
}
w="-Wall -Wextra -Werror -pedantic-errors"
try "C99"   $CC  -std=c99   $w -I"$inc" -c "$tmp/use.c"  -o "$tmp/c99.o"
try "C11"   $CC  -std=c11   $w -I"$inc" -c "$tmp/use.c"  -o "$tmp/c11.o"
try "gnu89" $CC  -std=gnu89 -Wall -Wextra -Werror -I"$inc" -c "$tmp/use.c" -o "$tmp/gnu89.o"
try "C++11" $CXX -std=c++11 $w -I"$inc" -c "$tmp/use.cc" -o "$tmp/cxx11.o"
try "C++17" $CXX -std=c++17 $w -I"$inc" -c "$tmp/use.cc" -o "$tmp/cxx17.o"
exit $failed
