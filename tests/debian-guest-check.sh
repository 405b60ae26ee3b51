#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The checks inside the Debian guest of tests/debian-guest.sh, run as
# root by membarrier-check.service once multi-user.target is reached; then
# the guest powers off.  TAP goes to the serial console and, as the
# verdict the host reads back from the disk image, to
# /var/log/membarrier-check-MODE.tap (MODE: "off" when the kernel command
# line has membarrier_expedited=off, else "on").
#
# /root/membarrier-check/ holds: expect (suite=..., release=..., packages=...), the
# source package for autopkgtest (*.dsc) and litmus.c.
set -u
dir=/root/membarrier-check
. "$dir/expect"
mode=on
grep -qw 'membarrier_expedited=off' /proc/cmdline && mode=off
tap=/var/log/membarrier-check-$mode.tap
exec >/dev/ttyS0 2>&1

n=0
out=$(mktemp)
# check DESCRIPTION COMMAND...: one TAP line; the output of a failure.
check() {
	desc=$1
	shift
	n=$((n + 1))
	t0=$(date +%s)
	if "$@" >"$out" 2>&1; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		tail -n 40 "$out" | sed 's/^/# /'
	fi | tee -a "$tap"
	note "$(($(date +%s) - t0)) s"
}
note() {	# note TEXT: a TAP comment
	echo "# $*" | tee -a "$tap"
}
: >"$tap"
note "mode $mode: multi-user.target reached $(cut -d' ' -f1 /proc/uptime) s after the kernel started"

booted() {
	[ "$(systemctl is-active multi-user.target)" = active ] || return 1
	failed=$(systemctl list-units --state=failed --no-legend --plain)
	[ -n "$failed" ] || return 0
	echo "$failed"
	for u in $(echo "$failed" | cut -d' ' -f1); do
		journalctl -b -u "$u" --no-pager | tail -n 10
	done
	return 1
}
check "systemd reached multi-user.target, no unit failed" booted

# The system is the suite whose packages the host built and installed.
suite_is() {
	. /etc/os-release
	echo "$PRETTY_NAME ($VERSION_CODENAME)"
	[ "$VERSION_CODENAME" = "$suite" ]
}
check "/etc/os-release: Debian $suite" suite_is

release_is() {
	uname -r
	[ "$(uname -r)" = "$release" ]
}
check "uname -r is the kernel package's ($release)" release_is

installed() {
	for p in $packages; do
		s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p") || return 1
		echo "$p: $s"
		[ "$s" = "ii " ] || return 1
	done
}
check "dpkg -s: every package installed ($(echo $packages | wc -w))" installed

info() {
	membarrier-info >"$dir/info.txt" || return 1
	cat "$dir/info.txt"
	grep -qx '  MEMBARRIER_CMD_SHARED_EXPEDITED' "$dir/info.txt" &&
		grep -q '^Heavy barrier: [a-z]' "$dir/info.txt"
}
check "membarrier-info lists MEMBARRIER_CMD_SHARED_EXPEDITED and the heavy mechanism" info
note "membarrier-info: $(grep '^Heavy barrier' "$dir/info.txt")"

# The sysctls read their defaults (membarrier_expedited is 0 after a boot
# with membarrier_expedited=off), and a user other than root cannot write
# them: the write fails and the value stays.
expedited=1
[ $mode = on ] || expedited=0
sysctls() {
	sysctl kernel.membarrier_expedited kernel.membarrier_expedited_max_rate || return 1
	[ "$(sysctl -n kernel.membarrier_expedited)" = $expedited ] &&
		[ "$(sysctl -n kernel.membarrier_expedited_max_rate)" = 1000 ]
}
check "sysctl: kernel.membarrier_expedited = $expedited, kernel.membarrier_expedited_max_rate = 1000" sysctls
unprivileged() {
	for s in membarrier_expedited membarrier_expedited_max_rate; do
		before=$(cat /proc/sys/kernel/$s)
		if runuser -u membarrier-user -- sh -c "echo 7 >/proc/sys/kernel/$s"; then
			echo "membarrier-user could write $s"
			return 1
		fi
		[ "$(cat /proc/sys/kernel/$s)" = "$before" ] || return 1
	done
}
check "a user other than root cannot change the sysctls" unprivileged

if [ $mode = on ]; then
	autopkgtests() {
		autopkgtest -B --output-dir /var/tmp/autopkgtest "$dir"/*.dsc -- null
	}
	check "the package's autopkgtests pass (autopkgtest -B ... -- null)" autopkgtests
	sed 's/^/# autopkgtest: /' /var/tmp/autopkgtest/summary | tee -a "$tap"

	manpage() {
		MANWIDTH=200 man 2 membarrier >"$dir/man2.txt" 2>&1 || return 1
		grep -q MEMBARRIER_CMD_SHARED_EXPEDITED "$dir/man2.txt" &&
			grep -q 'libmembarrier [0-9]' "$dir/man2.txt"
	}
	check "man 2 membarrier shows the patched kernel's page" manpage
fi

# The store-buffering litmus test built against the installed library
# (on the first boot; a second runs the same program).  At the default
# rate limit most SHARED_EXPEDITED calls wait for an RCU grace period, as
# every call does with membarrier_expedited=off: 1000 and 500 rounds
# (about 10 s each under TCG; the unlimited rounds, 10^6 of them, are
# tests/guest/library.test's).
build() {
	cd "$dir" && cc -O2 -o litmus litmus.c -pthread $(pkg-config --cflags --libs libmembarrier)
}
[ $mode = off ] && [ -x "$dir/litmus" ] ||
	check 'cc litmus.c $(pkg-config --cflags --libs libmembarrier)' build
rounds=1000
[ $mode = on ] || rounds=500
litmus() {
	LIBMEMBARRIER_HEAVY=shared-expedited "$dir/litmus" --rounds $rounds --expect none &&
		grep -q 'heavy=shared-expedited' "$out"
}
check "litmus: SHARED_EXPEDITED, no r1 == r2 == 0 in $rounds rounds" litmus
note "$(grep -m1 'heavy=' "$out")"
# A batch of the control may find nothing when the host keeps the two
# vCPUs from leaving the rendezvous together (6 in 10^6 rounds in one
# run, thousands in others; tests/run-all.sh boots the two Debian guests
# side by side): up to 10 batches, each printed.  Only a batch that ran
# and found none (status 1) is tried again.
control() {
	for try in 1 2 3 4 5 6 7 8 9 10; do
		"$dir/litmus" --control --rounds 1000000 --expect some
		rc=$?
		[ "$rc" = 1 ] || return "$rc"
		echo "control batch $try found no r1 == r2 == 0"
	done
	return 1
}
check "litmus control: compiler barriers only find r1 == r2 == 0" control
grep 'forbidden\|control batch' "$out" | while read -r line; do note "$line"; done

echo "1..$n" | tee -a "$tap"
sync
# Not "systemctl poweroff", which asks logind over D-Bus first (neither
# is installed) and says so.
systemctl start --no-block poweroff.target
