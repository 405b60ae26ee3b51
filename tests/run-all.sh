#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every test of the project: the Debian packages installed and purged in a
# bookworm chroot, the test suite in a -Werror build (host tests, man-page
# checks, and the guest tests that boot the patched kernels in QEMU), the
# host tests under ASan+UBSan, under TSan and built as 32-bit i386 code
# (gcc -m32, gcc-12-multilib), the library cross-built for every Debian
# architecture and the host tests under qemu-user on four of them, then
# make distcheck.  Builds
# go to _build/, the kernels and the chroot to the cache of kernel/build.sh
# and tests/debian-install.sh.  Ends with a table of how long each stage
# took and "N passed, N failed" summed over all runs.
#
# The tests run one at a time (make check without -j): the litmus tests
# need both threads on a CPU at once, each round, and a kernel build or a
# second QEMU guest beside them on a 2-core machine slows a spin
# rendezvous by orders of magnitude, as do the timing-based guest tests.
# What runs no timed test runs in the background at the idle scheduling
# priority: the builds (tests/prebuild.sh) from the start, stopped while
# a stage that is slowed by them runs (see "The builds" below), and the
# Debian stage, beside the guest tests.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 99
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 status=0
times=
# The guest tests must run here; a missing tool fails them, not skips them.
LIBMEMBARRIER_REQUIRE_GUEST=1; export LIBMEMBARRIER_REQUIRE_GUEST
t0=$(date +%s)
stamp=$t0
# took NAME: add the time since the last stamp to the table.
took() {
	now=$(date +%s)
	times="$times$(printf '%-12s %5ds' "$1" $((now - stamp)))
"
	stamp=$now
}

autoreconf -fi >/dev/null || { echo "autoreconf failed"; echo "0 passed, 1 failed"; exit 1; }

# tally DIR: add DIR's test-suite.log summary to the totals.
tally() {
	log=$1/test-suite.log
	if [ ! -f "$log" ]; then
		echo "== $1: no test-suite.log (the build failed)"
		failed=$((failed + 1))
		return
	fi
	set -- $(awk '/^# PASS:/{p=$3} /^# FAIL:/{f=$3} /^# ERROR:/{e=$3} /^# XPASS:/{x=$3}
		END{print p+0, f+e+x}' "$log")
	passed=$((passed + $1))
	failed=$((failed + $2))
}

# The builds: tests/prebuild.sh configures (--enable-werror) and compiles
# each, library, tools and test programs, into _build/NAME, and writes
# _build/NAME.built when it is done.  Two lanes of them, in the order the
# stages below need them, run from here on under SCHED_IDLE (chrt
# --idle), so they take a CPU only when no stage wants it, each lane a
# process group of its own (setsid) that is stopped (SIGSTOP) while a
# stage runs that they slow all the same: on some machines creating
# processes barely gains from a second CPU (two configure runs at once
# took 24 s, one alone 14 s), so a build beside the Debian guest slowed
# its boot from 71 to 183 s, beside a Debian package build it slowed that
# as well, and beside the host litmus tests it took 13% off their rounds.
# They run beside the kernel builds and the guest tests (whose QEMU
# guests leave a CPU idle about half the time and keep their timing), and
# when a stage waits for one of them (need).
#
# Every Debian release architecture, and riscv64, is cross-built with
# Debian's gcc-<triplet> and libc6-dev-<arch>-cross, warning-free;
# tests/symbols.sh reads each library with the cross binutils (exactly
# the version script's exports, the SONAME, no libatomic) and
# tests/header.sh compiles the header.  Where qemu-user is given
# (tests/prebuild.sh), the whole host suite runs under it (configure's
# TEST_EMULATOR; tests/emulator.sh: what qemu-user cannot do is skipped,
# saying so).
emulated="arm64 armhf ppc64el s390x"
compiled="armel i386-cross mips64el mipsel riscv64"
# The whole host suite also runs as 32-bit i386 code (gcc -m32): natively
# where this kernel executes such programs, else under qemu-i386.
m32="gcc -m32 -idirafter /usr/include/x86_64-linux-gnu"
mkdir -p _build
rm -f _build/*.built
printf 'int main(void) { return 0; }\n' >_build/m32.c
m32_runs=
if $m32 -o _build/m32 _build/m32.c 2>/dev/null && _build/m32 2>/dev/null; then
	m32_runs=yes
fi
M32_RUNS=$m32_runs setsid chrt --idle 0 tests/prebuild.sh \
	default i386 armhf s390x armel mipsel riscv64 >/dev/null 2>&1 &
lane1=$!
M32_RUNS=$m32_runs setsid chrt --idle 0 tests/prebuild.sh \
	asan-ubsan tsan arm64 ppc64el i386-cross mips64el >/dev/null 2>&1 &
lane2=$!
# lanes SIGNAL: SIGNAL to both lanes, every process of each.
lanes() {
	for l in $lane1 $lane2; do
		kill -"$1" -- -"$l" 2>/dev/null
	done
}
# alive PID: whether PID runs (a zombie does not).
alive() {
	read -r _ _ state _ 2>/dev/null <"/proc/$1/stat" && [ "$state" != Z ]
}
# Stopped lanes would outlive this script: whatever ends it, they go.
trap 'lanes CONT; lanes TERM' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
waited=0
# need NAME: wait, with the lanes running, until the build of NAME is
# done (or both lanes are gone).
need() {
	lanes CONT
	w=$(date +%s)
	while [ ! -f "_build/$1.built" ] && { alive "${lane1:-0}" || alive "${lane2:-0}"; }; do
		sleep 1
	done
	waited=$((waited + $(date +%s) - w))
}

# built NAME: whether the build of NAME succeeded (waiting for it); if
# not, it says so and counts a failure.
built() {
	need "$1"
	read -r rc _ 2>/dev/null <"_build/$1.built" && [ "$rc" = 0 ] && return 0
	echo "FAIL: the $1 build (_build/$1.build.log):"
	tail -20 "_build/$1.build.log"
	failed=$((failed + 1)); status=1
	return 1
}

# check [--beside] LABEL NAME TESTS [VAR=VALUE...]: make check in the
# build of NAME with the variables, and TESTS=TESTS unless that is empty
# (make expands it: $(guest_tests) is Makefile.am's list); its summary
# into the totals, its time into the table as LABEL.  The lanes are
# stopped for it, unless --beside.
check() {
	stop=yes
	[ "$1" != --beside ] || { stop=; shift; }
	label=$1 name=$2 tests=$3
	shift 3
	echo "== $label"
	if built "$name"; then
		[ -z "$stop" ] || lanes STOP
		( cd "_build/$name" && env "$@" make -s check ${tests:+TESTS="$tests"} ) \
			|| status=1
		summary "$name"
	fi
	took "$label"
}

# summary NAME: the failures and totals of _build/NAME, into the tally.
summary() {
	grep -E '^(# (TOTAL|PASS|SKIP|FAIL|ERROR):|FAIL:|ERROR:)' "_build/$1/test-suite.log" 2>/dev/null
	tally "_build/$1"
}

# The cache directory is made here, as this user, because kernel/build.sh
# keeps its kernels there too.
cache=${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
mkdir -p _build "$cache"
# root COMMAND...: COMMAND as root.  As a user, under sudo, first run
# while sudo still has the password the README's apt-get line gave it.
root() {
	if [ "$(id -u)" = 0 ] || ! command -v sudo >/dev/null; then
		"$@"
	else
		sudo env LIBMEMBARRIER_REQUIRE_GUEST=1 LIBMEMBARRIER_CACHE="$cache" \
			TMPDIR="${TMPDIR:-/tmp}" "$@"
	fi
}
# root_start NAME [--idle] SCRIPT [VAR=VALUE...]: a TAP script that needs
# root, started in the background (under SCHED_IDLE with --idle), its
# output in _build/NAME.log, its status and seconds in _build/NAME.rc;
# root_pid is its process.  root_report NAME PID waits for it and adds
# its results to the totals; as_root NAME SCRIPT... is the two at once.
root_start() {
	name=$1 idle=
	shift
	[ "$1" != --idle ] || { idle="chrt --idle 0"; shift; }
	script=$1
	shift
	rm -f "_build/$name.rc"
	( t=$(date +%s)
	  root $idle env "$@" "$script" >"_build/$name.log" 2>&1
	  echo $? $(($(date +%s) - t)) >"_build/$name.rc" ) &
	root_pid=$!
}
root_report() {
	name=$1
	echo "== $name"
	wait "$2"
	read -r rc secs 2>/dev/null <"_build/$name.rc" || rc=99 secs=0
	grep -E '^(not ok|Bail out!)' "_build/$name.log"
	set -- $(awk '/^ok /{p++} /^(not ok |Bail out!)/{f++} END{print p+0, f+0}' "_build/$name.log")
	echo "# $name: $1 ok, $2 not ok in ${secs}s (_build/$name.log)"
	passed=$((passed + $1))
	failed=$((failed + $2))
	if [ "$rc" -ne 0 ]; then
		status=1
		[ "$2" -gt 0 ] || failed=$((failed + 1))
	fi
}
as_root() {
	root_start "$@"
	root_report "$1" "$root_pid"
	took "$1"
}

# The Debian packages: built from the make dist tarball, linted, then in a
# bookworm chroot (cached) installed beside manpages-dev, used, and purged
# (tests/debian-install.sh, TAP, as root).  Nothing in it is timed, and
# only the Debian guest needs what it makes: it runs in the background
# like the builds, and is done before the Debian guest boots.
root_start debian --idle tests/debian-install.sh LIBMEMBARRIER_DEBS_OUT="$top/_build/debs"
debian_pid=$root_pid

# The four guest kernels next (cached: seconds when nothing changed; on 2
# cores 6 to 15 minutes each, if not; the builds' lanes take what they
# leave idle).
# The patched one is built as Debian packages by membarrier-build-kernel:
# the busybox guests boot its kernel, the Debian guest installs them.
echo "== kernels"
# Beside them, the Debian guest's root file system, if it is not cached:
# debootstrap waits on the network and the disk more than on the CPU.
root tests/debian-guest.sh --prepare >_build/debian-guest-prepare.log 2>&1 &
prepare_pid=$!
for variant in patched nomembarrier debug arm64; do
	if ! kernel/build.sh "$variant" >/dev/null; then
		echo "FAIL: kernel/build.sh $variant"
		failed=$((failed + 1)); status=1
	fi
done
# The compile-only build matrix of the series (kernel/matrix.sh, cached
# the same way; tests/guest/kernel-matrix.test reports it).
kernel/matrix.sh >_build/matrix.log 2>&1 || true
wait "$prepare_pid"	# its failure shows in the debian-guest stage
took kernels

# The default build's guest tests first, with the lanes and the Debian
# stage running beside them: a QEMU guest leaves a host CPU idle about
# half the time, and its timing and its litmus controls are in the guest
# (a guest test with a configure beside it took 25-33 s, as alone).
check --beside guest default '$(guest_tests)'
root_report debian "$debian_pid"
took debian
times="$times$(printf '  (it ran %ss beside the guest tests)' "$secs")
"

# The patched kernel's Debian packages (kernels stage), installed with the
# library packages of the debian stage into a Debian 12 system that boots
# with systemd in QEMU and checks itself, once with membarrier_expedited=off
# (tests/debian-guest.sh, TAP, as root).  The lanes are stopped: beside
# them its boot took 183 s instead of 71 (systemd starts many processes,
# which the builds slow down, as they slow each other).
lanes STOP
as_root debian-guest tests/debian-guest.sh LIBMEMBARRIER_DEBS="$top/_build/debs"

# The default build's host tests and man-page checks.
check default default '$(host_tests) $(host_test_scripts) $(man_checks)'
# Sanitizers slow the litmus test down tenfold: fewer rounds there.
check asan-ubsan asan-ubsan '' LITMUS_ROUNDS=100000
# Under TSan, not the tests of the signal mechanism (litmus, fallback,
# fork): TSan delivers an asynchronous signal only when the target thread
# enters a function it intercepts, so a thread spinning in user code (the
# litmus rendezvous) never takes the mechanism's signal, and with thread
# churn the fallback and fork tests time out under it.  TSan's
# instrumentation also hides the store-buffer reordering the litmus
# control must find.  The default and ASan+UBSan builds run them in full.
check tsan tsan "tests/commands tests/errors tests/errno-table tests/cache tests/race tests/header.sh tests/symbols.sh tests/info.sh" \
	TSAN_OPTIONS=halt_on_error=1
if [ -n "$m32_runs" ]; then
	check i386 i386 '' LITMUS_ROUNDS=100000
else
	# qemu-i386 7.2 aborts a program whose new thread starts while the
	# signal mechanism's signals arrive ("Fatal glibc error: rseq
	# registration failed", GLIBC_TUNABLES=glibc.pthread.rseq=0 or not):
	# the three tests that do that (fallback, signal-cases, litmus.sh)
	# run natively and under qemu-user on four other architectures.
	echo "# this kernel cannot execute 32-bit x86 programs: the i386 suite runs under qemu-i386, without tests/fallback, tests/signal-cases and tests/litmus.sh"
	check i386 i386 "tests/commands tests/errors tests/cache tests/fork tests/race tests/errno-table tests/pidns tests/header.sh tests/symbols.sh tests/info.sh man/check-pages.sh man/check-examples.sh"
fi

# The host suite under qemu-user, one architecture at a time (two at once
# took three times as long as one: the spinning rendezvous under
# emulation need the cores to themselves), the lanes stopped.  qemu-user
# keeps about 0.3 MB of every thread a program started, and a round of
# the signal mechanism takes 50-900 us there: fewer litmus rounds.  The
# architectures only compiled run tests/symbols.sh and tests/header.sh.
echo "== cross"
for a in $emulated; do
	echo "== $a under qemu-user"
	built "$a" || continue
	lanes STOP
	t=$(date +%s)
	( cd "_build/$a" && LITMUS_ROUNDS=50000 LITMUS_CHURN_ROUNDS=10000 make -s check ) \
		>"_build/$a.out" 2>&1 || { status=1; tail -20 "_build/$a.out"; }
	summary "$a"
	times="$times$(printf '  %-10s %5ds' "$a" $(($(date +%s) - t)))
"
done
for a in $compiled; do
	echo "== $a"
	built "$a" || continue
	( cd "_build/$a" && make -s check TESTS="tests/symbols.sh tests/header.sh" ) \
		>"_build/$a.out" 2>&1 || { status=1; tail -20 "_build/$a.out"; }
	summary "$a"
done
took cross

# Every build is done by now: what each took, alone or beside a stage.
for b in default asan-ubsan tsan i386 $emulated $compiled; do
	read -r rc secs 2>/dev/null <"_build/$b.built" || rc=99 secs=0
	builds="${builds:-}$(printf '  %-10s %5ds%s' "$b" "$secs" "$([ "$rc" = 0 ] || echo ' FAILED')")
"
done
wait $lane1 $lane2
lane1= lane2=

echo "== distcheck"
# distcheck checks the tarball (complete, builds, tests pass from it): the
# litmus test's strength is the default build's business, 2 * 10^4 rounds.
if ( cd _build/default && LITMUS_ROUNDS=20000 make -s distcheck >distcheck.log 2>&1 ); then
	passed=$((passed + 1)); echo "PASS: make distcheck"
else
	failed=$((failed + 1)); status=1; echo "FAIL: make distcheck"; tail -40 _build/default/distcheck.log
fi
took distcheck

echo "== time per stage"
printf '%s' "$times"
printf 'builds, in the background (%ds of the stages above waited for them):\n%s' "$waited" "$builds"
printf '%-12s %5ds\n' total $(($(date +%s) - t0))
[ $failed -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
