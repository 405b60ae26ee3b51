#!/bin/bash
# Check a series in kernel/patches (6.1/ or 6.12/, the one for the tarball):
# every patch in its series must apply to a fresh unpack of the Debian
# linux-source tarball with "patch -p1 --fuzz=0" without fuzz
# or offset, and pass "scripts/checkpatch.pl --strict" with no error, warning
# or check. Each patch is checked in the tree where the patches before it
# (and itself) are applied, as a reviewer would see it.
#
# The fresh unpack comes from kernel/build.sh's cache: its source tree (the
# tarball unpacked, the series applied with --fuzz=0) is copied as hard
# links and the series reversed in it, last patch first.  patch(1) writes
# each file it changes anew, so the cache keeps its own copies.  That saves
# unpacking the 130 MB tarball again (half a minute on 2 cores).
#
# Usage: kernel/checkpatch.sh   (LINUX_SOURCE_TARBALL overrides the tarball)
# Exit status: 0 clean, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/checkpatch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

dir=$("$here/build.sh" patches | tail -n 1)
[ -f "$dir/series" ] || { echo "FAIL: kernel/build.sh has no series for this tarball"; exit 1; }
# shellcheck source=lib.sh
. "$here/lib.sh"
source_tree && [ -f "$src/Makefile" ] || { echo "FAIL: kernel/build.sh source failed"; exit 1; }
cached=$src src=$tmp/linux
cp -al "$cached" "$src"
rm -f "$src/.series"
series=()
while read -r p _; do
	case $p in ''|'#'*) continue ;; esac
	series+=("$p")
done <"$dir/series"
for ((i = ${#series[@]} - 1; i >= 0; i--)); do
	patch -d "$src" -p1 -R -s --fuzz=0 --no-backup-if-mismatch \
		<"$dir/${series[i]}" || {
		echo "FAIL: ${series[i]} does not reverse in the cached tree $cached (remove it)"
		exit 1
	}
done
bad=0
while read -r p _; do
	case $p in ''|'#'*) continue ;; esac
	echo "=== $p"
	if ! out=$(patch -d "$src" -p1 --fuzz=0 --no-backup-if-mismatch <"$dir/$p"); then
		echo "$out"; echo "FAIL: does not apply"; bad=1; break
	fi
	if echo "$out" | grep -q -e offset -e fuzz; then
		echo "$out"; echo "FAIL: applies with offset or fuzz"; bad=1
	fi
	# spdxcheck.py needs python3-ply; without it checkpatch skips that check.
	res=$(cd "$src" && scripts/checkpatch.pl --strict "$dir/$p" 2>/dev/null) || true
	echo "$res" | grep -E '^(ERROR|WARNING|CHECK)|^total:' || true
	echo "$res" | grep -q '^total: 0 errors, 0 warnings, 0 checks' || bad=1
done < <(printf '%s\n' "${series[@]}")
if [ "$bad" = 0 ]; then echo "all patches apply cleanly and are checkpatch --strict clean"; fi
exit "$bad"
