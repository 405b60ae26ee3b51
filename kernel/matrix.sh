#!/bin/bash
# The series compiled in the configurations a maintainer's build bots try,
# compile-only: kernel/sched/build_utility.o (which includes membarrier.c)
# with W=1 from kernel/build.sh's cached source tree, with O= outside it:
# the series for LINUX_SOURCE_TARBALL (default linux-source-6.1; 6.12 too).
#
#   smp-off         x86_64, CONFIG_SMP=n
#   sysctl-off      x86_64, CONFIG_SYSCTL=n (no kernel.membarrier_* files)
#   membarrier-off  x86_64, CONFIG_MEMBARRIER=n (kernel/config-nomembarrier.fragment)
#   i386            32-bit x86 (64-bit atomics and divisions)
#   arm64           gcc-aarch64-linux-gnu
#
# Each is tinyconfig + kernel/config.fragment + the configuration's own
# lines (below).  A configuration passes when the object builds, W=1 finds
# no warning in the files the series touches (membarrier.c, its trace
# header, build_utility.c), and the object needs no libgcc helper for 64-bit
# division (__udivdi3 and friends, which a 32-bit kernel does not link).
# Warnings W=1 finds elsewhere are counted, not failed.
#
# Usage: kernel/matrix.sh [CONFIG...]     (default: all of them)
# Prints "CONFIG: ok ..." or "CONFIG: FAIL ..." per configuration; exit
# status 0 if all passed.  Passes are cached by the content of the
# patches, the fragment, this script and the compilers' versions, in
# ${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier};
# the first run takes about 1-2 minutes per configuration on 2 cores.
set -euo pipefail
me=kernel/matrix.sh
here=$(cd "$(dirname "$0")" && pwd)
cache=${LIBMEMBARRIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libmembarrier}
jobs=${JOBS:-$(nproc)}
all="smp-off sysctl-off membarrier-off i386 arm64"
configs=${*:-$all}

# extra CONFIG: the configuration's lines after config.fragment.
extra() {
	case $1 in
	smp-off) printf '# CONFIG_SMP is not set\n' ;;
	sysctl-off) printf '# CONFIG_SYSCTL is not set\n# CONFIG_PROC_SYSCTL is not set\n' ;;
	membarrier-off) cat "$here/config-nomembarrier.fragment" ;;	# RSEQ too
	i386) printf '# CONFIG_64BIT is not set\n' ;;
	arm64) printf '' ;;
	*) echo "$me: unknown configuration $1 (known: $all)" >&2; exit 2 ;;
	esac
}

# shellcheck source=lib.sh
. "$here/lib.sh"
source_tree && [ -f "$src/Makefile" ] || { echo "$me: kernel/build.sh source failed" >&2; exit 1; }
# The tree and its series (the hash of the series file and its patches).
key=$( (echo "$src $src_key"; cat "$here/config.fragment" "$here/lib.sh" \
	"$here/config-nomembarrier.fragment" "$0"
	gcc --version | head -n 1
	aarch64-linux-gnu-gcc --version 2>/dev/null | head -n 1 || true) | sha256sum | cut -c1-16)
out=$cache/matrix-$key
mkdir -p "$out"

failed=0
for c in $configs; do
	extra "$c" >/dev/null
	if [ ! -f "$out/$c.result" ]; then
		arch=x86_64 cross=
		case $c in
		i386) arch=i386 ;;
		arm64) arch=arm64 cross=aarch64-linux-gnu- ;;
		esac
		if [ -n "$cross" ] && ! command -v "${cross}gcc" >/dev/null; then
			echo "$c: FAIL ${cross}gcc not found (apt-get install gcc-aarch64-linux-gnu)"
			failed=1
			continue
		fi
		obj=$out/$c.obj log=$out/$c.log
		rm -rf "$obj" && mkdir -p "$obj"
		extra "$c" >"$out/$c.fragment"
		start=$(date +%s)
		mk() { make -C "$src" O="$obj" ARCH="$arch" ${cross:+CROSS_COMPILE=$cross} "$@"; }
		result=
		{
			mk tinyconfig &&
			"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
				"$here/config.fragment" "$out/$c.fragment" &&
			mk olddefconfig &&
			mk -j"$jobs" W=1 kernel/sched/build_utility.o
		} >"$log" 2>&1 || result="FAIL the build failed (log: $log)"
		# The configuration's own lines must have taken effect.
		while read -r line; do
			name=$(sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' <<<"$line")
			if [ -n "$name" ] && grep -q "^$name=y" "$obj/.config"; then
				result="FAIL $name is still set"
			fi
		done <"$out/$c.fragment"
		if [ -z "$result" ]; then
			ours=$( { grep -E '(membarrier|build_utility)\.[ch]:[0-9]+:[0-9]+: warning' "$log" ||
				true; } | sort -u | wc -l)
			others=$( { grep -E ': warning: ' "$log" || true; } |
				{ grep -vE '(membarrier|build_utility)\.[ch]:' || true; } | sort -u | wc -l)
			helpers=$(nm -u "$obj/kernel/sched/build_utility.o" |
				grep -E '__(u)?(div|mod)di3' | tr -s ' \n' ' ' || true)
			mb=$(grep -c '^CONFIG_MEMBARRIER=y' "$obj/.config" || true)
			if [ "$ours" != 0 ]; then
				result="FAIL $ours W=1 warnings in the series' files (log: $log)"
			elif [ -n "$helpers" ]; then
				result="FAIL needs libgcc's$helpers"
			else
				result="ok in $(( $(date +%s) - start )) s, ARCH=$arch, CONFIG_MEMBARRIER=$([ "$mb" = 1 ] && echo y || echo n), 0 W=1 warnings in the series' files ($others elsewhere in kernel/sched)"
			fi
		fi
		rm -rf "$obj"
		# Only a pass is kept: a failure is built again next time.
		case $result in ok*) echo "$result" >"$out/$c.result" ;; esac
	else
		result=$(cat "$out/$c.result")
	fi
	echo "$c: $result"
	case $result in ok*) ;; *) failed=1 ;; esac
done
exit "$failed"
