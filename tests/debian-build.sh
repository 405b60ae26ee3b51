#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The source package built where a Debian maintainer and Debian's buildds
# build it for a newer suite: in a chroot of DEBIAN_SUITE (trixie: Debian
# 13; unstable) made by debootstrap --variant=buildd, with that suite's
# compiler, debhelper, dpkg and lintian.  From the source package that
# tests/debian-install.sh built (the "make dist" tarball plus debian/):
# dpkg-source -x, dpkg-checkbuilddeps, dpkg-buildpackage -us -uc with the
# build's test suite (its "make check": the host tests and the man-page
# checks, as a buildd runs them), no compiler warning in the build log,
# that suite's lintian -I --pedantic without an error or a warning, then
# the binary packages installed with dpkg and the package's autopkgtests
# run against them (autopkgtest -B ... -- null, in the chroot).
#
# Speaks TAP.  Needs root (debootstrap, chroot, mount), debootstrap, the
# network the first time (the chroot is cached as a tarball, keyed like
# tests/debian-install.sh's, with the build dependencies of debian/control
# in its key).  Where root or a tool is missing it skips, or fails when
# LIBMEMBARRIER_REQUIRE_GUEST=1 (tests/run-all.sh).  The chroot runs the
# build as root, the way `debootstrap` plus `dpkg-buildpackage` does by
# hand; the build's tests that need what a chroot cannot give skip those
# cases and say why.
#
# Environment: DEBIAN_SUITE (trixie or unstable; required);
# DEBIAN_BUILD_JOBS (the build's jobs, DEB_BUILD_OPTIONS=parallel; default
# the number of CPUs); DEBIAN_BUILD_TESTS=no (the test programs compiled,
# not run: nocheck); DEBIAN_BUILD_CHECKED, a file made once the build and
# its tests have ended (the rest of the stage may then share the CPUs);
# LIBMEMBARRIER_DEBS, the directory with the source package
# (libmembarrier_VERSION.dsc and its tarballs; built here if unset);
# LIBMEMBARRIER_DEBS_OUT, where to leave the source and binary packages
# built here (for tests/debian-guest.sh).  With --prepare, it only makes
# the cached chroot.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
case ${DEBIAN_SUITE:-} in
trixie|unstable) ;;
*) echo "Bail out! DEBIAN_SUITE must be trixie or unstable, not '${DEBIAN_SUITE:-}'"; exit 1 ;;
esac
debootstrap_variant=buildd
# shellcheck source=debian-lib.sh
. "$top/tests/debian-lib.sh"

# The chroot has what a buildd's has when it builds this package: the
# buildd variant (build-essential) and the build dependencies of
# debian/control (without versions, or alternatives' second choices).
# What the checks after the build need, lintian, autopkgtest and the
# autopkgtests' own dependencies (debian/tests/control), is only
# downloaded with the chroot (root_download), and installed after the
# build: a build dependency missing from debian/control fails the build
# here, as on a buildd, instead of being met by lintian's dependencies.
build_deps=$(sed -n '/^Build-Depends:/,/^[A-Z]/{s/^Build-Depends://;/^[A-Z]/d;p}' \
	"$top/debian/control" | tr ',' '\n' | sed 's/[(|].*//; s/^[[:space:]]*//; s/[[:space:]]*$//' |
	sed 's/^debhelper-compat$/debhelper/' | grep . | LC_ALL=C sort -u)
chroot_packages=$(echo $build_deps)
root_download="lintian autopkgtest pkgconf man-db manpages-dev"

if [ "${1:-}" = --prepare ]; then
	[ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null || exit 0
	root_image build 1 $chroot_packages
	exit 0
fi
need_tools debootstrap dpkg-parsechangelog chroot mount umount mountpoint flock tar gzip make
[ -d "$top/debian" ] || skip_all "no debian/ directory (a release tarball has none)"

source_package
upstream=${version%-*}

root=$work/root
unpack_root build 1 "$root" $chroot_packages
run toolchain.log 'gcc --version | head -n 1; dpkg-query -W -f "\${Package} \${Version}\n" \
	debhelper dpkg-dev libc6-dev groff-base man-db mandoc
	sed -n "s/^Date: /archive of /p" /var/lib/apt/lists/*_dists_'"$suite"'_InRelease'
sed 's/^/# '"$suite"': /' "$work/toolchain.log"

mkdir "$root/build" && copy_source "$root/build" ||
	bail "cannot copy the source package into the chroot"
src=/build/libmembarrier-$upstream
run unpack.log "cd /build && dpkg-source -x libmembarrier_$version.dsc"
ok $? "$suite: dpkg-source -x unpacks the source package" "$work/unpack.log"
run builddeps.log "cd $src && dpkg-checkbuilddeps"
ok $? "$suite: dpkg-checkbuilddeps: the build dependencies are in $suite" "$work/builddeps.log"

# As a buildd builds: the tests run (no nocheck), as many jobs as CPUs
# (or DEBIAN_BUILD_JOBS), without the network (unshare --net), for at
# most 30 minutes (the build's tests have their own timeouts).  The
# litmus tests run at distcheck's strength (2 * 10^4 rounds, 5000 with
# thread churn; their defaults, 10^6, took 172 of the 302 s of a Debian
# 13 build): what this stage asks is whether the suite's toolchain builds
# and passes it; the default build runs them at full strength.
# tests/children makes 300 children of each kind, not 1000 (its
# clone-vm-eperm case goes on making children until one has run a shared
# call; with 100 it once saw none, before it did).
# DEBIAN_BUILD_TESTS=no: nocheck, then the test programs compiled (make
# check TESTS=), so that their warnings still count, but not run.
jobs=${DEBIAN_BUILD_JOBS:-$(nproc)}
start=$SECONDS
if [ "${DEBIAN_BUILD_TESTS:-yes}" = no ]; then
	run build.log "cd $src && DEB_BUILD_OPTIONS='nocheck parallel=$jobs' \
		timeout 1800 unshare --net dpkg-buildpackage -us -uc &&
		make -C debian/build -j$jobs check TESTS="
	built=$? what="(nocheck; the test programs compiled, not run)"
else
	run build.log "cd $src && LITMUS_ROUNDS=20000 LITMUS_CHURN_ROUNDS=5000 CHILDREN=300 \
		DEB_BUILD_OPTIONS=parallel=$jobs timeout 1800 unshare --net dpkg-buildpackage -us -uc"
	built=$? what="its make check passes"
fi
ok $built "$suite: dpkg-buildpackage -us -uc builds the packages, $what ($jobs jobs, $((SECONDS - start)) s)" \
	"$work/build.log"
[ "${DEBIAN_BUILD_TESTS:-yes}" = no ] ||
	grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' "$work/build.log" | sort -u -s -k2,2 |
	tr '\n' ' ' | sed 's/^/# '"$suite"' make check: /; s/$/\n/'
grep -E '^SKIP: ' "$work/build.log" | sort -u | sed 's/^/# skipped: /'
# A failed test: its name and, from the build tree, the suite's log (the
# logs of the tests that did not pass).
grep -E '^(FAIL|ERROR|XPASS): ' "$work/build.log" | sort -u | sed 's/^/# failed: /'
[ $built = 0 ] || sed 's/^/# test-suite.log: /' "$root$src/debian/build/test-suite.log" 2>/dev/null |
	head -n 300
# The build and its tests have ended: what follows measures nothing, and
# DEBIAN_BUILD_CHECKED (a file this makes) tells tests/run-all.sh that
# other stages may run beside it now.
[ -z "${DEBIAN_BUILD_CHECKED:-}" ] || : >"$DEBIAN_BUILD_CHECKED"
# Every "NAME: warning: " or "NAME: error: " of the build: gcc's (with
# or without a column, <command-line>, cc1), the assembler's, the
# linker's (a.o:(.text+0x10): warning:, ld: warning:), libtool's, dpkg's
# and debhelper's, except in what the test suite prints (TAP and
# automake's results, its comments begin with "#").  Two are not ours to
# fix: libtool says them of every library installed into a staging
# directory (dh_auto_install's DESTDIR), where ldconfig is not run and
# the tool is relinked against the staged library.
grep -E ': ([Ww]arning|WARNING|error): ' "$work/build.log" |
	grep -Ev '^(#|PASS:|FAIL:|SKIP:|XFAIL:|XPASS:|ERROR:|ok |not ok )' |
	grep -Ev "^libtool: warning: (remember to run 'libtool --finish /usr/lib/[^ ]*'|'libmembarrier/libmembarrier\.la' has not been installed in '/usr/lib/[^ ]*')\$" \
		>"$work/warnings.log"
[ ! -s "$work/warnings.log" ]
ok $? "$suite: no compiler warning in the build log ($(head -n 1 "$work/toolchain.log"))" \
	"$work/warnings.log"

# What the checks below need, from the chroot's own downloads.
run tools.log "apt-get -q -y install --no-install-recommends --no-download $root_download &&
	dpkg-query -W -f '\${Package} \${Version}\n' lintian autopkgtest"
ok $? "$suite: lintian and autopkgtest installed after the build" "$work/tools.log"
sed -n 's/^\(lintian\|autopkgtest\) /# '"$suite"': &/p' "$work/tools.log"

changes=/build/libmembarrier_${version}_$arch.changes
run lintian.log "lintian -I --pedantic --fail-on error,warning $changes"
rc=$?
sed 's/^/# /' "$work/lintian.log"
ok $rc "$suite: lintian $(sed -n 's/^lintian //p' "$work/tools.log") -I --pedantic: no error or warning"

debs=
for p in $our_packages; do
	debs="$debs /build/$(cd "$root/build" && ls "${p}_${version}_"*.deb 2>/dev/null)"
done
run install.log "dpkg -i $debs"
ok $? "$suite: dpkg -i installs the four packages" "$work/install.log"
# The kernel tool's default source there is the suite's kernel, 6.12
# (Debian 13's; testing and unstable have no 6.1): without it, the tool
# says to install it, before it writes anything.
run tool.log 'mkdir /tmp/k && cd /tmp/k && ! membarrier-build-kernel -c /dev/null &&
	[ -z "$(ls -A /tmp/k)" ]' && grep -Eq 'apt-get install linux-source-6\.12( |$)' "$work/tool.log"
ok $? "$suite: membarrier-build-kernel without linux-source-6.12 says to install it, writes nothing" \
	"$work/tool.log"
run autopkgtest.log "autopkgtest -B --timeout-test=600 --output-dir /build/autopkgtest \
	/build/libmembarrier_$version.dsc -- null"
ok $? "$suite: the autopkgtests pass against the packages just built (autopkgtest -B ... -- null)" \
	"$work/autopkgtest.log"
sed 's/^/# autopkgtest: /' "$root/build/autopkgtest/summary" 2>/dev/null

if [ -n "${LIBMEMBARRIER_DEBS_OUT:-}" ]; then
	rm -rf "$LIBMEMBARRIER_DEBS_OUT" && mkdir -p "$LIBMEMBARRIER_DEBS_OUT" &&
		cp "$root"/build/*.deb "$root"/build/*.dsc "$root"/build/*.tar.* "$LIBMEMBARRIER_DEBS_OUT/" ||
		bail "cannot copy the packages to $LIBMEMBARRIER_DEBS_OUT"
fi
done_tap
