#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# membarrier-info tells what this machine offers, in each situation.
set -u
info=${top_builddir:-.}/tools/membarrier-info
seccomp=${top_builddir:-.}/tests/seccomp-run
n=0 failed=0
echo "1..7"
expect() {
	n=$((n + 1)); what=$1; pattern=$2; shift 2
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q -- "$pattern"; then echo "ok $n - $what"
	else echo "not ok $n - $what (exit $rc)"; failed=1; fi
	printf '%s\n' "$out" | sed 's/^/# /'
}
expect "native: the kernel's commands and the heavy mechanism" \
	"^Heavy barrier: private-expedited" env -u LIBMEMBARRIER_HEAVY "$info"
expect "native: registrations listed" "REGISTER_PRIVATE_EXPEDITED" env -u LIBMEMBARRIER_HEAVY "$info"
expect "ENOSYS: the failure and the emulated commands" \
	"QUERY) failed: Function not implemented" "$seccomp" ENOSYS env -u LIBMEMBARRIER_HEAVY "$info"
expect "EPERM: signal mechanism" "^Heavy barrier: signal" "$seccomp" EPERM env -u LIBMEMBARRIER_HEAVY "$info"
expect "LIBMEMBARRIER_HEAVY=fence under a killing filter" "^Light barrier: full fence" \
	"$seccomp" KILL env LIBMEMBARRIER_HEAVY=fence "$info"
expect "an unknown LIBMEMBARRIER_HEAVY is reported" "^Warning: LIBMEMBARRIER_HEAVY='bogus'" \
	env LIBMEMBARRIER_HEAVY=bogus "$info"
n=$((n + 1))
"$info" --bogus >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then echo "ok $n - a bad option exits 2"; else echo "not ok $n - a bad option exits $rc"; failed=1; fi
exit $failed
