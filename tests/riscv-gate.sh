#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# On riscv64, MEMBARRIER_CMD_PRIVATE_EXPEDITED is a process-wide barrier
# only from Linux 6.9 and 6.6.51 (the full barrier in switch_mm()): on
# older releases membarrier_heavy() uses another mechanism and
# membarrier-info says why.  The release is qemu-user's (QEMU_UNAME), so
# this runs in the riscv64 cross build under qemu-riscv64 (tests/run-all.sh);
# elsewhere there is no riscv64 kernel release to pretend.
set -u
. "${top_srcdir:-.}/tests/emulator.sh"
case $(${CC:-cc} -dumpmachine) in
riscv64*) ;;
*) echo "1..0 # SKIP riscv64 only: this build is for $(${CC:-cc} -dumpmachine)"; exit 0 ;;
esac
if [ -z "$emu" ]; then
	echo "1..0 # SKIP the release is set through qemu-user (QEMU_UNAME): run with TEST_EMULATOR"
	exit 0
fi
n=0 failed=0
echo "1..7"
check() {
	release=$1 want=$2
	n=$((n + 1))
	out=$(QEMU_UNAME=$release $emu "$info" 2>&1); rc=$?
	heavy=$(printf '%s\n' "$out" | sed -n 's/^Heavy barrier: //p')
	why=$(printf '%s\n' "$out" | grep -c '^Not used: MEMBARRIER_CMD_PRIVATE_EXPEDITED (Linux '"$release"': .*switch_mm')
	case $want in
	private-expedited) [ "$heavy" = private-expedited ] && [ "$why" = 0 ] ;;
	*) [ "$heavy" != private-expedited ] && [ -n "$heavy" ] && [ "$why" = 1 ] ;;
	esac
	if [ $? -eq 0 ] && [ $rc -eq 0 ]; then echo "ok $n - Linux $release: $heavy"
	else echo "not ok $n - Linux $release: heavy '$heavy', want $want, reason given $why (exit $rc)"
		failed=1; printf '%s\n' "$out" | sed 's/^/# /'; fi
}
check 6.1.192 other
check 6.6.50 other
check 6.6.51 private-expedited
check 6.8.12 other
check 6.9.0 private-expedited
check 6.12.57 private-expedited
check 7.0.1 private-expedited
exit $failed
