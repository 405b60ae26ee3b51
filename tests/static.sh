#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# libmembarrier.a as a user links it: tests/static-link.c built -static
# with the flags of pkg-config --static (libmembarrier.pc, its libdir and
# includedir pointed at the build tree), then run twice, as it comes and
# with the signal mechanism (LIBMEMBARRIER_HEAVY=signal: its handler and
# thread listing in a static program).  The program checks
# that the constructor ran before main() and that the library's internal
# names are not the program's.  A cross build runs it under
# TEST_EMULATOR; without one, it is linked only.  The sanitizers' runtimes
# do not link -static: there the program links libmembarrier.a and the
# C library's shared object.
set -u
: "${CC:=cc}"
b=$(cd "${top_builddir:-.}" && pwd) || exit 99
src=${top_srcdir:-.}
emu=${TEST_EMULATOR:-}	# a static program needs none of tests/emulator.sh
lib=$b/libmembarrier/libmembarrier.a
[ -e "$lib" ] || { echo "Bail out! $lib not built"; exit 99; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() {	# ok STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; failed=1; fi
}

# In the build tree libmembarrier/ holds the archive and the header (the
# shared library is in .libs/): -lmembarrier finds the archive.
if [ -n "${PKG_CONFIG:-}" ]; then
	flags=$(PKG_CONFIG_PATH=$b/libmembarrier${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
		$PKG_CONFIG --define-variable=libdir="$b/libmembarrier" \
		--define-variable=includedir="$b/libmembarrier" \
		--static --cflags --libs libmembarrier) ||
		{ echo "Bail out! pkg-config --static --cflags --libs libmembarrier failed"; exit 99; }
	echo "# pkg-config --static: $flags"
else
	flags="-I$b/libmembarrier $lib -lpthread"
	echo "# no pkg-config (configure's PKG_CONFIG): $flags"
fi
static=-static
if [ -n "${SAN_FLAGS:-}" ]; then
	static=
	echo "# $SAN_FLAGS: the sanitizers' runtimes do not link -static; the C library's shared object instead"
fi
# shellcheck disable=SC2086 # lists of words
out=$($CC ${SAN_FLAGS:-} $static -std=c11 -O2 -Wall -Wextra -Werror -pthread -I"$src/tests" \
	-o "$tmp/static-link" "$src/tests/static-link.c" $flags 2>&1)
ok $? "tests/static-link.c links${static:+ -static} with libmembarrier.a"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /'

run() {	# run TAG [VAR=VALUE...]: the program's checks, each tagged
	tag=$1
	shift
	# shellcheck disable=SC2086 # $emu: a command and its arguments
	out=$(env "$@" $emu "$tmp/static-link" 2>&1)
	rc=$?
	printf '%s\n' "$out" | awk -v tag="[$tag] " '
		/^1\.\.[0-9]+/ { next }
		/^ok - / { sub(/^ok - /, "ok - " tag) }
		/^not ok - / { sub(/^not ok - /, "not ok - " tag) }
		{ print }'
	n=$((n + $(printf '%s\n' "$out" | grep -Ec '^(not )?ok - ')))
	printf '%s\n' "$out" | grep -q '^not ok - ' && failed=1
	ok $rc "[$tag] exited $rc"
}
if [ ! -x "$tmp/static-link" ]; then
	echo "Bail out! no program to run"
	exit 1
elif [ -z "$emu" ] && [ "$($CC -dumpmachine | cut -d- -f1)" != "$(uname -m)" ]; then
	n=$((n + 1))
	echo "ok - run # SKIP a cross build without TEST_EMULATOR"
else
	run auto -u LIBMEMBARRIER_HEAVY
	run signal LIBMEMBARRIER_HEAVY=signal
fi
echo "1..$n"
exit $failed
