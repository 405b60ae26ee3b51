# Shared helpers for the tests/guest/*.test scripts (sourced, bash).
#
# A test script calls guest_setup VARIANT (builds or reuses the kernel via
# kernel/build.sh and compiles mbtool), then guest_run ... one or more times
# and tap_ok for host-side checks, then tap_done. The script prints TAP
# (plan at the end) and exits 0 (all ok), 1 (a failure) or 77 (skipped:
# missing host tools).
set -euo pipefail

guest_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top_dir=$(cd "$guest_dir/../.." && pwd)
tap_n=0
tap_fail=0

# shellcheck source=../skip.sh
. "$guest_dir/../skip.sh"

tap_ok() { # COND-STATUS DESCRIPTION: tap_ok 0 "works" / tap_ok 1 "broken"
	tap_n=$((tap_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $tap_n - $2"
	else
		echo "not ok $tap_n - $2"
		tap_fail=$((tap_fail + 1))
	fi
}

tap_done() {
	echo "# $(basename "$0"): ${SECONDS}s"
	echo "1..$tap_n"
	[ "$tap_fail" = 0 ] || exit 1
	exit 0
}

# guest_busybox_arm64: Debian's busybox-static for arm64 (apt-get download:
# needs "dpkg --add-architecture arm64" and apt-get update, as in the
# README), unpacked once into the kernel cache; sets BUSYBOX.
guest_busybox_arm64() {
	local cache=${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
	local dir=$cache/busybox-arm64 tmp
	if [ ! -x "$dir/busybox" ]; then
		command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
			skip_all "apt-get and dpkg-deb are needed for busybox-static:arm64"
		mkdir -p "$cache"
		tmp=$(mktemp -d "$cache/busybox-arm64.XXXXXX")
		if ! (cd "$tmp" && apt-get download busybox-static:arm64 >download.log 2>&1) ||
			! dpkg-deb -x "$tmp"/busybox-static_*_arm64.deb "$tmp/root"; then
			sed 's/^/# /' "$tmp/download.log"
			rm -rf "$tmp"
			skip_all "cannot download busybox-static:arm64 (dpkg --add-architecture arm64; apt-get update)"
		fi
		mkdir -p "$dir"
		mv "$tmp/root/bin/busybox" "$dir/busybox.tmp.$$" && mv "$dir/busybox.tmp.$$" "$dir/busybox"
		rm -rf "$tmp"
	fi
	BUSYBOX=$dir/busybox
	export BUSYBOX
}

# guest_setup VARIANT: sets KDIR (kernel/build.sh output), MBTOOL, TMPD,
# and GUEST_CC, the compiler of the guest's programs (arm64: Debian's
# aarch64-linux-gnu-gcc; the guest boots under qemu-system-aarch64).
guest_setup() {
	local t qemu=qemu-system-x86_64
	GUEST_CC=gcc
	if [ "$1" = arm64 ]; then
		GUEST_CC=aarch64-linux-gnu-gcc qemu=qemu-system-aarch64
	fi
	for t in "$qemu" "$GUEST_CC" cpio gzip timeout flock; do
		command -v "$t" >/dev/null || skip_all "$t not installed"
	done
	if [ "$1" = arm64 ]; then
		guest_busybox_arm64
	else
		[ -x "${BUSYBOX:-/bin/busybox}" ] || skip_all "busybox-static not installed"
	fi
	[ -f "${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}" ] ||
		skip_all "${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz} not found"
	TMPD=$(mktemp -d "${TMPDIR:-/tmp}/guest-test.XXXXXX")
	trap 'rm -rf "$TMPD"' EXIT
	KDIR=$("$top_dir/kernel/build.sh" "$1" | tail -n 1)
	[ -f "$KDIR/bzImage" ] || [ -f "$KDIR/Image" ] ||
		{ echo "Bail out! kernel/build.sh $1 failed"; exit 1; }
	MBTOOL=$TMPD/mbtool
	"$GUEST_CC" -static -O2 -Wall -Wextra -Werror -pthread -isystem "$KDIR/usr/include" \
		-o "$MBTOOL" "$guest_dir/mbtool.c" ||
		{ echo "Bail out! cannot compile mbtool.c"; exit 1; }
}

# guest_run DESCRIPTION [run-guest.sh options] -- COMMAND...
# Boots KDIR with mbtool at /mbtool, renumbers the guest's TAP lines into
# this script's TAP stream (other output becomes comments), keeps the raw
# output in $GUEST_OUT, and adds one test for the guest's exit status.
guest_run() {
	local desc=$1 rc counts
	shift
	GUEST_OUT=$TMPD/guest-$((tap_n + 1)).out
	set +e
	"$guest_dir/run-guest.sh" --kernel "$KDIR" --add "$MBTOOL:/mbtool" "$@" >"$GUEST_OUT"
	rc=$?
	set -e
	awk -v base="$tap_n" -v counts="$TMPD/counts" '
		/^(not )?ok( [0-9]+)?( |$)/ {
			n++; neg = ($1 == "not")
			sub(/^(not )?ok( [0-9]+)? ?(- )?/, "")
			printf "%s %d - %s\n", neg ? "not ok" : "ok", base + n, $0
			if (neg) f++
			next
		}
		/^1\.\.[0-9]+/ || /^TAP version/ || /^@@GUEST-EXIT/ || /^reboot: / || /^$/ { next }
		/^#/ { print; next }
		{ print "# " $0 }
		END { print n + 0, f + 0 >counts }' "$GUEST_OUT"
	counts=$(cat "$TMPD/counts")
	tap_n=$((tap_n + ${counts% *}))
	tap_fail=$((tap_fail + ${counts#* }))
	tap_ok "$rc" "$desc: guest command exited $rc"
}

# build_library_tests: the library's own tests and membarrier-info, linked
# statically with the library's sources, in $TMPD/lib (for /lib-tests).
# Needs the configured build tree (top_builddir, set by make check) for
# config.h and the generated <membarrier.h>.
build_library_tests() {
	local b=${top_builddir:-.} src=$top_dir lib=$TMPD/lib f
	b=$(cd "$b" && pwd)
	[ -f "$b/libmembarrier/membarrier.h" ] ||
		{ echo "Bail out! no configured build tree at $b"; exit 1; }
	local cc=("${GUEST_CC:-gcc}" -static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread
		-I"$b" -I"$b/libmembarrier" -I"$src/libmembarrier" -I"$src/tests")
	mkdir -p "$lib/obj"
	# The library once, then each program against it.
	for f in "$src"/libmembarrier/*.c; do
		"${cc[@]}" -c -o "$lib/obj/$(basename "$f" .c).o" "$f" ||
			{ echo "Bail out! cannot build $(basename "$f")"; exit 1; }
	done
	for f in tests/commands.c tests/errors.c tests/cache.c tests/fallback.c \
		 tests/fork.c tests/litmus.c tests/errno-table.c tests/signal-cases.c \
		 tests/seccomp-run.c tools/membarrier-info.c; do
		"${cc[@]}" -o "$lib/$(basename "$f" .c)" "$src/$f" "$lib"/obj/*.o ||
			{ echo "Bail out! cannot build $f statically"; exit 1; }
	done
	rm -rf "$lib/obj"
}

# build_static_link: tests/static-link.c linked -static with the build
# tree's libmembarrier.a, the product as a user links it (pkg-config
# --static), in $TMPD/lib (for /lib-tests/static-link).  For guests of
# the build's own architecture: the archive is the build's.
build_static_link() {
	local b=${top_builddir:-.} lib=$TMPD/lib
	b=$(cd "$b" && pwd)
	[ -f "$b/libmembarrier/libmembarrier.a" ] ||
		{ echo "Bail out! no libmembarrier.a in $b"; exit 1; }
	mkdir -p "$lib"
	"${GUEST_CC:-gcc}" -static -O2 -std=c11 -Wall -Wextra -Werror -pthread \
		-I"$b/libmembarrier" -I"$top_dir/tests" -o "$lib/static-link" \
		"$top_dir/tests/static-link.c" "$b/libmembarrier/libmembarrier.a" -lpthread ||
		{ echo "Bail out! cannot link tests/static-link.c with libmembarrier.a"; exit 1; }
}

# guest_script FILE: start FILE, a guest shell script that runs several
# programs in one boot (a boot costs seconds under TCG): it defines
# "run DESCRIPTION COMMAND...", which runs COMMAND under timeout(1) (600 s)
# and prints "ok - DESCRIPTION: exited 0" or "not ok ...", counting the
# failures that the script's last line, "finish", returns as its status;
# and "control LITMUS", the litmus control in batches.
guest_script() {
	cat >"$1" <<'GUEST'
fails=0
run() {
	desc=$1
	shift
	t0=$(date +%s)
	case $1 in
	control) "$@" ;;
	*) timeout 600 "$@" ;;
	esac
	rc=$?
	echo "# $(($(date +%s) - t0)) s: $desc"
	if [ "$rc" = 0 ]; then echo "ok - $desc: exited 0"
	else echo "not ok - $desc: exited $rc"; fails=$((fails + 1)); fi
}
finish() { [ "$fails" -lt 100 ] || fails=99; exit "$fails"; }
# control LITMUS: the litmus test's control (compiler barriers only) in
# batches of 10^6 rounds until one finds r1 == r2 == 0, at most 5 (a
# batch of 10^6 found 36 to 180000 here, but may find none while the
# host keeps the two vCPUs from leaving the rendezvous together).  Only
# a batch that ran and found none (status 1) is tried again: any other
# status (a crash, the timeout, a usage error) ends it with that status.
control() {
	for try in 1 2 3 4 5; do
		timeout 600 "$1" --control --rounds 1000000 --expect some
		rc=$?
		[ "$rc" = 1 ] || return "$rc"
		echo "# control batch $try found no r1 == r2 == 0"
	done
	return 1
}
GUEST
}

# guest_value KEY: the number after "# KEY " in the last guest output.
guest_value() {
	sed -n "s/^# $1 \([0-9.]*\).*/\1/p" "$GUEST_OUT" | tail -n 1
}
