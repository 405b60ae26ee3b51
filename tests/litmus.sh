#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The store-buffering litmus test for every mechanism this host offers,
# and the control that shows the test can fail.  The signal mechanism
# the fallback takes runs with a third thread creating and joining
# short-lived threads all along (--churn), so /proc/self/task changes
# under the heavy side; its control runs that way too.  LITMUS_ROUNDS
# overrides the round count (sanitizer builds run fewer),
# LITMUS_CHURN_ROUNDS that of the signal mechanism, LITMUS_CONTROL_ROUNDS
# that of a control batch; the default is 10^6 for each.
set -u
litmus=${top_builddir:-.}/tests/litmus
seccomp=${top_builddir:-.}/tests/seccomp-run
rounds=${LITMUS_ROUNDS:-1000000}
# The control is cheap (no system call) and must find the reordering even
# on a loaded machine: batches of 10^6 rounds, where it found 7 to 1236
# forbidden outcomes on a 2-CPU virtual machine (tests/litmus.c, jitter()).
control_rounds=${LITMUS_CONTROL_ROUNDS:-1000000}
# GLOBAL waits for an RCU grace period (milliseconds) per call.
global_rounds=${LITMUS_GLOBAL_ROUNDS:-300}
# The signal mechanism with thread churn: qemu-user keeps about 0.3 MB
# of every thread a program ever started (2911 threads, 0.8 GB, in 2 * 10^4
# rounds under qemu-aarch64), so emulated runs take fewer rounds.  With
# churn, a round of the mechanism signals every thread alive, the
# short-lived ones too: what a quiet process needs is a subset of it, so
# the fallback runs its 10^6 rounds with churn only.
churn_rounds=${LITMUS_CHURN_ROUNDS:-$rounds}
# EPERM leads to the same signal mechanism as ENOSYS, which gets the full
# count; only the probe differs there (tests/fallback, tests/errno-table).
# Its run adds the eight callers whose heavy barriers thread A's share:
# the signal mechanism's calls are long, so A waits for one more often.
eperm_rounds=$((rounds / 50))
# Threads that call membarrier_heavy() beside the store-buffering pair,
# so that the pair's heavy barrier is shared with theirs (coalesce.c).  At
# full strength the runs must show shared calls (tests/litmus.c).
callers=8
shared= cut=
[ "$rounds" -lt 1000000 ] || shared=--expect-shared cut=--expect-cut
n=0 failed=0
. "${top_srcdir:-.}/tests/emulator.sh"

echo "1..9"
# A control may find nothing in one batch while the machine keeps the two
# threads from leaving the rendezvous together (it happened: 3 forbidden
# outcomes in 5 * 10^6 rounds with churn, 18777 without, in one CI run;
# millions in others): up to 5 batches, each printed.
control() {
	for try in 1 2 3 4 5; do
		"$@" && return 0
		echo "control batch $try found no r1 == r2 == 0"
	done
	return 1
}
check() {
	what=$1; shift
	n=$((n + 1))
	if [ "$1" = sandboxed ]; then
		shift
		if [ -n "$no_seccomp" ]; then echo "ok $n - $what # SKIP $no_seccomp"; return; fi
	fi
	out=$("$@" 2>&1); rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ]; then echo "ok $n - $what"; else echo "not ok $n - $what"; failed=1; fi
}

check "control (compiler barriers only, $callers heavy callers) finds r1 == r2 == 0" \
	control env -u LIBMEMBARRIER_HEAVY $emu "$litmus" --control --callers $callers \
	--rounds "$control_rounds" --expect some
check "control with thread churn finds r1 == r2 == 0" \
	control env -u LIBMEMBARRIER_HEAVY $emu "$litmus" --control --churn --rounds "$control_rounds" --expect some
check "native mechanism, shared with $callers heavy callers: no r1 == r2 == 0 in $rounds rounds" \
	env -u LIBMEMBARRIER_HEAVY $emu "$litmus" --callers $callers $shared --rounds "$rounds" \
	--expect none
if [ -z "$no_seccomp" ]; then
	check "seccomp-forced ENOSYS, signal fallback, thread churn: none in $churn_rounds rounds" \
		env -u LIBMEMBARRIER_HEAVY "$seccomp" ENOSYS $emu "$litmus" --churn \
		--rounds "$churn_rounds" --expect none
else
	# Without a sandbox, the fallback's mechanism still runs, asked for.
	check "LIBMEMBARRIER_HEAVY=signal (the fallback's; $no_seccomp), thread churn: none in $churn_rounds rounds" \
		env LIBMEMBARRIER_HEAVY=signal $emu "$litmus" --churn --rounds "$churn_rounds" \
		--expect none
fi
check "seccomp-forced EPERM, signal fallback, shared with $callers heavy callers: none in $eperm_rounds rounds" \
	sandboxed env -u LIBMEMBARRIER_HEAVY $emu "$seccomp" EPERM $emu "$litmus" \
	--callers $callers $shared --rounds "$eperm_rounds" --expect none
# Waiters whose runner is slow make calls of their own (coalesce.c): the
# same runs with every wait cut short at once (tests/litmus.c --impatient);
# at full strength some waits must have been cut (865 natively in 2 * 10^5
# rounds here, so 10^5 rounds are run; distcheck's 4000 rounds had none).
impatient_rounds=$((rounds / 10))
check "native mechanism, $callers heavy callers, every wait cut short: none in $impatient_rounds rounds" \
	env -u LIBMEMBARRIER_HEAVY $emu "$litmus" --callers $callers --impatient $cut \
	--rounds "$impatient_rounds" --expect none
check "seccomp-forced EPERM, signal fallback, $callers heavy callers, every wait cut short: none in $eperm_rounds rounds" \
	sandboxed env -u LIBMEMBARRIER_HEAVY $emu "$seccomp" EPERM $emu "$litmus" \
	--callers $callers --impatient $cut --rounds "$eperm_rounds" --expect none
check "LIBMEMBARRIER_HEAVY=fence: none in $rounds rounds" \
	env LIBMEMBARRIER_HEAVY=fence $emu "$litmus" --rounds "$rounds" --expect none
check "LIBMEMBARRIER_HEAVY=global (RCU grace period): none in $global_rounds rounds" \
	env LIBMEMBARRIER_HEAVY=global $emu "$litmus" --rounds "$global_rounds" --expect none
exit $failed
