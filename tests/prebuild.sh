#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The builds of tests/run-all.sh, one after the other: prebuild.sh NAME...
# configures each (--enable-werror) into _build/NAME and compiles the
# library, the tools and the test programs there (make, make check
# TESTS=), then writes "STATUS SECONDS" to _build/NAME.built (last, and
# whole: run-all.sh waits for that file) and the output to
# _build/NAME.build.log.  It runs no test.
#
# NAME is default, asan-ubsan, tsan, i386, or a Debian architecture of
# triplet() below: cross-built with Debian's gcc-<triplet> and
# libc6-dev-<arch>-cross, whose tests run under qemu-user where one is
# named (configure's TEST_EMULATOR; tests/emulator.sh says what qemu-user
# cannot do, and skips it).  M32_RUNS=yes: this kernel executes 32-bit x86
# programs, so the i386 build's tests run natively, not under qemu-i386.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 99

triplet() {
	case $1 in
	arm64) echo aarch64-linux-gnu qemu-aarch64 ;;
	armhf) echo arm-linux-gnueabihf qemu-arm ;;
	ppc64el) echo powerpc64le-linux-gnu qemu-ppc64le ;;
	s390x) echo s390x-linux-gnu qemu-s390x ;;
	armel) echo arm-linux-gnueabi ;;
	i386-cross) echo i686-linux-gnu ;;
	mips64el) echo mips64el-linux-gnuabi64 ;;
	mipsel) echo mipsel-linux-gnu ;;
	riscv64) echo riscv64-linux-gnu ;;
	*) return 1 ;;
	esac
}

# prebuild NAME CONFIGURE-ARGS...
prebuild() {
	name=$1 t=$(date +%s)
	shift
	rm -rf "_build/$name" "_build/$name.built" && mkdir -p "_build/$name" || exit 99
	( cd "_build/$name" && "$top/configure" -q --enable-werror "$@" &&
	  make -s && make -s check TESTS= && rm -f test-suite.log ) \
		>"_build/$name.build.log" 2>&1
	echo $? $(($(date +%s) - t)) >"_build/$name.built.new" &&
		mv "_build/$name.built.new" "_build/$name.built"
}

# The whole host suite as 32-bit i386 code (gcc -m32, gcc-12-multilib, not
# the gcc-multilib package, which conflicts with the cross compilers: all
# it adds is a /usr/include/asm link, and the x86 kernel headers it points
# to serve both word sizes, hence -idirafter).  A kernel built without
# IA32 emulation (some virtual machines' are) cannot execute it: there
# it runs under qemu-i386.
m32="gcc -m32 -idirafter /usr/include/x86_64-linux-gnu"

for name in "$@"; do
	case $name in
	default) prebuild default ;;
	asan-ubsan) prebuild asan-ubsan --enable-sanitizers=address,undefined --disable-guest-tests ;;
	tsan) prebuild tsan --enable-sanitizers=thread --disable-guest-tests ;;
	i386)
		if [ "${M32_RUNS:-}" = yes ]; then
			prebuild i386 CC="$m32" --disable-guest-tests
		else
			prebuild i386 --host=i686-linux-gnu CC="$m32" --disable-guest-tests \
				TEST_EMULATOR=qemu-i386
		fi ;;
	*)
		if ! t=$(triplet "$name"); then
			echo "prebuild.sh: no build called $name" >"_build/$name.build.log"
			echo 99 0 >"_build/$name.built"
			continue
		fi
		set -- $t
		if [ -n "${2:-}" ]; then
			prebuild "$name" --host="$1" --disable-guest-tests TEST_EMULATOR="$2 -L /usr/$1"
		else
			prebuild "$name" --host="$1" --disable-guest-tests
		fi ;;
	esac
done
