#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The signal mechanism in a PID namespace whose /proc belongs to another
# one (unshare --pid --fork, without --mount-proc: a container that kept
# the host's /proc).  procfs shows pids as its own namespace numbers them:
# there /proc/self is a link to the process's pid in the PARENT namespace
# (readlink /proc/self prints e.g. 25838 while getpid() says 4), and
# /proc/self/task lists the threads' parent-namespace tids, none of which
# is the caller's gettid().  Signalling those numbers from inside would
# reach no thread of ours (ESRCH, or another thread that has that number
# here), so membarrier_heavy() would be no barrier.  The library must see
# that its own tid is missing and choose "fence" even when
# LIBMEMBARRIER_HEAVY=signal asks for signals; light stays a fence, and
# the litmus test passes.  The control, with the namespace's own /proc
# (--mount-proc), gets the signal mechanism.  Needs root (unshare); skips
# without it or where unshare(CLONE_NEWPID) is refused, and skips the
# control alone where --mount-proc is refused (a chroot).
set -u
litmus=${top_builddir:-.}/tests/litmus
n=0 failed=0
. "${top_srcdir:-.}/tests/emulator.sh"

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root for unshare --pid"
	exit 77
fi
if ! err=$(unshare --pid --fork true 2>&1); then
	echo "1..0 # SKIP unshare --pid --fork refused: $err"
	exit 77
fi

echo "1..5"
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}

# What /proc shows in the namespace, as one shell (pid 2 there) sees it
# without forking: the premise of the tests below.  Outside a namespace
# the three numbers agree.
proc_view='cd /proc/self && echo ns-pid $$ proc-self $(pwd -P) && cd task && echo tasks *'
out=$(unshare --pid --fork sh -c 'sh -c "$1"' sh "$proc_view" 2>&1)
printf '%s\n' "$out" | sed 's/^/# /'
set -- $out
[ $# = 6 ] && [ "$1" = ns-pid ] && [ "$5" = tasks ] && [ "$4" != "/proc/$2" ] &&
	[ "$4" = "/proc/$6" ]
ok $? "in the namespace /proc/self is the parent namespace's pid, and task/ lacks getpid()"

# The program runs as pid 2 under sh, not as the namespace's init (pid 1
# ignores signals it has no handler for, abort()'s SIGABRT included).
out=$(unshare --pid --fork sh -c 'env LIBMEMBARRIER_HEAVY=signal $TEST_EMULATOR "$1"; echo "exit $?"' sh \
	"$info" 2>&1)
printf '%s\n' "$out" | sed 's/^/# /'
printf '%s\n' "$out" | grep -q '^exit 0$' &&
	printf '%s\n' "$out" | grep -q '^Heavy barrier: fence' &&
	printf '%s\n' "$out" | grep -q '^Light barrier: full fence'
ok $? "membarrier-info, LIBMEMBARRIER_HEAVY=signal: heavy is fence, light a full fence"

out=$(unshare --pid --fork sh -c \
	'env LIBMEMBARRIER_HEAVY=signal $TEST_EMULATOR "$1" --rounds 100000 --expect none; echo "exit $?"' sh \
	"$litmus" 2>&1)
printf '%s\n' "$out" | sed 's/^/# /'
printf '%s\n' "$out" | grep -q 'heavy=fence light=fence'
ok $? "litmus, LIBMEMBARRIER_HEAVY=signal: the library chose fences"
printf '%s\n' "$out" | grep -q '^exit 0$'
ok $? "litmus, LIBMEMBARRIER_HEAVY=signal: none in 100000 rounds"

# The control: the namespace's own /proc lists our tids; signals work.
# --mount-proc needs a mount namespace whose / unshare can make private:
# in a chroot (a package build's, sbuild's schroot backend) / is no mount
# point and unshare says "cannot change root filesystem propagation:
# Invalid argument".  That environment cannot give the control: said and
# skipped, not failed, for that reason only; any other refusal fails it,
# as does this one where the control must run (LIBMEMBARRIER_REQUIRE_GUEST=1:
# tests/run-all.sh, on the host).
if ! err=$(unshare --pid --fork --mount-proc true 2>&1) &&
	[ "${LIBMEMBARRIER_REQUIRE_GUEST:-}" != 1 ] &&
	printf '%s\n' "$err" | grep -q 'cannot change root filesystem propagation'; then
	n=$((n + 1))
	echo "ok $n - control, own /proc (--mount-proc) # SKIP unshare refused it here (a chroot): $(printf '%s\n' "$err" | head -n 1)"
	exit $failed
fi
out=$(unshare --pid --fork --mount-proc sh -c 'env LIBMEMBARRIER_HEAVY=signal $TEST_EMULATOR "$1"; echo "exit $?"' \
	sh "$info" 2>&1)
printf '%s\n' "$out" | sed 's/^/# /'
printf '%s\n' "$out" | grep -q '^exit 0$' &&
	printf '%s\n' "$out" | grep -q '^Heavy barrier: signal' &&
	printf '%s\n' "$out" | grep -q '^Light barrier: compiler barrier'
ok $? "control, own /proc (--mount-proc): signal mechanism, light a compiler barrier"
exit $failed
