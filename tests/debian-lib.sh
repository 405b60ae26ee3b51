# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by tests/debian-install.sh and tests/debian-guest.sh (bash): TAP
# helpers, a work directory that is unmounted and removed on exit, root
# file systems of a Debian suite made with debootstrap and cached as
# tarballs, and the project's Debian packages built the way a release is
# made.
#
# Before sourcing: top (the source tree); DEBIAN_SUITE, the suite
# (bookworm, the default; trixie; unstable).  After: work (the work
# directory), cache (made), arch, suite, sources, mirror.

suite=${DEBIAN_SUITE:-bookworm}
case $suite in
bookworm|trixie|unstable) ;;
*) echo "Bail out! DEBIAN_SUITE=$suite: bookworm, trixie or unstable"; exit 1 ;;
esac
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

# need_tools TOOL...: skip (or fail, under LIBMEMBARRIER_REQUIRE_GUEST=1)
# without root or any of them.
need_tools() {
	[ "$(id -u)" = 0 ] || skip_all "needs root (debootstrap, chroot, mount)"
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || skip_all "$t is not installed"
	done
}

arch=$(dpkg --print-architecture)
cache=${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd) || bail "cannot create $cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || bail "mktemp failed"

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

# run LOG COMMAND: a shell command in the chroot $root (the script's),
# its output in $work/LOG.
run() {
	in_chroot "$root" "$2" >"$work/$1" 2>&1
}

# The host's Debian mirrors for the suite and its -updates and -security
# (unstable has neither); deb.debian.org for a suite the host does not use.
sources=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
	'Created-By: Packages' 2>/dev/null |
	awk -v s="$suite" '($2 == s || $2 == s "-updates" || $2 == s "-security") && $3 == "main" {
		sub("/$", "", $1); print $1, $2 }' | sort -u)
if [ "$suite" = unstable ]; then
	sources="http://deb.debian.org/debian $suite"
elif ! printf '%s\n' "$sources" | grep -q " $suite\$"; then
	sources="http://deb.debian.org/debian $suite
http://deb.debian.org/debian $suite-updates
http://deb.debian.org/debian-security $suite-security"
fi
mirror=$(printf '%s\n' "$sources" | awk -v s="$suite" '$2 == s { print $1; exit }')

# root_image NAME SCHEMA PACKAGE...: a root file system of the suite
# made with debootstrap --variant=$debootstrap_variant (minbase unless
# set; buildd has build-essential), upgraded from -updates and -security,
# plus the packages, kept as $cache/NAME-SUITE-ARCH-KEY.tar.gz, KEY a hash
# of SCHEMA (bump it when the way the root is made changes), the variant,
# the mirrors, the package list and, for unstable, the month; made when
# missing, under a lock (fd 8, held until unpack_root releases it).  Sets
# image.  root_download: packages only downloaded into the root's
# /var/cache/apt/archives, to be installed later without the network
# (apt-get install --no-download), and in the key.
debootstrap_variant=${debootstrap_variant:-minbase}
root_download=${root_download:-}
root_image() {
	local name=$1 schema=$2 key new v= old
	shift 2
	# The key of a minbase root is what it was before variants existed.
	[ "$debootstrap_variant" = minbase ] || v="variant=$debootstrap_variant"
	[ -z "$root_download" ] || v="$v download=$(echo $root_download)"
	# Unstable moves every day: its root is made again each month, so that
	# a build there meets what a buildd has, not a cache's old toolchain.
	[ "$suite" != unstable ] || v="$v month=$(date -u +%Y-%m)"
	key=$(printf '%s\n' "schema=$schema" "suite=$suite" "arch=$arch" $v \
		"packages=$*" "$sources" | sha256sum | cut -c1-16)
	image=$cache/$name-$suite-$arch-$key.tar.gz
	exec 8>"$image.lock"
	flock 8
	[ ! -f "$image" ] || return 0
	echo "# creating $image"
	new=$work/new-$name
	# The archive's signature must check: with the keyring named,
	# debootstrap stops where it would otherwise only warn.
	debootstrap --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		--variant="$debootstrap_variant" --arch="$arch" "$suite" "$new" "$mirror" \
		>"$work/debootstrap.log" 2>&1 || bail "debootstrap failed" "$work/debootstrap.log"
	printf '%s\n' "$sources" | awk '{ print "deb", $1, $2, "main" }' >"$new/etc/apt/sources.list"
	# Unstable as these machines reach it has a Release file past its
	# Valid-Until (by 31 days on 2026-12-07), which apt-get update refuses
	# and debootstrap does not check; its signature is checked all the
	# same.  Its packages come from the lists debootstrap just fetched, the
	# newest there are: there is nothing to upgrade.
	local update="apt-get -q update && apt-get -q -y upgrade &&"
	[ "$suite" != unstable ] || update=
	in_chroot "$new" "$update
		apt-get -q -y install --no-install-recommends $* && apt-get clean &&
		if [ -n '$root_download' ]; then
			apt-get -q -y install --no-install-recommends --download-only $root_download
		fi" \
		>"$work/apt.log" 2>&1 || bail "apt-get in the new root failed" "$work/apt.log"
	tar -C "$new" --numeric-owner -czf "$image.tmp" . && mv "$image.tmp" "$image" ||
		bail "cannot write $image"
	rm -rf --one-file-system "$new"
	# Last month's unstable root is not needed again.
	if [ "$suite" = unstable ]; then
		for old in "$cache/$name-$suite-$arch-"*.tar.gz; do
			[ "$old" = "$image" ] || rm -f "$old" "$old.lock"
		done
	fi
}

# unpack_root NAME SCHEMA DIR PACKAGE...: root_image's root in DIR.
unpack_root() {
	local name=$1 schema=$2 dir=$3
	shift 3
	root_image "$name" "$schema" "$@"
	mkdir "$dir" && tar -C "$dir" --numeric-owner -xzf "$image" ||
		bail "cannot unpack $image"
	flock -u 8
	exec 8>&-
}

# source_package: the packages to test, LIBMEMBARRIER_DEBS's (the
# directory a stage before left them in) or, without it, built here on
# the host by build_packages.  Sets
# pkgdir, version (without epoch) and dsc (the .dsc, checked to exist).
source_package() {
	if [ -n "${LIBMEMBARRIER_DEBS:-}" ]; then
		pkgdir=$LIBMEMBARRIER_DEBS
	else
		[ -x "$top/configure" ] || skip_all "no ./configure: run autoreconf -fi first"
		pkgdir=$work/packages
		build_packages "$pkgdir"
	fi
	version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
	version=${version#*:}	# as in the file names: no epoch
	dsc=$pkgdir/libmembarrier_$version.dsc
	[ -f "$dsc" ] || bail "no $dsc"
}

# copy_source DIR: the .dsc and the files it names into DIR.
copy_source() {
	cp "$dsc" $(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]* [0-9]* //p' "$dsc" | sed "s|^|$pkgdir/|") \
		"$1/"
}

# build_packages DIR: the source and binary packages in DIR, built from the
# "make dist" tarball as the orig tarball plus debian/, as for a release.
# TAP for each step; sets version, changes and debs (the four .debs).
# DEB_BUILD_OPTIONS=nocheck: the build's "make check" is the host test
# suite, which tests/run-all.sh runs in stages of its own.
our_packages="libmembarrier1 libmembarrier-dev membarrier-tools linux-patch-membarrier"
build_packages() {
	local dir=$1 upstream tarball p f
	version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
	version=${version#*:}	# as in the file names: no epoch
	upstream=${version%-*}
	mkdir -p "$dir/dist" &&
		(cd "$dir/dist" && "$top/configure" -q --disable-guest-tests && make -s dist) \
		>"$dir/dist.log" 2>&1
	tarball=$dir/dist/libmembarrier-$upstream.tar.xz
	[ -f "$tarball" ]
	ok $? "make dist makes libmembarrier-$upstream.tar.xz (the version of debian/changelog)" \
		"$dir/dist.log"
	[ -f "$tarball" ] || done_tap
	cp "$tarball" "$dir/libmembarrier_$upstream.orig.tar.xz" &&
		tar -C "$dir" -xJf "$tarball" &&
		cp -a "$top/debian" "$dir/libmembarrier-$upstream/" || bail "cannot unpack $tarball"
	(cd "$dir/libmembarrier-$upstream" &&
		DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc) \
		>"$dir/build.log" 2>&1
	ok $? "dpkg-buildpackage builds the source and binary packages" "$dir/build.log"
	changes=$dir/libmembarrier_${version}_$arch.changes
	debs=
	for p in $our_packages; do
		f=$(ls "$dir/${p}_${version}_"*.deb 2>/dev/null) || bail "no $p .deb" "$dir/build.log"
		debs="$debs $f"
	done
}
