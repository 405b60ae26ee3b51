#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The signal mechanism in sandboxes that refuse ways of sending a signal,
# besides membarrier(2) (ENOSYS): the library must probe, at setup, the
# system call its barriers send with, so that a refusal leads to another
# mechanism rather than to an abort at the first barrier.
#  - rt_tgsigqueueinfo(2) refused: the signal mechanism (its barriers use
#    tgkill(2)), and the litmus test finds no forbidden outcome.
#  - tgkill(2) refused too: no signal can be sent, the library takes the
#    fence mechanism, and the litmus test finds no forbidden outcome.
# SANDBOX_ROUNDS (2000) litmus rounds each: about 1 s.
set -u
litmus=${top_builddir:-.}/tests/litmus
seccomp=${top_builddir:-.}/tests/seccomp-run
rounds=${SANDBOX_ROUNDS:-2000}
n=0 failed=0
. "${top_srcdir:-.}/tests/emulator.sh"

echo "1..4"
# check WHAT PATTERN command...: exits 0 and prints PATTERN.
check() {
	n=$((n + 1)); what=$1; pattern=$2; shift 2
	if [ -n "$no_seccomp" ]; then echo "ok $n - $what # SKIP $no_seccomp"; return; fi
	out=$("$@" 2>&1); rc=$?
	printf '%s\n' "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q -- "$pattern"; then echo "ok $n - $what"
	else echo "not ok $n - $what (exit $rc)"; failed=1; fi
}

check "rt_tgsigqueueinfo refused: the signal mechanism" "^Heavy barrier: signal" \
	env -u LIBMEMBARRIER_HEAVY "$seccomp" --refuse-sigqueue ENOSYS $emu "$info"
check "rt_tgsigqueueinfo refused: no r1 == r2 == 0 in $rounds rounds of the signal mechanism" \
	"heavy=signal.*forbidden=0" \
	env -u LIBMEMBARRIER_HEAVY "$seccomp" --refuse-sigqueue ENOSYS $emu "$litmus" \
	--rounds "$rounds" --expect none
check "tgkill refused too: the fence mechanism" "^Heavy barrier: fence" \
	env -u LIBMEMBARRIER_HEAVY "$seccomp" --refuse-sigqueue --refuse-tgkill ENOSYS $emu "$info"
check "tgkill refused too: no r1 == r2 == 0 in $rounds rounds of fences" \
	"heavy=fence.*forbidden=0" \
	env -u LIBMEMBARRIER_HEAVY "$seccomp" --refuse-sigqueue --refuse-tgkill ENOSYS $emu "$litmus" \
	--rounds "$rounds" --expect none
exit $failed
