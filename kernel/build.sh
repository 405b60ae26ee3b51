#!/bin/bash
# Build the guest kernel for the libmembarrier tests, outside the repository.
#
# Usage: kernel/build.sh [patched|nomembarrier|debug|arm64|source|patches]
#                 (default: patched)
#
#   patched       Debian linux-source-6.1 (or 6.12, see LINUX_SOURCE_TARBALL)
#                 + kernel/patches/VERSION/series (6.1 or 6.12: the
#                 tarball's VERSION.PATCHLEVEL),
#                 tinyconfig + kernel/config.fragment +
#                 kernel/config-debian.fragment, built as Debian packages
#                 by kernel/membarrier-build-kernel (the tool
#                 linux-patch-membarrier ships): the same kernel boots the
#                 busybox guests and, installed with dpkg, the Debian 12
#                 guest of tests/debian-guest.sh (one build for both).
#   nomembarrier  the same source, tinyconfig + kernel/config.fragment +
#                 kernel/config-nomembarrier.fragment (CONFIG_MEMBARRIER=n).
#   debug         the same source, plus kernel/config-debug.fragment
#                 (full preemption, lockdep, KASAN, UBSAN, hotplug).
#   arm64         the same source for arm64 (gcc-aarch64-linux-gnu), for
#                 qemu-system-aarch64 -M virt: tinyconfig +
#                 kernel/config-arm64.fragment.
#   source        only the source tree (the tarball unpacked, the series
#                 applied), shared by the others; its directory is the last
#                 line (for kernel/checkpatch.sh and kernel/matrix.sh, which
#                 must not write into it).  One tree per tarball, at the
#                 same path for every series: it holds the series of the
#                 last run, until a run for another series changes it;
#                 the line before says which ("series KEY"), and
#                 kernel/lib.sh's source_tree() holds it.
#   patches       only the directory of the series for the tarball (the
#                 last line), or an error if there is none.
#
# The last line on stdout is the output directory, which contains:
#   bzImage (arm64: Image), config, usr/include (headers_install),
#   selftests/ (static membarrier kselftests), build.log; for patched also
#   debs/ (linux-image-VERSION-membarrier and linux-headers-*) and
#   build-seconds.  kernel/config-VERSION.fragment, where it exists, is
#   added to every x86 variant of that version (6.12: CONFIG_RCU_LAZY).
# Progress goes to stderr, the build output to build.log in that directory.
#
# Everything lives in ${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier},
# keyed by the kernel version (Makefile VERSION.PATCHLEVEL.SUBLEVEL), the
# tarball's sha256 and the sha256 of the patches, series and config
# fragments: a second run rebuilds nothing, a changed patch rebuilds.
# Concurrent runs are serialized with flock.
#
# Environment: LINUX_SOURCE_TARBALL (default /usr/src/linux-source-6.1.tar.xz;
# /usr/src/linux-source-6.12.tar.xz builds the 6.12 kernels),
# LIBMEMBARRIER_CACHE, JOBS (default $(nproc)).
set -euo pipefail

me=kernel/build.sh
# make check exports top_srcdir (the project's), which the kselftests'
# Makefile would take for the kernel's (it sets it only with ?=).
unset top_srcdir
variant=${1:-patched}
case $variant in
patched|nomembarrier|debug|arm64|source|patches) ;;
-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) echo "$me: unknown variant '$variant' (patched|nomembarrier|debug|arm64|source|patches)" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
cache=${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
jobs=${JOBS:-$(nproc)}
# Bump when this script changes what it produces.
schema=2

say() { echo "$me: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ -f "$tarball" ] || die "$tarball not found (apt-get install $(basename "$tarball" .tar.xz))"
# What Kbuild runs besides the compiler (headers_install needs rsync).
# The target: x86_64 natively, or arm64 with Debian's cross compiler.
karch=() image=arch/x86/boot/bzImage
if [ "$variant" = arm64 ]; then
	karch=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-) image=arch/arm64/boot/Image
fi
cc=gcc
[ "$variant" != arm64 ] || cc=aarch64-linux-gnu-gcc
tool=$here/membarrier-build-kernel
for t in make gcc "$cc" flex bison bc rsync cpio xz; do
	command -v "$t" >/dev/null || die "$t not found (see the README's apt-get line)"
done
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# --- cache keys -------------------------------------------------------------
tar_sha=$(sha256sum "$tarball" | cut -c1-16)
# The version comes from the tarball's Makefile; remember it per tarball.
verfile=$cache/tarball-$tar_sha.version
if [ ! -s "$verfile" ]; then
	say "reading the kernel version from $tarball"
	top=$(set +o pipefail; tar -tJf "$tarball" 2>/dev/null | head -n 1 | cut -d/ -f1)
	ver=$(tar -xJOf "$tarball" "$top/Makefile" |
		awk -F' *= *' '/^VERSION/ {v=$2} /^PATCHLEVEL/ {p=$2} /^SUBLEVEL/ {s=$2}
			      END {print v "." p "." s}')
	case $ver in [0-9]*.[0-9]*.[0-9]*) ;; *) die "cannot read the version from $tarball" ;; esac
	echo "$ver $top" >"$verfile.tmp.$$" && mv "$verfile.tmp.$$" "$verfile"
fi
read -r version top <"$verfile"
# The series for this version: kernel/patches/VERSION.PATCHLEVEL.
patchdir=$here/patches/${version%.*}
[ -f "$patchdir/series" ] ||
	die "no series for linux $version in $here/patches (there are: $(cd "$here/patches" && ls -d */ | tr -d / | tr '\n' ' '))"
if [ "$variant" = patches ]; then
	echo "$patchdir"
	exit 0
fi
series=$patchdir/series
patches=()
while read -r p _; do
	case $p in ''|'#'*) continue ;; esac
	[ -f "$patchdir/$p" ] || die "patch $p listed in $series not found"
	patches+=("$patchdir/$p")
done <"$series"
src_key=$(cat "$series" ${patches[@]+"${patches[@]}"} | sha256sum | cut -c1-16)

fragments=("$here/config.fragment")
case $variant in
source) ;;
patched) fragments+=("$here/config-debian.fragment") ;;
arm64) fragments=("$here/config-arm64.fragment") ;;
*) fragments+=("$here/config-$variant.fragment") ;;
esac
[ "$variant" = arm64 ] || [ ! -f "$here/config-${version%.*}.fragment" ] ||
	fragments+=("$here/config-${version%.*}.fragment")
for f in "${fragments[@]}"; do [ -f "$f" ] || die "$f not found"; done
# The patched kernel's packages also depend on the tool that builds them.
build_key=$( (echo "schema=$schema variant=$variant src=$src_key"; cat "${fragments[@]}"
	[ "$variant" != patched ] || cat "$tool") | sha256sum | cut -c1-16)

# One source tree per tarball, at the same path whatever the series: when
# a patch changes, the tree is brought to the new series file by file and
# the compile commands of the kernels built out of tree from it stay the
# same, so that ccache (tests/run-all.sh) recompiles only what the change
# reaches.  $srcdir/.series names the series it holds (src_key).
srcdir=$cache/src-$version-$tar_sha
outdir=$cache/linux-$version-$variant-$build_key
objdir=$outdir/obj

if [ "$variant" != source ] && [ -f "$outdir/.complete" ]; then
	say "up to date: $outdir"
	echo "$outdir"
	exit 0
fi

# --- source tree (shared by the variants) -------------------------------------
# Used under a shared lock, held until this script exits, and changed
# under an exclusive one: a run for another series waits for this one,
# and runs for the same series share the tree.  (kernel/lib.sh takes the
# shared lock for the scripts that use the tree after "source".)
exec 8>"$srcdir.lock"
flock -s 8
if [ "$(cat "$srcdir/.series" 2>/dev/null)" != "$src_key" ]; then
	flock -u 8
	flock -x 8
fi
if [ "$(cat "$srcdir/.series" 2>/dev/null)" != "$src_key" ]; then
	say "unpacking $tarball and applying ${#patches[@]} patches into $srcdir"
	rm -rf "$srcdir.tmp"
	mkdir -p "$srcdir.tmp"
	tar -xJf "$tarball" -C "$srcdir.tmp"
	for p in ${patches[@]+"${patches[@]}"}; do
		out=$(patch -d "$srcdir.tmp/$top" -p1 --fuzz=0 --no-backup-if-mismatch <"$p") ||
			{ echo "$out" >&2; die "$(basename "$p") does not apply"; }
		if echo "$out" | grep -q -e offset -e fuzz; then
			echo "$out" >&2
			say "warning: $(basename "$p") applies with an offset"
		fi
	done
	if [ -d "$srcdir" ]; then
		# Only the files whose content differs are replaced (written
		# anew and renamed: a hard-linked copy keeps its own, though
		# not its modes, which rsync changes in place); the others
		# keep their inode and time.
		rm -f "$srcdir/.series"
		rsync -rlp --checksum --delete --exclude=/.series "$srcdir.tmp/$top/" "$srcdir/"
	else
		mv "$srcdir.tmp/$top" "$srcdir"
	fi
	rm -rf "$srcdir.tmp"
	echo "$src_key" >"$srcdir/.series"
	# The per-series trees of schema 2 (src-VERSION-TARBALL-SERIES).
	rm -rf "$cache/src-$version-$tar_sha-"*
fi
flock -s 8
if [ "$variant" = source ]; then
	echo "series $src_key"
	echo "$srcdir"
	exit 0
fi

# --- build ------------------------------------------------------------------------
exec 9>"$outdir.lock"
flock 9
if [ -f "$outdir/.complete" ]; then
	say "up to date (built by a concurrent run): $outdir"
	echo "$outdir"
	exit 0
fi
# ccache's depend mode (tests/run-all.sh sets CCACHE_DEPEND) compiles a
# miss without running the preprocessor first.  A kernel built from
# nothing (nomembarrier, 2 cores, nothing beside it) took 536 s without
# ccache, 695 s through ccache in its default mode and 530 s in depend
# mode.  Its price: a changed option (autoconf.h) misses every object,
# where the default mode still finds the objects whose preprocessed
# source is the same.  So depend mode only for the first build of a
# variant in this cache (a new machine's); a rebuild for a changed series
# or configuration keeps the default mode.  Depend mode takes the headers
# from the compiler's -MMD list, which leaves out the system's: a host
# program of Kbuild (fixdep, kconfig, objtool) compiled once is found
# again after an upgrade of /usr/include.  So are the kernels themselves:
# the cache keys them by tarball, series and configuration, not by the
# host's compiler or headers.
if [ -n "${CCACHE_DEPEND:-}" ] &&
	compgen -G "$cache/linux-$version-$variant-*/.complete" >/dev/null; then
	unset CCACHE_DEPEND
fi
mkdir -p "$objdir"
log=$outdir/build.log
: >"$log"
start=$(date +%s)
run() {
	echo "+ $*" >>"$log"
	"$@" >>"$log" 2>&1 || { tail -n 30 "$log" >&2; die "failed: $* (full log: $log)"; }
}
mk() { run make -C "$srcdir" O="$objdir" ${karch[@]+"${karch[@]}"} "$@"; }

say "configuring ($variant): tinyconfig + ${fragments[*]##*/}"
mk tinyconfig
run "$srcdir/scripts/kconfig/merge_config.sh" -m -O "$objdir" "$objdir/.config" "${fragments[@]}"
mk olddefconfig
# Every option of the fragments must have survived olddefconfig.
# A later fragment overrides an earlier one, as in merge_config.sh.
missing=$(cat "${fragments[@]}" | sed -n -e 's/^\(CONFIG_[A-Z0-9_]*=.*\)$/\1/p' \
	-e 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1=n/p' |
	awk -F= '{ v[$1] = $0 } END { for (k in v) print v[k] }' | while IFS= read -r want; do
	name=${want%%=*}
	if [ "${want#*=}" = n ]; then
		grep -q "^$name=" "$objdir/.config" && echo "$want"
	else
		grep -qx "$want" "$objdir/.config" || echo "$want"
	fi
done || true)
[ -z "$missing" ] || die "options not in the final .config: $(echo $missing)"

if [ "$variant" = patched ]; then
	# The tool unpacks and patches its own copy of the tarball, as a user's
	# build would, and writes the packages; the kernel and the headers for
	# the busybox guests come from its build tree, kept until then.
	say "building the Debian packages with ${tool##*/} -j$jobs (log: $log)"
	rm -rf "$outdir/debs"
	mkdir -p "$outdir/debs"
	run "$tool" -c "$objdir/.config" -o "$outdir/debs" -p "$here/patches" -s "$tarball" \
		-j "$jobs" --keep
	kept=$(find "$outdir/debs" -mindepth 1 -maxdepth 1 -type d -name 'membarrier-kernel.*')
	[ -n "$kept" ] && [ -f "$kept/$top/$image" ] || die "no kernel in the tool's build tree"
	ls "$outdir/debs"/linux-image-*-membarrier_*.deb >/dev/null 2>&1 ||
		die "the tool made no linux-image package"
	say "installing headers"
	rm -rf "$outdir/usr"
	run make -C "$kept/$top" INSTALL_HDR_PATH="$outdir/usr" headers_install
	cp "$kept/$top/$image" "$outdir/${image##*/}"
	cp "$kept/$top/.config" "$outdir/config"
	rm -rf "$kept" "$objdir"
else
	say "building ${image##*/} with -j$jobs (log: $log)"
	mk -j"$jobs" "${image##*/}"
	say "installing headers"
	rm -rf "$outdir/usr"
	mk INSTALL_HDR_PATH="$outdir/usr" headers_install
	cp "$objdir/$image" "$outdir/${image##*/}"
	cp "$objdir/.config" "$outdir/config"
fi

say "building the membarrier kselftests (static)"
run make -C "$srcdir/tools/testing/selftests" ${karch[@]+"${karch[@]}"} TARGETS=membarrier \
	O="$outdir/kselftest-build" \
	KHDR_INCLUDES="-isystem $outdir/usr/include" LDFLAGS=-static
rm -rf "$outdir/selftests"
mkdir -p "$outdir/selftests"
find "$outdir/kselftest-build" -type f -name 'membarrier_test_*' -perm -u+x \
	-exec cp {} "$outdir/selftests/" \;
[ -n "$(ls "$outdir/selftests")" ] || die "no selftest binary was built"

echo $(( $(date +%s) - start )) >"$outdir/build-seconds"
touch "$outdir/.complete"
say "done in $(( $(date +%s) - start ))s: $outdir"
echo "$outdir"
