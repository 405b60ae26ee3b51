#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian packages on a fresh Debian 12 system.  Builds the source and
# binary packages the way a release is made (the "make dist" tarball as
# the orig tarball, plus debian/), runs lintian on them, then in a
# debootstrap chroot of bookworm that has Debian's manpages-dev installed:
# installs them with dpkg, builds and runs a program with the flags
# pkg-config gives, reads membarrier(3), membarrier(2) and
# membarrier-info(1) with man, purges the packages, and checks that
# Debian's membarrier(2) is back and no diversion is left.
#
# Speaks TAP.  Needs root (debootstrap, chroot, mount), debootstrap,
# lintian, the build dependencies of debian/control, a configured source
# tree (./configure exists: autoreconf -fi) and the network the first time
# (the chroot is cached, see below).  Where root or a tool is missing it
# skips, or fails when LIBMEMBARRIER_REQUIRE_GUEST=1 (tests/run-all.sh).
#
# The chroot is debootstrap --variant=minbase plus the packages below,
# from the host's own Debian mirrors, kept as a tarball under
# ${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
# and keyed by suite, architecture, mirrors and package list.  When the
# host's linux-libc-dev is newer than the cached chroot's (the -dev
# package depends on the version it was built against), the cached
# chroot is upgraded first.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
suite=bookworm
chroot_packages="gcc libc6-dev pkgconf man-db manpages-dev"
schema=1	# bump when the way the chroot is made changes
our_packages="libmembarrier1 libmembarrier-dev membarrier-tools linux-patch-membarrier"

tap_n=0 tap_fail=0
ok() {	# ok STATUS DESCRIPTION [FILE-TO-SHOW-ON-FAILURE]
	tap_n=$((tap_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $tap_n - $2"
	else
		echo "not ok $tap_n - $2"
		tap_fail=$((tap_fail + 1))
		[ -z "${3:-}" ] || tail -n 30 "$3" | sed 's/^/# /'
	fi
}
# shellcheck source=skip.sh
. "$top/tests/skip.sh"
bail() {	# bail MESSAGE [LOG]
	[ -z "${2:-}" ] || tail -n 30 "$2" | sed 's/^/# /'
	echo "Bail out! $1"
	exit 1
}
done_tap() {
	echo "# $(basename "$0"): ${SECONDS}s"
	echo "1..$tap_n"
	[ "$tap_fail" = 0 ]
	exit
}

# --- prerequisites ----------------------------------------------------------
[ "$(id -u)" = 0 ] || skip_all "needs root (debootstrap, chroot, mount)"
for t in debootstrap dpkg-buildpackage dpkg-checkbuilddeps lintian chroot \
	mount umount mountpoint flock tar gzip xz make; do
	command -v "$t" >/dev/null 2>&1 || skip_all "$t is not installed"
done
[ -d "$top/debian" ] || skip_all "no debian/ directory (a release tarball has none)"
[ -x "$top/configure" ] || skip_all "no ./configure: run autoreconf -fi first"
out=$(cd "$top" && dpkg-checkbuilddeps 2>&1) || skip_all "$out"

arch=$(dpkg --print-architecture)
cache=${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd) || bail "cannot create $cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/debian-install.XXXXXX") || bail "mktemp failed"
root=$work/root

# Unmount whatever is mounted under the work directory, deepest first, and
# remove it without crossing into a file system that is still mounted.
cleanup() {
	local m
	for m in $(awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# in_chroot DIR COMMAND...: run a shell command in DIR with /proc mounted.
in_chroot() {
	local dir=$1 rc
	shift
	mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc" || return 1
	chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LC_ALL=C DEBIAN_FRONTEND=noninteractive /bin/sh -c "$*"
	rc=$?
	umount "$dir/proc"
	return $rc
}

# --- the chroot -------------------------------------------------------------
# The host's Debian mirrors for the suite and its -updates and -security.
sources=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
	'Created-By: Packages' 2>/dev/null |
	awk -v s="$suite" '($2 == s || $2 == s "-updates" || $2 == s "-security") && $3 == "main" {
		sub("/$", "", $1); print $1, $2 }' | sort -u)
if ! printf '%s\n' "$sources" | grep -q " $suite\$"; then
	sources="http://deb.debian.org/debian $suite
http://deb.debian.org/debian $suite-updates
http://deb.debian.org/debian-security $suite-security"
fi
mirror=$(printf '%s\n' "$sources" | awk -v s="$suite" '$2 == s { print $1; exit }')
key=$(printf '%s\n' "schema=$schema" "suite=$suite" "arch=$arch" \
	"packages=$chroot_packages" "$sources" | sha256sum | cut -c1-16)
image=$cache/chroot-$suite-$arch-$key.tar.gz

# make_image: debootstrap, the packages, then the tarball (under the lock).
make_image() {
	local new=$work/new
	echo "# creating $image"
	debootstrap --variant=minbase --arch="$arch" "$suite" "$new" "$mirror" \
		>"$work/debootstrap.log" 2>&1 || bail "debootstrap failed" "$work/debootstrap.log"
	printf '%s\n' "$sources" | awk '{ print "deb", $1, $2, "main" }' >"$new/etc/apt/sources.list"
	in_chroot "$new" "apt-get -q update && apt-get -q -y upgrade &&
		apt-get -q -y install --no-install-recommends $chroot_packages && apt-get clean" \
		>"$work/apt.log" 2>&1 || bail "apt-get in the new chroot failed" "$work/apt.log"
	tar -C "$new" --numeric-owner -czf "$image.tmp" . && mv "$image.tmp" "$image" ||
		bail "cannot write $image"
	rm -rf --one-file-system "$new"
}

exec 8>"$image.lock"
flock 8
[ -f "$image" ] || make_image
mkdir "$root" && tar -C "$root" --numeric-owner -xzf "$image" || bail "cannot unpack $image"
# The -dev package depends on the linux-libc-dev it was built with.
need=$(dpkg-query -W -f='${Version}' "linux-libc-dev:$arch")
have=$(chroot "$root" dpkg-query -W -f='${Version}' "linux-libc-dev:$arch")
if dpkg --compare-versions "$have" lt "$need"; then
	echo "# the cached chroot has linux-libc-dev $have, older than $need: upgrading it"
	in_chroot "$root" "apt-get -q update && apt-get -q -y upgrade && apt-get clean" \
		>"$work/apt.log" 2>&1 || bail "apt-get upgrade in the chroot failed" "$work/apt.log"
	tar -C "$root" --numeric-owner -czf "$image.tmp" . && mv "$image.tmp" "$image" ||
		bail "cannot write $image"
fi
flock -u 8

# --- the packages -----------------------------------------------------------
# The orig tarball is "make dist"'s, as for a release (debian/ is not in
# it).  DEB_BUILD_OPTIONS=nocheck: the build's "make check" is the host
# test suite, which tests/run-all.sh runs in stages of its own; this test
# is about the packages.
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
version=${version#*:}	# as in the file names: no epoch
upstream=${version%-*}
mkdir "$work/dist" &&
	(cd "$work/dist" && "$top/configure" -q --disable-guest-tests && make -s dist) \
	>"$work/dist.log" 2>&1
tarball=$work/dist/libmembarrier-$upstream.tar.xz
[ -f "$tarball" ]
ok $? "make dist makes libmembarrier-$upstream.tar.xz (the version of debian/changelog)" "$work/dist.log"
[ -f "$tarball" ] || done_tap

cp "$tarball" "$work/libmembarrier_$upstream.orig.tar.xz" &&
	tar -C "$work" -xJf "$tarball" &&
	cp -a "$top/debian" "$work/libmembarrier-$upstream/" || bail "cannot unpack $tarball"
(cd "$work/libmembarrier-$upstream" &&
	DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc) \
	>"$work/build.log" 2>&1
ok $? "dpkg-buildpackage builds the source and binary packages" "$work/build.log"
changes=$work/libmembarrier_${version}_$arch.changes
debs=
for p in $our_packages; do
	f=$(ls "$work/${p}_${version}_"*.deb 2>/dev/null) || bail "no $p .deb" "$work/build.log"
	debs="$debs $f"
done

# Every error and warning is fixed or overridden with a reason.
lintian -I --pedantic --fail-on error,warning "$changes" >"$work/lintian.log" 2>&1
rc=$?
grep -v 'running with root privileges' "$work/lintian.log" | sed 's/^/# /'
ok $rc "lintian -I --pedantic: no error or warning"

# --- in the chroot ----------------------------------------------------------
mkdir "$root/tmp/debs" && cp $debs "$root/tmp/debs/" || bail "cannot copy the packages"
run() {	# run LOG COMMAND: in the chroot, output to $work/LOG
	in_chroot "$root" "$2" >"$work/$1" 2>&1
}
# man_shows LOG SECTION PAGE: the page, rendered, in LOG; nothing on stderr.
man_shows() {
	in_chroot "$root" "MANWIDTH=200 man $2 $3" >"$work/$1" 2>"$work/$1.err" &&
		[ ! -s "$work/$1.err" ] || { cat "$work/$1.err" >>"$work/$1"; return 1; }
}

# manpages-dev_has_page: /usr/share/man/man2/membarrier.2.gz is the file
# manpages-dev installed (dpkg --verify alone would follow a diversion).
manpages_dev_has_page="dpkg -S /usr/share/man/man2/membarrier.2.gz | grep '^manpages-dev:' &&
	cd / && grep ' usr/share/man/man2/membarrier.2.gz\$' /var/lib/dpkg/info/manpages-dev.md5sums |
	md5sum -c && dpkg --verify manpages-dev"
run before.log "$manpages_dev_has_page"
ok $? "before: manpages-dev owns an intact /usr/share/man/man2/membarrier.2.gz" "$work/before.log"

run install.log "dpkg -i /tmp/debs/*.deb"
ok $? "dpkg -i installs the four packages beside manpages-dev" "$work/install.log"

run info.log "membarrier-info"
ok $? "membarrier-info runs" "$work/info.log"

cat >"$root/tmp/prog.c" <<'EOF'
#include <membarrier.h>
#include <stdio.h>

int main(void)
{
	int mask = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);

	membarrier_light();
	if (mask < 0 || membarrier_heavy() != 0) {
		perror("membarrier");
		return 1;
	}
	puts("prog: ok");
	return 0;
}
EOF
run prog.log 'cd /tmp && cc -o prog prog.c $(pkg-config --cflags --libs libmembarrier) && ./prog'
grep -qx 'prog: ok' "$work/prog.log"
ok $? 'cc prog.c $(pkg-config --cflags --libs libmembarrier) builds a program that runs' "$work/prog.log"

man_shows man3.log 3 membarrier && grep -q 'membarrier_heavy' "$work/man3.log" &&
	grep -q 'libmembarrier [0-9]' "$work/man3.log"
ok $? "man 3 membarrier shows libmembarrier's page" "$work/man3.log"

man_shows man2.log 2 membarrier && grep -q 'MEMBARRIER_CMD_SHARED_EXPEDITED' "$work/man2.log" &&
	grep -q 'libmembarrier [0-9]' "$work/man2.log"
ok $? "man 2 membarrier shows ours (MEMBARRIER_CMD_SHARED_EXPEDITED)" "$work/man2.log"

man_shows man1.log "" membarrier-info && grep -q 'libmembarrier [0-9]' "$work/man1.log"
ok $? "man membarrier-info shows its page" "$work/man1.log"

man_shows man2debian.log 2 membarrier.debian && grep -q 'Linux man-pages' "$work/man2debian.log"
ok $? "man 2 membarrier.debian shows Debian's page, diverted" "$work/man2debian.log"

run purge.log "dpkg --purge $our_packages"
ok $? "dpkg --purge removes the four packages" "$work/purge.log"

man_shows after-man2.log 2 membarrier && grep -q 'Linux man-pages' "$work/after-man2.log" &&
	! grep -q 'SHARED_EXPEDITED' "$work/after-man2.log"
ok $? "after: man 2 membarrier shows Debian's page (no SHARED_EXPEDITED)" "$work/after-man2.log"

run after.log "$manpages_dev_has_page"
ok $? "after: /usr/share/man/man2/membarrier.2.gz is manpages-dev's again, intact" "$work/after.log"

run divert.log 'd=$(dpkg-divert --list "*membarrier*"); echo "$d"; [ -z "$d" ] &&
	! ls /usr/share/man/man2/membarrier.debian.2.gz 2>/dev/null'
ok $? "after: no diversion and no membarrier.debian.2.gz left" "$work/divert.log"

run left.log "ls -d /usr/bin/membarrier-info /usr/include/membarrier.h /usr/share/doc/libmembarrier* \
	/usr/src/linux-patch-membarrier /usr/lib/*/libmembarrier* /usr/share/man/man3/membarrier* 2>/dev/null"
[ ! -s "$work/left.log" ]
ok $? "after: no file of the packages is left" "$work/left.log"

done_tap
