#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The patched kernel as a Debian user runs it: a linux-image package built
# with the project's own kernel/membarrier-build-kernel (shipped in
# linux-patch-membarrier), installed with dpkg into a Debian root file
# system (Debian 12, or DEBIAN_SUITE's) beside the library packages,
# booted with systemd from that system's /boot on a virtio disk under
# QEMU, and checked from inside (tests/debian-guest-check.sh, run by a
# systemd unit once multi-user.target is reached): the kernel release,
# the packages, membarrier-info, the sysctls and their permissions, the
# package's autopkgtests, a store-buffering litmus test built with
# pkg-config, and man 2 membarrier.  A second boot adds
# membarrier_expedited=off to the kernel command line (DEBIAN_GUEST_BOOTS
# says which boots: "on off", the default, "on" or "off").
#
# Speaks TAP.  Needs root (debootstrap, chroot, mount), debootstrap,
# mke2fs and debugfs (e2fsprogs), qemu-system-x86_64, the kernel build
# dependencies (see membarrier-build-kernel(8)), the build dependencies of
# debian/control, and the network the first time.  Where root or a tool is
# missing it skips, or fails when LIBMEMBARRIER_REQUIRE_GUEST=1.
#
# Cached under ${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}:
# the kernel packages (kernel/build.sh patched's debs/, keyed by the
# source tarball, the tool, the series and the configuration fragments)
# and the root file system before our packages (guest-SUITE-ARCH-KEY.tar.gz).
#
# With --prepare, it only makes the cached root file system.
#
# Environment: LIBMEMBARRIER_DEBS, a directory with the library's .deb,
# .dsc and tarballs (tests/debian-install.sh's LIBMEMBARRIER_DEBS_OUT;
# built here if unset: for DEBIAN_SUITE other than bookworm, set it to
# tests/debian-build.sh's LIBMEMBARRIER_DEBS_OUT, packages built in that
# suite); LINUX_SOURCE_TARBALL (default /usr/src/linux-source-6.1.tar.xz;
# Debian 13's kernel: /usr/src/linux-source-6.12.tar.xz); DEBIAN_SUITE
# (bookworm, the default, or trixie); DEBIAN_GUEST_TIMEOUT (seconds per
# boot, default 900); DEBIAN_GUEST_BOOTS (default "on off").
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# What the guest needs besides minbase: systemd as init, udev and
# initramfs-tools (the kernel package's initrd), procps (sysctl), and the
# autopkgtests' own dependencies (debian/tests/control) with autopkgtest.
guest_packages="systemd-sysv udev initramfs-tools kmod procps build-essential pkgconf
	man-db manpages-dev autopkgtest"
guest_packages=$(echo $guest_packages)
# shellcheck source=debian-lib.sh
. "$top/tests/debian-lib.sh"

# --prepare: only make the cached root file system, if it is missing (no
# TAP; tests/run-all.sh runs it beside the kernel builds, since debootstrap
# waits on the network and the disk more than on the CPU).
if [ "${1:-}" = --prepare ]; then
	[ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null || exit 0
	root_image guest 1 $guest_packages
	exit 0
fi
# The suites with a kernel series for their kernel: bookworm (6.1) and
# trixie (6.12).
case $suite in
bookworm|trixie) ;;
*) bail "DEBIAN_SUITE=$suite: the guest is bookworm or trixie" ;;
esac
need_tools debootstrap dpkg-buildpackage dpkg-deb chroot mount umount mountpoint flock \
	tar gzip xz make mke2fs debugfs qemu-system-x86_64 timeout sha256sum lintian
[ "$arch" = amd64 ] || skip_all "the guest is x86_64 ($arch here)"
[ -d "$top/debian" ] || skip_all "no debian/ directory (a release tarball has none)"
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
# The kernel's version, as the tarball's name gives it (6.1, 6.12).
kversion=$(basename "$tarball" .tar.xz)
kversion=${kversion#linux-source-}
[ -f "$tarball" ] || skip_all "$tarball not found (apt-get install linux-source-$kversion)"
boot_timeout=${DEBIAN_GUEST_TIMEOUT:-900}
boots=${DEBIAN_GUEST_BOOTS-on off}
case $boots in
'on off'|on|off) ;;
*) bail "DEBIAN_GUEST_BOOTS='$boots': give 'on off', 'on' or 'off'" ;;
esac
tool=$top/kernel/membarrier-build-kernel

# --- the tool refuses what it cannot use, and writes nothing then -------------
mkdir "$work/empty"
refuses() {	# refuses WHAT-THE-MESSAGE-SAYS ARGS...
	local want=$1
	shift
	"$tool" -o "$work/empty" "$@" >"$work/refuse.log" 2>&1
	local rc=$?
	cat "$work/refuse.log"
	[ $rc = 1 ] && grep -q -e "$want" "$work/refuse.log" && [ -z "$(ls -A "$work/empty")" ]
}
refuses "none.tar.xz not found: give Debian's kernel source tarball" -s "$work/none.tar.xz" \
	-c /dev/null >"$work/r1.log"
ok $? "membarrier-build-kernel: no source tarball: says which, and what it wants" "$work/r1.log"
refuses 'apt-get install linux-patch-membarrier' -p "$work/none" -c /dev/null >"$work/r2.log"
ok $? "membarrier-build-kernel: no patches: says to install linux-patch-membarrier" "$work/r2.log"
refuses "$work/none.config not found" -p "$top/kernel/patches" -c "$work/none.config" \
	>"$work/r3.log"
ok $? "membarrier-build-kernel: a missing configuration is named" "$work/r3.log"
refuses "unknown argument" --frobnicate >"$work/r4.log"
ok $? "membarrier-build-kernel: an unknown option is refused" "$work/r4.log"
mkdir -p "$work/old/linux-5.10"
printf 'VERSION = 5\nPATCHLEVEL = 10\nSUBLEVEL = 0\n' >"$work/old/linux-5.10/Makefile"
tar -cJf "$work/old.tar.xz" -C "$work/old" linux-5.10
refuses 'no series for linux 5.10 .*(series for: 6.1 6.12)' -s "$work/old.tar.xz" \
	-p "$top/kernel/patches" -c /dev/null >"$work/r5.log"
ok $? "membarrier-build-kernel: a source of another version: says it has no series for it" "$work/r5.log"

# --- the kernel packages ----------------------------------------------------------
# kernel/build.sh patched builds them with the tool from the guest suite's
# configuration (tinyconfig + kernel/config.fragment) grown by
# kernel/config-debian.fragment to boot systemd from a virtio disk, and
# caches them (the busybox guests boot the same kernel): here they are
# built if tests/run-all.sh's kernels stage has not built them yet.
kdir=$("$top/kernel/build.sh" patched 2>"$work/kernel-build.log" | tail -n 1)
[ -n "$kdir" ] && [ -f "$kdir/.complete" ] ||
	bail "kernel/build.sh patched failed" "$work/kernel-build.log"
kdebs=$kdir/debs
ok 0 "membarrier-build-kernel built the kernel packages in $(cat "$kdir/build-seconds") s (kernel/build.sh patched: $kdebs; build.log there)"
image_deb=$(ls "$kdebs"/linux-image-*.deb 2>/dev/null | grep -v -- '-dbg_') ||
	bail "no linux-image package in $kdebs"
kpkg=$(dpkg-deb -f "$image_deb" Package)
release=${kpkg#linux-image-}
case $release in
"$kversion".*-membarrier) ok 0 "the kernel package is $kpkg" ;;
*) ok 1 "the kernel package is linux-image-$kversion.*-membarrier, not $kpkg" ;;
esac
# Not ours to lint, but said (once, in the Debian 12 guest's run): what
# lintian thinks of a bindeb-pkg package.
[ "$suite" != bookworm ] ||
	lintian "$image_deb" 2>/dev/null | sed 's/^/# lintian: /' | head -n 20

# --- the library packages -----------------------------------------------------------
[ -n "${LIBMEMBARRIER_DEBS:-}" ] || [ "$suite" = bookworm ] ||
	bail "DEBIAN_SUITE=$suite: give LIBMEMBARRIER_DEBS, packages built in $suite (tests/debian-build.sh)"
source_package
debs=
for p in $our_packages; do
	f=$(ls "$pkgdir/${p}_${version}_"*.deb 2>/dev/null) || bail "no $p .deb in $pkgdir"
	debs="$debs $f"
done

# --- the root file system and the disk image ------------------------------------
root=$work/root
start=$SECONDS
unpack_root guest 1 "$root" $guest_packages
kernel_debs=$(ls "$kdebs"/*.deb)
mkdir "$root/tmp/debs" && cp $debs $kernel_debs "$root/tmp/debs/" ||
	bail "cannot copy the packages"
in_chroot "$root" "dpkg -i /tmp/debs/*.deb" >"$work/install.log" 2>&1
ok $? "dpkg -i installs the library packages and $(for d in $kernel_debs; do
	dpkg-deb -f "$d" Package; done | tr '\n' ' ')" "$work/install.log"
# The guest has no network: no package lists either, which apt would
# read (slowly, under TCG) each time autopkgtest installs a test's
# dependencies, all of them installed already.
rm -rf "$root/tmp/debs" "$root"/var/lib/apt/lists/*
[ -f "$root/boot/vmlinuz-$release" ] && [ -f "$root/boot/initrd.img-$release" ]
ok $? "the kernel package installed /boot/vmlinuz-$release, its hook /boot/initrd.img-$release" \
	"$work/install.log"

# The system: its disk, a name, a machine id (no first-boot questions), a
# user other than root, and the unit that runs the checks.
check=$root/root/membarrier-check
mkdir -p "$check" &&
	cp "$top/tests/debian-guest-check.sh" "$top/tests/litmus.c" "$check/" &&
	copy_source "$check" &&
	printf 'suite=%s\nrelease=%s\npackages="%s %s"\n' "$suite" "$release" "$our_packages" \
		"$(for d in $kernel_debs; do dpkg-deb -f "$d" Package; done | tr '\n' ' ')" \
		>"$check/expect" &&
	echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" >"$root/etc/fstab" &&
	echo debian-membarrier >"$root/etc/hostname" &&
	cat >"$root/etc/systemd/system/membarrier-check.service" <<'EOF' ||
[Unit]
Description=libmembarrier checks of this system
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/bin/sh /root/membarrier-check/debian-guest-check.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
	bail "cannot write into $root"
in_chroot "$root" "systemd-machine-id-setup && useradd -m membarrier-user &&
	systemctl enable membarrier-check.service" >"$work/setup.log" 2>&1 ||
	bail "cannot set up the guest" "$work/setup.log"

img=$work/debian.img
size=$(( $(du -sm "$root" | cut -f1) + 768 ))
mke2fs -q -F -t ext4 -L debian -d "$root" "$img" "${size}M" >"$work/mke2fs.log" 2>&1
ok $? "mke2fs -d makes a ${size} MiB ext4 disk image of it ($((SECONDS - start)) s for the image)" \
	"$work/mke2fs.log"
rm -rf --one-file-system "$root"
debugfs -R "dump /boot/vmlinuz-$release $work/vmlinuz" "$img" >/dev/null 2>&1 &&
	debugfs -R "dump /boot/initrd.img-$release $work/initrd.img" "$img" >/dev/null 2>&1 &&
	[ -s "$work/vmlinuz" ] && [ -s "$work/initrd.img" ]
ok $? "the kernel and initrd read back from the image's /boot"

# --- the boots ------------------------------------------------------------------------
# boot MODE [KERNEL-ARGS]: boot the image, the guest runs the checks and
# powers off; its TAP, read back from the image, becomes ours.
boot() {
	local mode=$1 append=${2:-} start=$SECONDS rc line n=0 plan=
	timeout "$boot_timeout" qemu-system-x86_64 -accel tcg -smp 2 -m 1024 \
		-kernel "$work/vmlinuz" -initrd "$work/initrd.img" \
		-append "console=ttyS0 root=/dev/vda rw quiet panic=-1 $append" \
		-drive "file=$img,format=raw,if=virtio" -nic none \
		-nographic -no-reboot </dev/null >"$work/console-$mode.log" 2>&1
	rc=$?
	[ $rc = 0 ]
	ok $? "boot ${append:-with the defaults}: the guest powered off after $((SECONDS - start)) s (limit ${boot_timeout} s, status $rc)" \
		"$work/console-$mode.log"
	debugfs -R "cat /var/log/membarrier-check-$mode.tap" "$img" >"$work/$mode.tap" 2>/dev/null
	while IFS= read -r line; do
		case $line in
		'ok '*|'not ok '*)
			n=$((n + 1))
			case $line in ok*) rc=0 ;; *) rc=1 ;; esac
			ok $rc "guest ($mode): ${line#* - }"
			;;
		'1..'*) plan=${line#1..} ;;
		*) echo "$line" ;;
		esac
	done <"$work/$mode.tap"
	[ -n "$plan" ] && [ "$plan" = $n ] && [ $n -gt 0 ]
	ok $? "guest ($mode): its report is complete (${n} checks, plan ${plan:-missing})" \
		"$work/console-$mode.log"
}
for b in $boots; do
	case $b in
	on) boot on ;;
	off) boot off membarrier_expedited=off ;;
	esac
done
done_tap
