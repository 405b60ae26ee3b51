#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make bench: every figure of the report, measured in one run, on the host
# and in QEMU guests on the patched kernel, then bench/report.sh turns them
# into bench-report/report.md and PNG plots in the build tree.
#
#   1. heavy-side latency per mechanism, host and guest at 1, 2, 4, 8 vCPUs,
#      and the 2015 commit's 1000-call measurement in the largest guest
#      that has no more vCPUs than the host has CPUs (beyond that, TCG's
#      vCPU threads queue for the host's CPUs and every IPI waits for a
#      host time slice, which would make 1000 calls take minutes);
#   2. the reader/writer table and the light barrier alone (host);
#   3. the denial-of-service figure (guest, 2 vCPUs), and fairness: an
#      honest caller's latency and the victim's IPI rate under attackers
#      of 1 to 64 threads, uids or uids of a user namespace (guest, 2
#      vCPUs);
#   4. the wrapper's cost: callgrind instructions and QUERY timings (host);
#   5. the signal mechanism per thread, and under CPU contention (host);
#   6. concurrent heavy barriers, sharing calls or not (host).
#
# Environment (defaults in brackets, sized for a full run in well under 20
# minutes on 2 host cores, where TCG runs the guests):
#   BENCH_SECONDS [1]       per latency measurement (or BENCH_MAXCALLS calls)
#   BENCH_MAXCALLS [200000]
#   BENCH_VCPUS ["1 2 4 8"] guest sizes (the patched kernel has NR_CPUS=8)
#   BENCH_REPEAT_CALLS [1000]  the 2015 measurement's call count
#   BENCH_REPEAT_VCPUS [see 1. above]
#   BENCH_RW_SECONDS [2] BENCH_RW_REPS [5]
#   BENCH_RW_READERS [6] BENCH_RW_WRITERS [2]  (the 2015 table's)
#   BENCH_DOS_SECONDS [1.5]  per phase; 3 interleaved rounds of 6 phases
#   BENCH_FAIR_SECONDS [4]   per phase; 3 interleaved rounds of 5 phases
#   BENCH_CALLGRIND_CALLS [100000]
#   BENCH_LIGHT_ROUNDS [101]  interleaved rounds of bench/light
#   BENCH_SHARE_SECONDS [1]   per bench/share run (72 runs)
#   BENCH_REPORT [bench-report in the build tree]
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-$(dirname "$0")/..}" && pwd)
CC=${CC:-gcc}
b=$top_builddir/bench
out=${BENCH_REPORT:-$top_builddir/bench-report}
secs=${BENCH_SECONDS:-1}
maxcalls=${BENCH_MAXCALLS:-200000}
vcpus=${BENCH_VCPUS:-1 2 4 8}
repeat_calls=${BENCH_REPEAT_CALLS:-1000}
rw_secs=${BENCH_RW_SECONDS:-2}
rw_reps=${BENCH_RW_REPS:-5}
readers=${BENCH_RW_READERS:-6}
writers=${BENCH_RW_WRITERS:-2}
dos_secs=${BENCH_DOS_SECONDS:-1.5}
fair_secs=${BENCH_FAIR_SECONDS:-4}
cg_calls=${BENCH_CALLGRIND_CALLS:-100000}
light_rounds=${BENCH_LIGHT_ROUNDS:-101}
share_secs=${BENCH_SHARE_SECONDS:-1}
repeat_vcpus=${BENCH_REPEAT_VCPUS:-$(for n in $vcpus; do echo "$n"; done | sort -n |
	awk -v c="$(nproc)" 'NR == 1 || $1 <= c { v = $1 } END { print v }')}
start=$(date +%s)

progress() {
	printf '[%4ss] %s\n' $(($(date +%s) - start)) "$*"
}

# A result line, short, for the progress output.
show() {
	awk '/^RESULT / {
		s = ""
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] ~ /^(label|calls|calls_per_heavy|worst_ms|p99_us|mean_us|median_us|ipi_per_call|mech|reads_per_s|ns_per_read|violations|victim_ops_per_s|victim_ipis_per_s|victim_irqs_per_s|attacker_calls_per_s|ns|instructions|skipped)$/)
				s = s " " $i
		}
		printf "         %s\n", s; fflush()
	}'
}

# ### Prerequisites: say which package is missing, then stop #################
missing=
need() { # COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need gnuplot gnuplot-nox
need valgrind valgrind
need callgrind_annotate valgrind
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need taskset util-linux
[ -x "${BUSYBOX:-/bin/busybox}" ] || missing="$missing busybox-static"
[ -f "${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}" ] ||
	missing="$missing linux-source-6.1"
if [ ! -x "$b/rw-urcu" ]; then
	if pkg-config --exists liburcu-memb 2>/dev/null; then
		echo "make bench: liburcu-dev is installed, but configure ran before it was: re-run configure" >&2
		exit 1
	fi
	missing="$missing liburcu-dev"
fi
if [ -n "$missing" ]; then
	missing=$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')
	echo "make bench: missing packages: $missing" >&2
	echo "make bench: install them with: apt-get install $missing" >&2
	case " $missing " in
	*" liburcu-dev "*) echo "make bench: then re-run configure, which looks for liburcu-dev" >&2 ;;
	esac
	exit 1
fi

rm -rf "$out"
mkdir -p "$out/data" || exit 1
data=$out/data
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host_kernel=$(uname -srm)"
	echo "host_cpu=${cpu_model:-unknown}"
	echo "host_cpus=$(nproc)"
	echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "qemu=$(qemu-system-x86_64 --version | head -n 1)"
	echo "rw_readers=$readers"
	echo "rw_writers=$writers"
	echo "rw_seconds=$rw_secs"
	echo "rw_reps=$rw_reps"
	echo "latency_seconds=$secs"
	echo "latency_maxcalls=$maxcalls"
	echo "repeat_calls=$repeat_calls"
	echo "dos_seconds=$dos_secs"
	echo "fair_seconds=$fair_secs"
	echo "share_seconds=$share_secs"
	echo "repeat_vcpus=$repeat_vcpus"
	echo "vcpus=$vcpus"
} >"$data/machine.txt"
progress "make bench: $(uname -srm), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); report in $out"

# ### 1. Heavy-side latency on the host #####################################
progress "host: heavy-side latency per mechanism, ${secs}s or $maxcalls calls each"
lat() { # MECH LABEL [env...]
	mech=$1 label=$2
	shift 2
	env "$@" "$b/latency" "$mech" "$secs" "$maxcalls" "$label"
}
{
	lat global global -u LIBMEMBARRIER_HEAVY
	lat global-expedited global-expedited -u LIBMEMBARRIER_HEAVY
	lat private-expedited private-expedited -u LIBMEMBARRIER_HEAVY
	lat shared-expedited shared-expedited-on -u LIBMEMBARRIER_HEAVY
	lat mprotect mprotect -u LIBMEMBARRIER_HEAVY
	for m in auto private-expedited shared-expedited global signal fence; do
		lat heavy "heavy-$m" LIBMEMBARRIER_HEAVY=$m
	done
} 2>&1 | tee "$data/host-latency.txt" | show

progress "host: the 2015 measurement, $repeat_calls calls (at most 60 s each)"
for m in global global-expedited private-expedited; do
	env -u LIBMEMBARRIER_HEAVY "$b/latency" $m 60 "$repeat_calls" "repeat-$m"
done 2>&1 | tee "$data/host-repeat.txt" | show

# ### 2. The reader/writer table (host) #####################################
progress "host: reader/writer, $readers readers and $writers writers, ${rw_secs}s x $rw_reps rounds per flavour"
: >"$data/rw.txt"
r=1
while [ "$r" -le "$rw_reps" ]; do
	{
		"$b/rw-fence" "$readers" "$writers" "$rw_secs" fence
		"$b/rw-compile-time" "$readers" "$writers" "$rw_secs" compile-time
		env -u LIBMEMBARRIER_HEAVY "$b/rw-run-time" "$readers" "$writers" "$rw_secs" run-time
		LIBMEMBARRIER_HEAVY=signal "$b/rw-run-time" "$readers" "$writers" "$rw_secs" run-time-signal
		"$b/rw-urcu" "$readers" "$writers" "$rw_secs" liburcu-memb
	} 2>&1 | sed "s/^RESULT /RESULT round=$r /" | tee -a "$data/rw.txt" | show
	r=$((r + 1))
done
# The light side alone: one reader pinned to a CPU, no writer, so no heavy
# barrier and no other reader shares its CPU.
last_cpu=$(($(nproc) - 1))
progress "host: one reader alone on CPU $last_cpu, no writer, 1 s x $rw_reps rounds per flavour"
r=1
while [ "$r" -le "$rw_reps" ]; do
	for f in fence compile-time run-time; do
		taskset -c "$last_cpu" env -u LIBMEMBARRIER_HEAVY "$b/rw-$f" 1 0 1 "alone-$f"
	done 2>&1 | sed "s/^RESULT /RESULT round=$r /" | tee -a "$data/rw.txt" | show
	r=$((r + 1))
done
grep -q 'violations=[1-9]' "$data/rw.txt" && {
	echo "make bench: a reader saw a reclaimed object" >&2
	failed=1
}

# The light barrier alone, against a pure compiler barrier: interleaved
# rounds on one pinned CPU, ratios within each round (bench/light.c), then
# instructions per read, which no other job can change (callgrind: the
# difference between 2N and N reads), and the code the compiler made.
progress "host: the light barrier against a compiler barrier, $light_rounds interleaved rounds on CPU $last_cpu"
env -u LIBMEMBARRIER_HEAVY "$b/light" "$light_rounds" "$last_cpu" 2>&1 | tee "$data/light.txt" |
	grep -v 'label=light-round ' | show
cg_read() { # LOOP READS: instructions of the whole program
	rm -f "$tmp/cg"
	env -u LIBMEMBARRIER_HEAVY valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
		"$b/light" count "$1" "$2" >/dev/null 2>&1 || return 1
	callgrind_annotate "$tmp/cg" 2>/dev/null |
		awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
for loop in barrier light call-barrier call-light fence optin-barrier optin call-optin-barrier \
	call-optin; do
	t1=$(cg_read "$loop" "$cg_calls") && t2=$(cg_read "$loop" $((2 * cg_calls))) &&
		[ -n "$t1" ] && [ -n "$t2" ] &&
		awk -v l="$loop" -v a="$t1" -v b="$t2" -v n="$cg_calls" \
			'BEGIN { printf "RESULT label=instr-read-%s instructions=%.2f\n", l, (b - a) / n }'
done | tee -a "$data/light.txt" | show
for f in loop_barrier loop_light read_barrier read_light loop_optin_barrier loop_optin read_optin; do
	echo "$f:"
	objdump -d --no-show-raw-insn "$b/light" |
		awk -v f="<$f>:" '$2 == f { on = 1; next } on && NF == 0 { exit } on' |
		sed 's/^ *[0-9a-f]*:[[:space:]]*/    /; s/[[:space:]]*#.*<\(.*\)>$/    # \1/'
done >"$data/light-objdump.txt"

# ### 4. The wrapper's cost (host) ##########################################
progress "host: QUERY from the library's cache and from the kernel"
env -u LIBMEMBARRIER_HEAVY "$b/latency" query 100000 2>&1 | tee "$data/wrapper.txt" | show
progress "host: instructions per call (callgrind, user space only)"
# Per call: the difference between 2N and N calls, so that
# start-up does not count.  query-count is linked -no-install: no libtool
# wrapper script, callgrind sees the program itself.
total() {
	rm -f "$tmp/cg"
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$b/query-count" "$@" \
		>/dev/null 2>&1 || return 1
	callgrind_annotate "$tmp/cg" 2>/dev/null |
		awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
for cmd in query private-expedited; do
	for how in raw-syscall library; do
		t1=$(total "$how" "$cmd" "$cg_calls") && t2=$(total "$how" "$cmd" $((2 * cg_calls))) &&
			[ -n "$t1" ] && [ -n "$t2" ] &&
			echo "RESULT label=instr-$cmd-$how instructions=$(((t2 - t1) / cg_calls))"
	done
done | tee -a "$data/wrapper.txt" | show

# ### 5. The signal mechanism per thread (host) ################################
progress "host: membarrier_heavy() over signals with 1 running / 32 sleeping threads"
{
	LIBMEMBARRIER_HEAVY=signal "$b/latency" threads 1 0 2000 signal-1-running
	LIBMEMBARRIER_HEAVY=signal "$b/latency" threads 0 32 2000 signal-32-sleeping
	LIBMEMBARRIER_HEAVY=signal "$b/latency" threads 1 32 2000 signal-1-running-32-sleeping
} 2>&1 | tee "$data/signal.txt" | show

# ### 6. Concurrent heavy barriers, shared or not (host) ######################
# bench/share: THREADS callers of membarrier_heavy() in a loop, with a
# light-side thread on each CPU; "on" shares calls (coalesce.c), "off"
# makes one call per barrier.  Three interleaved rounds; the report takes
# medians.
progress "host: concurrent heavy barriers, 1/2/8/32 threads, shared and not, ${share_secs}s each, 3 rounds"
: >"$data/share.txt"
for r in 1 2 3; do
	for m in private-expedited signal global; do
		for n in 1 2 8 32; do
			for how in on off; do
				LIBMEMBARRIER_HEAVY=$m "$b/share" "$n" "$share_secs" "$how" \
					"share-$m-$n-$how"
			done
		done
	done 2>&1 | sed "s/^RESULT /RESULT round=$r /" | tee -a "$data/share.txt" | show
done

# A shared call's runner that cannot run: tests/inversion's scenes (a
# SCHED_IDLE runner beside a spinner on one CPU; a runner stopped by
# ptrace; one starved by a SCHED_FIFO thread), each phase's worst call
# with calls of one's own, shared, and shared with 1.5's unbounded waits.
progress "host: shared calls whose runner is preempted, stopped or starved (tests/inversion)"
"$top_builddir/tests/inversion" 2>&1 | sed -n 's/^# RESULT /RESULT /p' |
	tee "$data/inversion.txt" | show

# The signal mechanism under CPU contention: a preempted, runnable thread
# must get its CPU back to run the handler.  1, 2 and 4 threads running
# membarrier_light() on each other CPU, the caller alone on CPU 0.
progress "host: membarrier_heavy() over signals with 1, 2, 4 runnable threads per other CPU"
others=$(($(nproc) - 1))
[ "$others" -ge 1 ] || others=1
for k in 1 2 4; do
	LIBMEMBARRIER_HEAVY=signal "$b/latency" threads $((k * others)) 0 200 "signal-runnable-$k"
done 2>&1 | tee -a "$data/signal.txt" | show

# ### Guests ###################################################################
progress "guest: the patched kernel (kernel/build.sh patched; cached after the first build)"
kdir=$("$top_srcdir/kernel/build.sh" patched | tail -n 1)
if [ ! -f "$kdir/bzImage" ]; then
	echo "make bench: kernel/build.sh patched failed" >&2
	exit 1
fi
mkdir -p "$tmp/bench"
for p in latency dos fair; do
	"$CC" -static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread \
		-I"$top_builddir" -I"$top_builddir/libmembarrier" -I"$top_srcdir/libmembarrier" \
		-I"$top_srcdir/bench" -o "$tmp/bench/$p" "$top_srcdir/bench/$p.c" \
		"$top_srcdir"/libmembarrier/*.c || { echo "make bench: cannot build $p statically" >&2; exit 1; }
done
"$CC" -static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread -isystem "$kdir/usr/include" \
	-o "$tmp/bench/abuse" "$top_srcdir/tests/guest/abuse.c" ||
	{ echo "make bench: cannot build tests/guest/abuse.c statically" >&2; exit 1; }

# guest N TIMEOUT SCRIPT OUTFILE: boot with N vCPUs, run SCRIPT, keep the
# RESULT lines (tagged with vcpus=N) and show them as they come.
guest() {
	cp "$3" "$tmp/bench/guest.sh"
	"$top_srcdir/tests/guest/run-guest.sh" --kernel "$kdir" --smp "$1" --timeout "$2" \
		--mem "${5:-256}" --add "$tmp/bench:/bench" -- sh /bench/guest.sh 2>"$tmp/console.log" |
		sed -u "s/^RESULT /RESULT vcpus=$1 /" | tee "$tmp/guest.out" | show
	cat "$tmp/guest.out" >>"$4"
	grep -q "@@GUEST-EXIT 0@@" "$tmp/guest.out" || {
		echo "make bench: the guest with $1 vCPUs failed; its console:" >&2
		tail -n 20 "$tmp/console.log" >&2
		failed=1
	}
}

: >"$data/guest-latency.txt"
for n in $vcpus; do
	cat >"$tmp/guest-latency.sh" <<EOF
E=/proc/sys/kernel/membarrier_expedited
R=/proc/sys/kernel/membarrier_expedited_max_rate
L="/bench/latency"
C=/sys/devices/system/clocksource/clocksource0/current_clocksource
echo "RESULT label=guest-kernel release=\$(uname -r) default_max_rate=\$(cat \$R) default_expedited=\$(cat \$E) clocksource=\$(cat \$C)"
d=\$(cat \$R)
\$L global $secs $maxcalls global
echo 0 >\$R
\$L shared-expedited $secs $maxcalls shared-expedited-on
echo \$d >\$R
\$L shared-expedited $secs $maxcalls shared-expedited-limit
echo 0 >\$E
\$L shared-expedited $secs $maxcalls shared-expedited-off
echo 1 >\$E
\$L global-expedited $secs $maxcalls global-expedited
\$L private-expedited $secs $maxcalls private-expedited
\$L mprotect $secs $maxcalls mprotect
echo 0 >\$R
for m in auto private-expedited shared-expedited global signal fence; do
	LIBMEMBARRIER_HEAVY=\$m \$L heavy $secs $maxcalls heavy-\$m
done
echo \$d >\$R
if [ $n = $repeat_vcpus ]; then
	\$L global 60 $repeat_calls repeat-global
	echo 0 >\$R
	\$L shared-expedited 60 $repeat_calls repeat-shared-expedited-on
	echo \$d >\$R
	\$L shared-expedited 60 $repeat_calls repeat-shared-expedited-limit
	\$L global-expedited 60 $repeat_calls repeat-global-expedited
	\$L private-expedited 60 $repeat_calls repeat-private-expedited
fi
echo "RESULT label=guest-clocksource-end clocksource=\$(cat \$C)"
EOF
	progress "guest, $n vCPUs: heavy-side latency per mechanism"
	guest "$n" 900 "$tmp/guest-latency.sh" "$data/guest-latency.txt"
done

# ### 3. Denial of service (guest, 2 vCPUs) ###################################
# Three rounds of the four phases, interleaved, so that a change in the
# host's load does not land on one phase only; the report takes medians.
cat >"$tmp/guest-dos.sh" <<EOF
E=/proc/sys/kernel/membarrier_expedited
R=/proc/sys/kernel/membarrier_expedited_max_rate
d=\$(cat \$R)
for round in 1 2 3; do
	/bench/dos idle $dos_secs idle
	/bench/dos busy $dos_secs busy
	echo 0 >\$R
	/bench/dos attack $dos_secs no-limit
	echo \$d >\$R
	/bench/dos attack $dos_secs default-limit
	/bench/dos attack $dos_secs default-limit-8-threads 8
	echo 0 >\$E
	/bench/dos attack $dos_secs expedited-off
	echo 1 >\$E
done
EOF
progress "guest, 2 vCPUs: a victim's throughput and IPIs under a SHARED_EXPEDITED loop"
: >"$data/dos.txt"
guest 2 300 "$tmp/guest-dos.sh" "$data/dos.txt"

# ### 3b. Fairness (guest, 2 vCPUs, both busy) ################################
# An honest caller (uid 1000, SHARED_EXPEDITED 100 times a second) and a
# third process (uid 1001, PRIVATE_EXPEDITED 100 times a second) on the
# victim's CPU 1 while attackers on CPU 0 loop on SHARED_EXPEDITED at the
# default limit: 1, 8 and 64 threads of uid 1002, 64 uids of one user
# namespace, 64 real uids, 8 threads of the honest caller's own uid, 64
# threads with no limit; and a plain busy loop instead of attackers (what
# one more busy vCPU costs under TCG).  2 vCPUs, both busy: more would
# make every IPI wait for the host's scheduler.  Three rounds,
# interleaved; the report takes medians and compares each p99 with the
# unloaded one of the same round.
cat >"$tmp/guest-fair.sh" <<EOF
limit=\$(cat /proc/sys/kernel/membarrier_expedited_max_rate)
for round in 1 2 3; do
	/bench/fair 0 $fair_secs attackers-0 other-uid
	/bench/fair 1 $fair_secs spin-1 spin
	for n in 1 8 64; do
		/bench/fair \$n $fair_secs attackers-\$n other-uid
	done
	/bench/fair 64 $fair_secs userns-64 userns
	/bench/fair 64 $fair_secs uids-64 uids
	/bench/fair 8 $fair_secs same-uid-8 same-uid
	echo 0 >/proc/sys/kernel/membarrier_expedited_max_rate
	/bench/fair 64 $fair_secs unlimited-64 other-uid
	echo \$limit >/proc/sys/kernel/membarrier_expedited_max_rate
done
EOF
progress "guest, 2 vCPUs: an honest caller's latency under SHARED_EXPEDITED attackers"
: >"$data/fair.txt"
guest 2 900 "$tmp/guest-fair.sh" "$data/fair.txt"

# ### 3c. The attacks on series v3's controls (guest, 4 vCPUs) ###############
# tests/guest/abuse.c's phases, three rounds: slow rounds (4 busy vCPUs on
# the host's 2 CPUs) against the IPI mutex, debt after a crowd of 64 uids
# and after max_rate 1 -> 1000, 64 users made of an unprivileged user's
# setuid subuids, a uid that exits and comes back 100 times a second, 20
# attacker uids on the honest caller's CPU, a herd of 4000 threads
# waiting for the rounds an honest caller runs (1 GiB: their stacks);
# each prints a RESULT line.
cat >"$tmp/guest-abuse.sh" <<EOF
for round in 1 2 3; do
	/bench/abuse slowround $fair_secs
	/bench/abuse debt
	/bench/abuse subuid $fair_secs
	/bench/abuse comeback $fair_secs
	/bench/abuse oncpu $fair_secs
	/bench/abuse herd 4
	/bench/abuse rtwait 2
done
EOF
progress "guest, 4 vCPUs: the attacks on series v3's controls"
: >"$data/abuse.txt"
guest 4 900 "$tmp/guest-abuse.sh" "$data/abuse.txt" 1024

echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$data/machine.txt"
echo "elapsed_s=$(($(date +%s) - start))" >>"$data/machine.txt"

# ### The report ###############################################################
progress "writing the report and the plots"
"$top_srcdir/bench/report.sh" "$out" || failed=1
# The goals, met or not, with the measured figures (the report's table).
sed -n '/^## Goals/,/^!\[/p' "$out/report.md" | grep '^| [^-g]' |
	sed 's/^| //; s/ |$//; s/\*\*//g; s/ | /: /; s/ | / -> /; s/ -> $//; s/ |$//'
progress "done: $out/report.md$( [ "$failed" = 0 ] || echo ' (with failures, see above)')"
exit "$failed"
