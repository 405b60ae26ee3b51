#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every test of the project: the test suite in a -Werror build (host tests,
# man-page checks, and the guest tests that build the patched kernels and
# boot them in QEMU), the host tests under ASan+UBSan and under TSan, then
# make distcheck.  Builds go to _build/.
# Ends with "N passed, N failed" summed over all runs.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 99
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 status=0

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

# run NAME CONFIGURE-ARGS...: configure, build and check in _build/NAME.
run() {
	name=$1; shift
	echo "== $name: configure $*"
	rm -rf "_build/$name" && mkdir -p "_build/$name" || exit 99
	( cd "_build/$name" && "$top/configure" -q --enable-werror "$@" &&
	  make -s -j"$jobs" && make -s -j"$jobs" check ${CHECK_TESTS:+TESTS="$CHECK_TESTS"} ) ||
		status=1
	grep -E '^(# (TOTAL|PASS|SKIP|FAIL|ERROR):|FAIL:|ERROR:)' "_build/$name/test-suite.log" 2>/dev/null
	tally "_build/$name"
}

run default
# Sanitizers slow the litmus test down tenfold: fewer rounds there.
LITMUS_ROUNDS=100000 run asan-ubsan --enable-sanitizers=address,undefined --disable-guest-tests
# Under TSan, not the tests of the signal mechanism (litmus, fallback,
# fork): TSan delivers an asynchronous signal only when the target thread
# enters a function it intercepts, so a thread spinning in user code (the
# litmus rendezvous) never takes the mechanism's signal, and with thread
# churn the fallback and fork tests time out under it.  TSan's
# instrumentation also hides the store-buffer reordering the litmus
# control must find.  The default and ASan+UBSan builds run them in full.
CHECK_TESTS="tests/commands tests/errors tests/cache tests/race tests/header.sh tests/symbols.sh tests/info.sh" \
TSAN_OPTIONS="halt_on_error=1" run tsan --enable-sanitizers=thread --disable-guest-tests
unset CHECK_TESTS

echo "== distcheck"
if ( cd _build/default && LITMUS_ROUNDS=100000 make -s -j"$jobs" distcheck >distcheck.log 2>&1 ); then
	passed=$((passed + 1)); echo "PASS: make distcheck"
else
	failed=$((failed + 1)); status=1; echo "FAIL: make distcheck"; tail -40 _build/default/distcheck.log
fi

[ $failed -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
