#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make bench: the wrapper's cost and heavy-barrier latency per mechanism on
# this machine.  Times are medians of 5 runs in one go; compare them as
# ratios, the machine is shared.  Instruction counts come from callgrind
# where valgrind is installed (repeatable on a noisy machine).
set -u
b=${top_builddir:-.}/bench
seccomp=${top_builddir:-.}/tests/seccomp-run
echo "# machine: $(uname -srm), $(nproc) CPUs"
echo "# what calls ns/call (instructions/call for *-instructions, user space only)"
env -u LIBMEMBARRIER_HEAVY "$b/latency" query 1000000
env -u LIBMEMBARRIER_HEAVY "$b/latency" heavy 20000
LIBMEMBARRIER_HEAVY=signal "$b/latency" heavy 20000
LIBMEMBARRIER_HEAVY=fence "$b/latency" heavy 1000000
LIBMEMBARRIER_HEAVY=global "$b/latency" heavy 50
"$seccomp" ENOSYS env -u LIBMEMBARRIER_HEAVY "$b/latency" heavy 20000 | sed 's/^heavy-/seccomp-enosys-heavy-/'
if command -v valgrind >/dev/null 2>&1; then
	out=$(mktemp -d)
	# Per call: the difference between 200000 and 100000 calls, so that
	# start-up does not count.
	total() {
		valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
			"$b/query-count" "$1" "$2" >/dev/null 2>&1
		callgrind_annotate "$out/cg" 2>/dev/null |
			awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
	}
	for what in raw-syscall library; do
		t1=$(total "$what" 100000); t2=$(total "$what" 200000)
		echo "query-$what-instructions 100000 $(( (t2 - t1) / 100000 ))"
	done
	rm -rf "$out"
fi
