#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# membarrier-info tells what this machine offers, in each situation.
set -u
seccomp=${top_builddir:-.}/tests/seccomp-run
n=0 failed=0
. "${top_srcdir:-.}/tests/emulator.sh"
echo "1..7"
expect() {
	n=$((n + 1)); what=$1; pattern=$2; shift 2
	if [ "$1" = sandboxed ]; then
		shift
		if [ -n "$no_seccomp" ]; then echo "ok $n - $what # SKIP $no_seccomp"; return; fi
	fi
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q -- "$pattern"; then echo "ok $n - $what"
	else echo "not ok $n - $what (exit $rc)"; failed=1; fi
	printf '%s\n' "$out" | sed 's/^/# /'
}
expect "native: the kernel's commands and the heavy mechanism" \
	"^Heavy barrier: private-expedited" env -u LIBMEMBARRIER_HEAVY $emu "$info"
expect "native: registrations listed" "REGISTER_PRIVATE_EXPEDITED" env -u LIBMEMBARRIER_HEAVY $emu "$info"
expect "ENOSYS: the failure and the emulated commands" \
	"QUERY) failed: Function not implemented" sandboxed $emu "$seccomp" ENOSYS env -u LIBMEMBARRIER_HEAVY $emu "$info"
expect "EPERM: signal mechanism" "^Heavy barrier: signal" sandboxed $emu "$seccomp" EPERM env -u LIBMEMBARRIER_HEAVY $emu "$info"
expect "LIBMEMBARRIER_HEAVY=fence under a killing filter" "^Light barrier: full fence" \
	sandboxed $emu "$seccomp" KILL env LIBMEMBARRIER_HEAVY=fence $emu "$info"
expect "an unknown LIBMEMBARRIER_HEAVY is reported" "^Warning: LIBMEMBARRIER_HEAVY='bogus'" \
	env LIBMEMBARRIER_HEAVY=bogus $emu "$info"
n=$((n + 1))
$emu "$info" --bogus >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then echo "ok $n - a bad option exits 2"; else echo "not ok $n - a bad option exits $rc"; failed=1; fi
exit $failed
