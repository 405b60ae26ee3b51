# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the host test scripts: how to run this build's programs.  A
# cross build's make check runs them under configure's TEST_EMULATOR (e.g.
# "qemu-aarch64 -L /usr/aarch64-linux-gnu"), as $emu, which runs no shell
# script: there $info is membarrier-info's real program (.libs/, not the
# libtool wrapper), finding the library by LD_LIBRARY_PATH.  qemu-user
# refuses seccomp filters (they would filter the emulator's own system
# calls): there $no_seccomp says so and the sandboxed checks are skipped
# with it.  Natively it stays empty and a refusal fails those checks.
emu=${TEST_EMULATOR:-}
no_seccomp=
info=${top_builddir:-.}/tools/membarrier-info
if [ -n "$emu" ]; then
	lmb_build=$(cd "${top_builddir:-.}" && pwd)
	info=$lmb_build/tools/.libs/membarrier-info
	LD_LIBRARY_PATH=$lmb_build/libmembarrier/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	$emu "$lmb_build/tests/seccomp-run" ENOSYS true 2>/dev/null
	[ $? != 77 ] || no_seccomp="seccomp filters are refused under TEST_EMULATOR (qemu-user)"
fi
