#!/bin/bash
# Check kernel/patches: every patch in series must apply to a fresh unpack of
# the Debian linux-source-6.1 tarball with "patch -p1 --fuzz=0" without fuzz
# or offset, and pass "scripts/checkpatch.pl --strict" with no error, warning
# or check. Each patch is checked in the tree where the patches before it
# (and itself) are applied, as a reviewer would see it.
#
# Usage: kernel/checkpatch.sh   (LINUX_SOURCE_TARBALL overrides the tarball)
# Exit status: 0 clean, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/checkpatch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "unpacking $tarball" >&2
tar -xJf "$tarball" -C "$tmp"
src=$(echo "$tmp"/*/)
bad=0
while read -r p _; do
	case $p in ''|'#'*) continue ;; esac
	echo "=== $p"
	if ! out=$(patch -d "$src" -p1 --fuzz=0 --no-backup-if-mismatch <"$here/patches/$p"); then
		echo "$out"; echo "FAIL: does not apply"; bad=1; break
	fi
	if echo "$out" | grep -q -e offset -e fuzz; then
		echo "$out"; echo "FAIL: applies with offset or fuzz"; bad=1
	fi
	# spdxcheck.py needs python3-ply; without it checkpatch skips that check.
	res=$(cd "$src" && scripts/checkpatch.pl --strict "$here/patches/$p" 2>/dev/null) || true
	echo "$res" | grep -E '^(ERROR|WARNING|CHECK)|^total:' || true
	echo "$res" | grep -q '^total: 0 errors, 0 warnings, 0 checks' || bad=1
done <"$here/patches/series"
if [ "$bad" = 0 ]; then echo "all patches apply cleanly and are checkpatch --strict clean"; fi
exit "$bad"
