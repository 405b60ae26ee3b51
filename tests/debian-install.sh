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
# and keyed by suite, architecture, mirrors and package list.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
chroot_packages="gcc libc6-dev pkgconf man-db manpages-dev"
# shellcheck source=debian-lib.sh
. "$top/tests/debian-lib.sh"

# --- prerequisites ----------------------------------------------------------
need_tools debootstrap dpkg-buildpackage dpkg-checkbuilddeps lintian chroot \
	mount umount mountpoint flock tar gzip xz make
[ -d "$top/debian" ] || skip_all "no debian/ directory (a release tarball has none)"
[ -x "$top/configure" ] || skip_all "no ./configure: run autoreconf -fi first"
out=$(cd "$top" && dpkg-checkbuilddeps 2>&1) || skip_all "$out"

# --- the chroot and the packages --------------------------------------------
root=$work/root
unpack_root chroot 1 "$root" $chroot_packages
build_packages "$work"
# LIBMEMBARRIER_DEBS_OUT: where to leave the packages, source and binary,
# for tests/debian-guest.sh.
if [ -n "${LIBMEMBARRIER_DEBS_OUT:-}" ]; then
	rm -rf "$LIBMEMBARRIER_DEBS_OUT" && mkdir -p "$LIBMEMBARRIER_DEBS_OUT" &&
		cp $debs "$work"/*.dsc "$work"/*.tar.* "$LIBMEMBARRIER_DEBS_OUT/" ||
		bail "cannot copy the packages to $LIBMEMBARRIER_DEBS_OUT"
fi

# Every error and warning is fixed or overridden with a reason.
lintian -I --pedantic --fail-on error,warning "$changes" >"$work/lintian.log" 2>&1
rc=$?
grep -v 'running with root privileges' "$work/lintian.log" | sed 's/^/# /'
ok $rc "lintian -I --pedantic: no error or warning"

# <membarrier.h> needs any <linux/membarrier.h> (since 4.3), not the
# build machine's: a Debian 12 system installed from the main archive
# alone, with an older linux-libc-dev than this machine's, installs the
# -dev package too.
dev=$(for d in $debs; do case $d in */libmembarrier-dev_*) echo "$d" ;; esac; done)
dpkg-deb -f "$dev" Depends >"$work/dev-depends.log" 2>&1 &&
	grep -Eq '(^|, )linux-libc-dev(,|$)' "$work/dev-depends.log"
ok $? "libmembarrier-dev depends on linux-libc-dev without a version" "$work/dev-depends.log"

# --- in the chroot ----------------------------------------------------------
mkdir "$root/tmp/debs" && cp $debs "$root/tmp/debs/" || bail "cannot copy the packages"
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

man_shows man8.log 8 membarrier-build-kernel && grep -q 'bindeb' "$work/man8.log"
ok $? "man 8 membarrier-build-kernel shows its page" "$work/man8.log"

# linux-patch-membarrier carries every series of kernel/patches, whole (a
# dist tarball in tar's v7 format once dropped the patches whose paths
# passed 99 characters, and dh_install's globs took what was left).
run series.log 'cd /usr/src/linux-patch-membarrier && find . -type f | LC_ALL=C sort |
	xargs sha256sum' &&
	(cd "$top/kernel/patches" && find . -type f | LC_ALL=C sort | xargs sha256sum) |
	diff - "$work/series.log" >"$work/series.diff"
ok $? "linux-patch-membarrier installs kernel/patches/*/ whole: $(grep -c series "$work/series.log") series, $(grep -c '\.patch$' "$work/series.log") patches" \
	"$work/series.diff"

# The chroot has no linux-source-6.1: the kernel tool says so, and how to
# get it, before it writes anything.
run tool.log 'mkdir /tmp/k && cd /tmp/k && ! membarrier-build-kernel -c /dev/null &&
	[ -z "$(ls -A /tmp/k)" ]' &&
	grep -Eq 'apt-get install linux-source-6\.1( |$)' "$work/tool.log"
ok $? "membarrier-build-kernel without linux-source-6.1 says to install it, writes nothing" \
	"$work/tool.log"

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
	/usr/src/linux-patch-membarrier /usr/sbin/membarrier-build-kernel /usr/lib/*/libmembarrier* /usr/share/man/man3/membarrier* 2>/dev/null"
[ ! -s "$work/left.log" ]
ok $? "after: no file of the packages is left" "$work/left.log"

done_tap
