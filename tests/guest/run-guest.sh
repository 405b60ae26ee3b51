#!/bin/bash
# Boot a kernel in QEMU (TCG) with a busybox initramfs and run one command.
#
# Usage:
#   run-guest.sh [--kernel DIR|IMAGE] [--append "ARGS"] [--add HOST:GUEST]...
#                [--timeout SECONDS] [--smp N] [--mem MB] -- COMMAND [ARGS...]
#
#   --kernel   bzImage (x86_64) or Image (arm64), or a directory containing
#              one (e.g. the output of kernel/build.sh). Default:
#              $RUN_GUEST_KERNEL.  An Image boots under qemu-system-aarch64
#              -M virt -cpu max (pauth-impdef=on: the cheap pointer
#              authentication algorithm, the same instructions), console
#              ttyAMA0, with the arm64 busybox of $BUSYBOX.
#   --append   extra kernel command line, after
#              "console=ttyS0 quiet panic=-1" (arm64: ttyAMA0).
#   --add      copy HOST (file or directory) to GUEST in the initramfs;
#              repeatable. GUEST defaults to /HOSTBASENAME.
#   --timeout  wall-clock limit for the whole guest run (default 300).
#   --smp/--mem  guest CPUs (default 4) and memory in MB (default 256).
#
# COMMAND runs in the guest as root (cwd /, PATH=/bin:/sbin:/usr/bin:...),
# after /proc, /sys, /dev (devtmpfs) and /tmp (tmpfs) are mounted. Its output
# is passed through (without \r) on stdout; the firmware and kernel output
# before COMMAND starts goes to stderr. The script exits with COMMAND's exit
# status, reported by the guest on a line "@@GUEST-EXIT <n>@@". If that line
# never comes (kernel panic, hang, timeout), it exits 1 with a message on
# stderr.
#
# Environment: RUN_GUEST_KVM=1 uses -accel kvm instead of -accel tcg.
# RUN_GUEST_KEEP=1 keeps the temporary directory with the initramfs.
# No root needed.
set -euo pipefail

me=run-guest.sh
kernel=${RUN_GUEST_KERNEL:-}
append=
timeout_s=300
smp=4
mem=256
adds=()

die() { echo "$me: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--append) append="$append $2"; shift 2 ;;
	--add) adds+=("$2"); shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option: $1 (try --help)" ;;
	esac
done
[ $# -gt 0 ] || die "no guest command given (use: -- COMMAND [ARGS...])"
[ -n "$kernel" ] || die "no --kernel given"
if [ -d "$kernel" ]; then
	if [ -f "$kernel/bzImage" ]; then kernel=$kernel/bzImage; else kernel=$kernel/Image; fi
fi
[ -f "$kernel" ] || die "kernel image not found: $kernel"
if [ "$(basename "$kernel")" = Image ]; then
	qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on) console=ttyAMA0
else
	qemu=(qemu-system-x86_64) console=ttyS0
fi

busybox=${BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || die "busybox not found at $busybox (install busybox-static)"
command -v "${qemu[0]}" >/dev/null || die "${qemu[0]} not found"
command -v cpio >/dev/null || die "cpio not found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-guest.XXXXXX")
cleanup() { [ -n "${RUN_GUEST_KEEP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT

root=$tmp/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,root}
cp "$busybox" "$root/bin/busybox"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "nobody:x:65534:65534:nobody:/:/bin/sh" >>"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"

for a in ${adds[@]+"${adds[@]}"}; do
	host=${a%%:*}
	if [ "$host" = "$a" ]; then guest=/$(basename "$host"); else guest=${a#*:}; fi
	[ -e "$host" ] || die "--add: $host does not exist"
	mkdir -p "$root/$(dirname "$guest")"
	cp -a "$host" "$root/$guest"
done

# The guest command, each argument single-quoted for the guest shell.
quoted=
for arg in "$@"; do
	quoted="$quoted '$(printf '%s' "$arg" | sed "s/'/'\\\\''/g")'"
done

cat >"$root/init" <<EOF
#!/bin/busybox sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
# The applets' links, made in the guest (the arm64 busybox cannot run here).
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s /bin
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
cd /
echo
echo "@@GUEST-START@@"
$quoted
rc=\$?
echo "@@GUEST-EXIT \$rc@@"
sync
reboot -f
EOF
chmod +x "$root/init"

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet -R 0:0) |
	gzip -1 >"$tmp/initramfs.cpio.gz"

if [ -n "${RUN_GUEST_KVM:-}" ]; then
	accel=(-accel kvm -cpu host)
else
	accel=(-accel tcg)
fi

log=$tmp/console.log
set +e
timeout -k 5 "$timeout_s" "${qemu[@]}" "${accel[@]}" \
	-smp "$smp" -m "$mem" \
	-kernel "$kernel" -initrd "$tmp/initramfs.cpio.gz" \
	-append "console=$console quiet panic=-1$append" \
	-nographic -no-reboot -monitor none -nic none </dev/null 2>&1 |
	tr -d '\r' | tee "$log" |
	awk 'started { print; fflush(); next }
	     /@@GUEST-START@@/ { started = 1; next }
	     { print > "/dev/stderr"; fflush("/dev/stderr") }'
qemu_rc=${PIPESTATUS[0]}
set -e

status=$(sed -n 's/^.*@@GUEST-EXIT \([0-9]*\)@@.*$/\1/p' "$log" | tail -n 1)
if [ -z "$status" ]; then
	if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
		echo "$me: guest timed out after ${timeout_s}s without reporting an exit status" >&2
	elif grep -q "Kernel panic" "$log"; then
		echo "$me: guest kernel panicked (no exit status reported)" >&2
	else
		echo "$me: guest stopped without reporting an exit status (qemu exit $qemu_rc)" >&2
	fi
	exit 1
fi
exit "$status"
