# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by kernel/checkpatch.sh and kernel/matrix.sh, which use the
# source tree of kernel/build.sh after it exits.
#
# source_tree (with here, the kernel/ directory, set): sets src (the
# tree: the tarball unpacked, the series for it applied) and src_key (the
# series it holds), and takes a shared lock on it, on file descriptor 7,
# until the script exits.  kernel/build.sh
# keeps one tree per tarball and brings it to the series it is run for:
# the lock makes a run for another series wait until the script is done
# with the tree, and the key says it still holds this series.
source_tree() {
	local out
	for _ in 1 2 3; do
		out=$("$here/build.sh" source) || return 1
		src=$(tail -n 1 <<<"$out")
		src_key=$(sed -n 's/^series //p' <<<"$out" | tail -n 1)
		exec 7>"$src.lock"
		flock -s 7
		[ "$(cat "$src/.series" 2>/dev/null)" != "$src_key" ] || return 0
		exec 7>&-
	done
	echo "kernel/lib.sh: $src held another series each of 3 times" >&2
	return 1
}
