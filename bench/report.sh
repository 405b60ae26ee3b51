#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/report.sh DIR: DIR/report.md and DIR/*.png from the RESULT lines
# that bench/run.sh left in DIR/data.  Run again on the same DIR to redo
# the report without measuring again.
set -u
dir=${1:?usage: report.sh DIR}
d=$dir/data
r=$dir/report.md
[ -f "$d/machine.txt" ] || { echo "report.sh: no $d/machine.txt" >&2; exit 1; }

m() { sed -n "s/^$1=//p" "$d/machine.txt" | tail -n 1; }

# get FILE LABEL FIELD [VCPUS]: the field of the last matching RESULT line.
get() {
	awk -v label="$2" -v field="$3" -v vcpus="${4:-}" '
		/^RESULT / {
			delete kv
			for (i = 2; i <= NF; i++) {
				p = index($i, "=")
				kv[substr($i, 1, p - 1)] = substr($i, p + 1)
			}
			if (kv["label"] != label || (vcpus != "" && kv["vcpus"] != vcpus))
				next
			v = (field in kv) ? kv[field] : ""
		}
		END { print v }' "$d/$1" 2>/dev/null
}

# spread FILE LABEL FIELD: "median smallest largest" over the rounds of a
# label, or nothing.
spread() {
	awk -v label="$2" -v field="$3" '
		/^RESULT / {
			delete kv
			for (i = 2; i <= NF; i++) {
				p = index($i, "=")
				kv[substr($i, 1, p - 1)] = substr($i, p + 1)
			}
			if (kv["label"] == label && (field in kv))
				v[n++] = kv[field] + 0
		}
		END {
			if (!n) { print ""; exit }
			for (i = 0; i < n; i++)
				for (j = i + 1; j < n; j++)
					if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			print ((n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2), v[0], v[n - 1]
		}' "$d/$1" 2>/dev/null
}

# median FILE LABEL FIELD: the median over the rounds of a label.
median() {
	spread "$@" | cut -d' ' -f1
}

# abuse_row LABEL FIELD TEXT: a row of section 3c, median [smallest -
# largest] over the rounds of abuse.txt.
abuse_row() {
	local v
	v=$(spread abuse.txt "$1" "$2" | awk 'NF == 3 { printf "%s [%s - %s]", $1, $2, $3 }')
	printf '| %s | %s |\n' "$3" "${v:--}"
}

# fmt VALUE: a latency in microseconds, 3 significant digits, or "-".
fmt() {
	awk -v x="$1" 'BEGIN {
		if (x == "") { print "-"; exit }
		x += 0
		if (x >= 100) printf "%.0f\n", x
		else if (x >= 10) printf "%.1f\n", x
		else if (x >= 1) printf "%.2f\n", x
		else printf "%.3f\n", x
	}'
}

# ratio A B [DIGITS]: A / B, or "-".
ratio() {
	awk -v a="$1" -v b="$2" -v n="${3:-1}" 'BEGIN {
		if (a == "" || b == "" || b + 0 == 0) print "-"
		else printf "%." n "f\n", a / b
	}'
}

# sig VALUE: 3 significant digits, or "-".
sig() {
	awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.3g\n", x }'
}

sci() {
	awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.3g\n", x }'
}

vcpus=$(m vcpus)
largest=$(echo $vcpus | tr ' ' '\n' | sort -n | tail -n 1)
gkernel=$(get guest-latency.txt guest-kernel release)
hostcpus=$(m host_cpus)

# ### Plot data ##############################################################
kernel_rows="global shared-expedited-on shared-expedited-limit shared-expedited-off global-expedited private-expedited mprotect"
library_rows="heavy-auto heavy-private-expedited heavy-shared-expedited heavy-global heavy-signal heavy-fence"
for set in kernel library; do
	eval rows=\$${set}_rows
	{
		printf 'vcpus'
		for l in $rows; do printf ' %s' "$l"; done
		printf '\n'
		for n in $vcpus; do
			printf '%s' "$n"
			for l in $rows; do
				v=$(get guest-latency.txt "$l" median_us "$n")
				printf ' %s' "${v:-NaN}"
			done
			printf '\n'
		done
	} >"$d/plot-$set.dat"
done

for l in fence compile-time run-time run-time-signal liburcu-memb; do
	echo "$l $(awk -v x="$(median rw.txt "$l" ns_per_read)" 'BEGIN { if (x > 0) print 1e9 / x; else print "NaN" }')"
done >"$d/plot-rw.dat"

# The light barrier's per-round ratios (bench/light.c).
awk '/label=light-round / {
	r = ""; i = ""; c = ""
	for (k = 2; k <= NF; k++) {
		split($k, kv, "=")
		if (kv[1] == "round") r = kv[2]
		if (kv[1] == "ratio_inline") i = kv[2]
		if (kv[1] == "ratio_call") c = kv[2]
	}
	print r, i, c
}' "$d/light.txt" 2>/dev/null >"$d/plot-light.dat"

idle_ops=$(median dos.txt idle victim_ops_per_s)
busy_ops=$(median dos.txt busy victim_ops_per_s)
for l in idle busy no-limit default-limit default-limit-8-threads expedited-off; do
	echo "$l $(ratio "$(median dos.txt "$l" victim_ops_per_s)" "$busy_ops" 3 | sed 's/^-$/NaN/') $(median dos.txt "$l" victim_ipis_per_s)"
done >"$d/plot-dos.dat"

if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
	term="pngcairo font 'Sans,10'"
else
	term="png"
fi
ncol_k=$(echo $kernel_rows | wc -w)
ncol_l=$(echo $library_rows | wc -w)
gnuplot <<EOF || echo "report.sh: gnuplot failed" >&2
set terminal $term size 1300,520
set termoption noenhanced
set output '$dir/latency.png'
set multiplot layout 1,2 title "Heavy-side latency per call, QEMU TCG guest on linux $gkernel (median, log scale)"
set logscale xy 2
set logscale y 10
set xtics ($(echo $vcpus | sed 's/\([0-9]*\)/"\1" \1/g; s/ "/, "/g'))
set xrange [0.8:$largest * 1.25]
set xlabel "guest vCPUs (one busy thread of the process on each other vCPU)"
set ylabel "microseconds per call"
set grid
set key outside right top vertical
set key autotitle columnhead
set arrow 1 from $hostcpus * 1.4, graph 0 to $hostcpus * 1.4, graph 1 nohead dt 2 lc rgb "gray40"
set label 1 "more vCPUs than\nthe host's $hostcpus CPUs" at $hostcpus * 1.5, graph 0.1 left textcolor rgb "gray40"
set title "kernel commands (raw), and the mprotect trick"
plot for [i=2:$((ncol_k + 1))] '$d/plot-kernel.dat' using 1:i with linespoints lw 2 pt (i + 3)
set title "the library's membarrier_heavy(), per LIBMEMBARRIER_HEAVY"
plot for [i=2:$((ncol_l + 1))] '$d/plot-library.dat' using 1:i with linespoints lw 2 pt (i + 3)
unset multiplot

set output '$dir/rw.png'
unset arrow
unset label
unset logscale
set autoscale
unset xrange
set xtics auto
set multiplot layout 1,2
set title "reader/writer (host, $hostcpus CPUs): $(m rw_readers) readers, $(m rw_writers) writers,\nread-side critical sections per CPU-second of the readers, median of $(m rw_reps) rounds"
set style fill solid 0.7 border -1
set xrange [-0.6:4.6]
set xtics rotate by -25
set boxwidth 0.6
set offsets 0, 0, graph 0.1, 0
set key noautotitle
set key off
set xlabel ""
set ylabel "reads per CPU-second"
set yrange [0:*]
plot '$d/plot-rw.dat' using 0:2:xtic(1) with boxes lc rgb "#4477aa", \
     '' using 0:2:(sprintf("%.3g", \$2)) with labels offset 0,1
unset logscale
set title "denial of service: the victim's throughput (guest, 2 vCPUs),\nmedian of 3 rounds, with the IPIs it took"
set ylabel "victim loop iterations, fraction of busy"
set yrange [0:*]
set xrange [-0.6:5.6]
plot '$d/plot-dos.dat' using 0:2:xtic(1) with boxes lc rgb "#cc6677", \
     '' using 0:2:(sprintf("%.2f, %.0f IPI/s", \$2, \$3)) with labels offset 0,1
unset multiplot

set output '$dir/light.png'
set multiplot layout 1,2 title "membarrier_light() / compiler barrier, per interleaved round (host, one pinned CPU)"
set style fill solid 0.5 border -1
set xtics auto norotate
set autoscale
unset xrange
set offsets 0, 0, 0, 0
set key inside top left
set grid
set title "ratio per round"
set xlabel "round"
set ylabel "ns per read, light / barrier"
set yrange [0.8:1.4]
set arrow 2 from graph 0, first 1.02 to graph 1, first 1.02 nohead dt 2 lc rgb "gray30"
plot '$d/plot-light.dat' using 1:2 with points pt 7 ps 0.6 lc rgb "#4477aa" title "in the reader loop", \
     '' using 1:3 with points pt 5 ps 0.6 lc rgb "#cc6677" title "in a separate function"
unset arrow 2
set title "distribution (bins of 0.01; dashed: the 2% goal)"
set xlabel "ratio"
set ylabel "rounds"
set xrange [0.8:1.4]
set yrange [0:*]
set arrow 3 from 1.02, graph 0 to 1.02, graph 1 nohead dt 2 lc rgb "gray30"
bin(x) = 0.01 * floor(x / 0.01 + 0.5)
set boxwidth 0.009
plot '$d/plot-light.dat' using (bin(\$2)):(1.0) smooth frequency with boxes lc rgb "#4477aa" title "in the reader loop", \
     '' using (bin(\$3)):(1.0) smooth frequency with boxes lc rgb "#cc6677" title "in a separate function"
unset multiplot
EOF

# ### The report ###############################################################
# Read side: nanoseconds of the readers' CPU time per read (median of the
# rounds), which the load of other jobs on the host does not change much.
rt=$(median rw.txt run-time ns_per_read)
ct=$(median rw.txt compile-time ns_per_read)
fe=$(median rw.txt fence ns_per_read)
ur=$(median rw.txt liburcu-memb ns_per_read)
rt_vs_ct=$(awk -v a="$rt" -v b="$ct" 'BEGIN { if (a == "" || b == "" || a == 0) print ""; else printf "%.1f\n", (b / a - 1) * 100 }')
rt_vs_fe=$(ratio "$fe" "$rt" 2)
art=$(median rw.txt alone-run-time ns_per_read)
act=$(median rw.txt alone-compile-time ns_per_read)
afe=$(median rw.txt alone-fence ns_per_read)
art_vs_act=$(awk -v a="$art" -v b="$act" 'BEGIN { if (a == "" || b == "" || a == 0) print ""; else printf "%.1f\n", (b / a - 1) * 100 }')
goal_2a=$(awk -v x="$art_vs_act" 'BEGIN { if (x == "") print "not measured"; else print (x >= -2) ? "met" : "not met" }')
goal_2=$(awk -v x="$rt_vs_ct" 'BEGIN { if (x == "") print "not measured"; else print (x >= -2) ? "met" : "not met" }')
goal_4=$(awk -v x="$rt_vs_fe" 'BEGIN { if (x == "-") print "not measured"; else print (x >= 4) ? "met" : "not met" }')
rv=$(m repeat_vcpus)
g_global=$(get guest-latency.txt repeat-global mean_us "$rv")
g_shared=$(get guest-latency.txt repeat-shared-expedited-on mean_us "$rv")
g_private=$(get guest-latency.txt repeat-private-expedited mean_us "$rv")
s1=$(get signal.txt signal-1-running median_us)
s1p=$(get signal.txt signal-1-running p90_us)
s32=$(get signal.txt signal-32-sleeping median_us)
s32p=$(get signal.txt signal-32-sleeping p90_us)
s133=$(get signal.txt signal-1-running-32-sleeping median_us)
s133p=$(get signal.txt signal-1-running-32-sleeping p90_us)
q_k=$(get wrapper.txt query-kernel ns)
q_l=$(get wrapper.txt query-library ns)
q_f=$(get wrapper.txt query-function ns)
i_pl=$(get wrapper.txt instr-private-expedited-library instructions)
i_pr=$(get wrapper.txt instr-private-expedited-raw-syscall instructions)
i_ql=$(get wrapper.txt instr-query-library instructions)
i_qr=$(get wrapper.txt instr-query-raw-syscall instructions)
lt() { get light.txt "light-$1" "$2"; }
li_goal=$(lt inline met | sed 's/^yes$/met/; s/^no$/not met/; s/^$/not measured/')
lc_goal=$(lt call met | sed 's/^yes$/met/; s/^no$/not met/; s/^$/not measured/')
lo_goal=$(lt optin met | sed 's/^yes$/met/; s/^no$/not met/; s/^$/not measured/')
lco_goal=$(lt call-optin met | sed 's/^yes$/met/; s/^no$/not met/; s/^$/not measured/')
ir() { get light.txt "instr-read-$1" instructions; }
sr() { get signal.txt "signal-runnable-$1" "$2"; }
# sh MECH THREADS on|off FIELD: the median over the rounds of bench/share.
sh_() { median share.txt "share-$1-$2-$3" "$4"; }
sh_cph8=$(sh_ private-expedited 8 on calls_per_heavy)
sh_med8=$(ratio "$(sh_ private-expedited 8 on median_us)" "$(sh_ private-expedited 1 on median_us)" 2)
sg_cph8=$(sh_ signal 8 on calls_per_heavy)
sg_med8=$(ratio "$(sh_ signal 8 on median_us)" "$(sh_ signal 1 on median_us)" 2)
# inv MECH SCENE own|shared|control: the worst call of tests/inversion's phase.
inv() { get inversion.txt "inversion-$1-$2-$3" worst_ms; }
inv_worst=$(for sc in private-expedited:idle private-expedited:stopped private-expedited:fifo \
	private-expedited:sigstop signal:stopped; do
	ratio "$(inv "${sc%%:*}" "${sc#*:}" shared)" "$(inv "${sc%%:*}" "${sc#*:}" own)" 2
done | awk '$1 != "-" { if (n++ == 0 || $1 > m) m = $1 } END { if (n) print m }')
verdict() { # VALUE OP LIMIT
	awk -v x="$1" -v op="$2" -v l="$3" 'BEGIN {
		if (x == "" || x == "-") { print "not measured"; exit }
		ok = op == "<=" ? x + 0 <= l + 0 : x + 0 >= l + 0
		print ok ? "met" : "not met" }'
}
q_ratio=$(get wrapper.txt query-library speedup_median)
q_lo=$(get wrapper.txt query-library speedup_ci95_lo)
q_hi=$(get wrapper.txt query-library speedup_ci95_hi)
q_fratio=$(get wrapper.txt query-function speedup_median)
goal_wrap=$(verdict "$i_pl" "<=" 40)
goal_query=$(verdict "$q_lo" ">=" 100)
goal_s1=$(verdict "$s1" "<=" 10)
goal_s32=$(verdict "$s32" "<=" 50)
# fair_ratio LABEL FIELD [BASE]: per round, FIELD of LABEL over FIELD of
# BASE (default attackers-0) in the same round; prints "median min max"
# over the rounds.
fair_ratio() {
	awk -v label="$1" -v field="$2" -v baselabel="${3:-attackers-0}" '
		/^RESULT / {
			delete kv
			for (i = 2; i <= NF; i++) { p = index($i, "="); kv[substr($i, 1, p - 1)] = substr($i, p + 1) }
			if (kv["label"] == baselabel) { rd++; base[rd] = kv[field] + 0 }
			if (kv["label"] == label && rd && base[rd] > 0) r[n++] = (kv[field] + 0) / base[rd]
		}
		END {
			if (!n) { print "- - -"; exit }
			for (i = 0; i < n; i++)
				for (j = i + 1; j < n; j++)
					if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
			printf "%.2f %.2f %.2f\n", (n % 2) ? r[int(n / 2)] : (r[n / 2 - 1] + r[n / 2]) / 2, r[0], r[n - 1]
		}' "$d/fair.txt" 2>/dev/null
}
fair_limit=$(get guest-latency.txt guest-kernel default_max_rate)
# The worst honest p99 ratio over the attacks the 2 x goal covers (one
# user: 1, 8, 64 threads, or 64 uids of its user namespace), the worst
# p99 over 64 real users against unloaded + 2 / max_rate, and the worst
# victim IPI rate (medians over the rounds).
# fair_worst_p99 BASE: the largest of those median ratios against BASE.
fair_worst_p99() {
	for l in attackers-1 attackers-8 attackers-64 userns-64; do
		fair_ratio $l honest_p99_us "$1" | cut -d' ' -f1
	done | sort -g | tail -n 1
}
fair_worst_p99=$(fair_worst_p99 attackers-0)
# The same against the busy-loop phase: one more busy vCPU, no attack.
fair_worst_p99_spin=$(fair_worst_p99 spin-1)
fair_unloaded_p99=$(median fair.txt attackers-0 honest_p99_us)
fair_uids_p99=$(median fair.txt uids-64 honest_p99_us)
fair_uids_bound=$(awk -v u="$fair_unloaded_p99" -v l="$fair_limit" 'BEGIN {
	if (u != "" && l > 0) printf "%.0f", u + 2e6 / l }')
fair_worst_ipi=$(for l in attackers-1 attackers-8 attackers-64 userns-64 uids-64; do
	median fair.txt $l victim_ipis_per_s; done | sort -g | tail -n 1)
fair_gp=$(awk '/^RESULT / && /label=(attackers|userns|uids|same-uid)/ {
	for (i = 2; i <= NF; i++) if ($i ~ /^stats_grace_period=/) n += substr($i, 20) }
	END { print n + 0 }' "$d/fair.txt" 2>/dev/null)
goal_fair_p99=$(verdict "$fair_worst_p99" "<=" 2)
goal_fair_p99_spin=$(verdict "$fair_worst_p99_spin" "<=" 2)
goal_fair_uids=$(verdict "$fair_uids_p99" "<=" "${fair_uids_bound:-0}")
goal_fair_ipi=$(awk -v x="$fair_worst_ipi" -v l="$fair_limit" 'BEGIN {
	if (x == "" || l == "") print "not measured"; else print (x + 0 <= 1.1 * l) ? "met" : "not met" }')
dos_nl=$(median dos.txt no-limit victim_ops_per_s)
dos_dl=$(median dos.txt default-limit victim_ops_per_s)
dos_off=$(median dos.txt expedited-off victim_ops_per_s)

{
cat <<EOF
# libmembarrier benchmarks

Produced by \`make bench\` on $(m date), in $(m elapsed_s) s.  Settings:
$(m vcpus | sed 's/ /, /g') guest vCPUs, $(m latency_seconds) s or $(m latency_maxcalls) calls per latency
figure, $(m repeat_calls) calls for the 2015 repeat, reader/writer $(m rw_reps) x $(m rw_seconds) s,
denial of service $(m dos_seconds) s per phase (bench/run.sh says how to change them).

| | |
|---|---|
| host | $(m host_cpu), $hostcpus CPUs, $(m host_kernel) |
| host load average (1, 5, 15 min) | $(m load_start) at the start, $(m load_end) at the end |
| guest | linux $gkernel with the SHARED_EXPEDITED series, $(m qemu), TCG (no KVM), 256 MB, $(echo $vcpus | sed 's/ /, /g') vCPUs |
| guest clocksource (at boot, at the end), per vCPU count | $(for n in $vcpus; do printf '%s: %s, %s; ' "$n" "$(get guest-latency.txt guest-kernel clocksource "$n")" "$(get guest-latency.txt guest-clocksource-end clocksource "$n")"; done | sed 's/; $//') |
| guest sysctl defaults | kernel.membarrier_expedited = $(get guest-latency.txt guest-kernel default_expedited), kernel.membarrier_expedited_max_rate = $(get guest-latency.txt guest-kernel default_max_rate) |

Compare figures as ratios within this run: the host is shared, and the
guests' CPUs are emulated (TCG), so an IPI there costs a QEMU vCPU thread
switch on the host, not a hardware interrupt (see "On real hardware").

## Headline

| figure | value |
|---|---|
| read side: library, mode detected at run time, vs mode known at compile time | $(fmt "$rt") vs $(fmt "$ct") ns of CPU per read: read rate ${rt_vs_ct:--}% (goal: at most 2% slower: **$goal_2**) |
| the same, one reader pinned to a CPU, no writer | $(fmt "$art") vs $(fmt "$act") ns: read rate ${art_vs_act:--}% (**$goal_2a**) |
| read side: run-time-detected library vs a fence in the reader | $rt_vs_fe x the read rate (goal: at least 4 x: **$goal_4**) |
| read side: run-time-detected library vs liburcu memb | $(ratio "$ur" "$rt" 2) x the read rate |
| heavy side, guest with $rv vCPUs, $(m repeat_calls) calls: GLOBAL vs SHARED_EXPEDITED | $(fmt "$g_global") us vs $(fmt "$g_shared") us per call: $(ratio "$g_global" "$g_shared" 0) x |
| heavy side, same: GLOBAL vs PRIVATE_EXPEDITED | $(ratio "$g_global" "$g_private" 0) x |
| IPIs/s a victim's CPU takes from a SHARED_EXPEDITED loop: no limit / default limit / default limit, 8 attacker threads / expedited off | $(median dos.txt no-limit victim_ipis_per_s) / $(median dos.txt default-limit victim_ipis_per_s) / $(median dos.txt default-limit-8-threads victim_ipis_per_s) / $(median dos.txt expedited-off victim_ipis_per_s) |
| the victim's throughput then, vs a neighbour spinning in user space (under TCG it follows the host's CPU contention more than the IPIs: section 3): no limit / default limit / expedited off | $(ratio "$dos_nl" "$busy_ops" 2) / $(ratio "$dos_dl" "$busy_ops" 2) / $(ratio "$dos_off" "$busy_ops" 2) |
| membarrier_light() / compiler barrier, interleaved rounds, in the reader loop | median $(lt inline ratio_median), 95% interval $(lt inline ci95_lo)-$(lt inline ci95_hi) (goal: at most 1.02: **$li_goal**) |
| the same, the critical section in a separate function | median $(lt call ratio_median), 95% interval $(lt call ci95_lo)-$(lt call ci95_hi) (**$lc_goal**) |
| LIBMEMBARRIER_LIGHT_COMPILER_BARRIER's membarrier_light() / compiler barrier, reader loop; separate function | median $(lt optin ratio_median), 95% interval $(lt optin ci95_lo)-$(lt optin ci95_hi) (**$lo_goal**); median $(lt call-optin ratio_median), $(lt call-optin ci95_lo)-$(lt call-optin ci95_hi) (**$lco_goal**) |
| 8 threads calling membarrier_heavy(), shared: calls per barrier; median latency vs a lone caller | private-expedited $(sig "$sh_cph8"), $sh_med8 x; signal $(sig "$sg_cph8"), $sg_med8 x (section 6) |
| a shared call's runner preempted (SCHED_IDLE) / stopped / starved (SCHED_FIFO): the others' worst call, shared vs their own calls; 1.5's unbounded waits | private-expedited $(ratio "$(inv private-expedited idle shared)" "$(inv private-expedited idle own)" 2) / $(ratio "$(inv private-expedited stopped shared)" "$(inv private-expedited stopped own)" 2) / $(ratio "$(inv private-expedited fifo shared)" "$(inv private-expedited fifo own)" 2) x; 1.5: $(ratio "$(inv private-expedited idle control)" "$(inv private-expedited idle own)" 0) / $(ratio "$(inv private-expedited stopped control)" "$(inv private-expedited stopped own)" 0) / $(ratio "$(inv private-expedited fifo control)" "$(inv private-expedited fifo own)" 0) x (section 6) |
| membarrier(PRIVATE_EXPEDITED) through the library vs raw syscall() | ${i_pl:--} vs ${i_pr:--} user-space instructions per call |
| QUERY from the library (inline) vs from the kernel | $(fmt "$q_l") ns vs $(fmt "$q_k") ns: $q_ratio x faster (the library's function: $(fmt "$q_f") ns, $q_fratio x) |

![heavy-side latency](latency.png)

![reader/writer and denial of service](rw.png)

## 1. Heavy-side latency per mechanism

Back-to-back calls from CPU 0 for $(m latency_seconds) s (or $(m latency_maxcalls) calls) while a
thread of the same process runs \`membarrier_light()\` in a loop on every
other CPU: an idle CPU gets no IPI, so without those threads the expedited
commands would look free.  With more vCPUs than the host has CPUs
($hostcpus), TCG's vCPU threads take turns on the host's CPUs and an IPI
waits until the host runs its target: the larger guests' expedited
figures measure that queue, not the mechanism (see "On real hardware").
Microseconds per call: the median, then the
mean in brackets (a busy host delays a vCPU thread now and then, which
the mean shows).  "shared-expedited-on" is the command with
kernel.membarrier_expedited_max_rate = 0 (unlimited), "-limit" at the
default limit, "-off" with kernel.membarrier_expedited = 0; the library's
modes run with the limit off (they measure the mechanism), except that
"heavy-shared-expedited" at the limit would look like "-limit".  With one
CPU every kernel command returns at once: there is no other CPU to order.

EOF
	printf '| mechanism | host, %s CPUs |' "$hostcpus"
	for n in $vcpus; do printf ' guest, %s vCPU |' "$n"; done
	printf ' IPIs per call per other CPU (guest, %s vCPUs) |\n|---|---|' "$largest"
	for n in $vcpus; do printf -- '---|'; done
	printf -- '---|\n'
	for l in $kernel_rows $library_rows; do
		h=$(get host-latency.txt "$l" mean_us)
		hs=$(get host-latency.txt "$l" skipped)
		hm=$(get host-latency.txt "$l" mech)
		case $l in heavy-auto) name="heavy (auto: $(get guest-latency.txt "$l" mech "$largest"))" ;; *) name=$l ;; esac
		if [ -n "$hs" ]; then h="n/a"
		elif [ -z "$h" ]; then h="-"
		elif [ -n "$hm" ] && [ "${l#heavy-}" != "$l" ] && [ "${l#heavy-}" != auto ] && [ "$hm" != "${l#heavy-}" ]; then
			h="n/a (got $hm)"
		else h="$(fmt "$(get host-latency.txt "$l" median_us)") ($(fmt "$h"))"; fi
		printf '| %s | %s |' "$name" "$h"
		for n in $vcpus; do
			printf ' %s (%s) |' "$(fmt "$(get guest-latency.txt "$l" median_us "$n")")" \
				"$(fmt "$(get guest-latency.txt "$l" mean_us "$n")")"
		done
		printf ' %s |\n' "$(get guest-latency.txt "$l" ipi_per_call "$largest")"
	done
	cat <<EOF

The library does not use the mprotect() trick (TLB shootdown): arm64
invalidates TLBs with broadcast instructions and sends no IPI, and x86
kernels using AMD's INVLPGB do the same, so on those machines it is no
barrier at all; its row is a raw figure for comparison.

### The 2015 measurement, repeated

The 2015 commit that added membarrier(2) measured 1000 non-expedited calls
at 33 ms per call on an 8-core Xeon E5405.  Here $(m repeat_calls) back-to-back calls each
(or as many as fit in 60 s), same setup as above, mean per call:

| mechanism | guest, $rv vCPUs: calls, ms per call | host, $hostcpus CPUs: calls, ms per call | vs GLOBAL (guest) |
|---|---|---|---|
EOF
	for l in global shared-expedited-on shared-expedited-limit global-expedited private-expedited; do
		gc=$(get guest-latency.txt "repeat-$l" calls "$rv")
		gm=$(get guest-latency.txt "repeat-$l" mean_us "$rv")
		hc=$(get host-repeat.txt "repeat-$l" calls)
		hmu=$(get host-repeat.txt "repeat-$l" mean_us)
		printf '| %s | %s, %s | %s, %s | %s |\n' "$l" "${gc:--}" \
			"$(sig "$(awk -v x="$gm" 'BEGIN { if (x != "") print x / 1000 }')")" \
			"${hc:--}" "$(sig "$(awk -v x="$hmu" 'BEGIN { if (x != "") print x / 1000 }')")" \
			"$(ratio "$g_global" "$gm" 0)"
	done
	cat <<EOF

## 2. Reader/writer (the 2015 table, over this library)

$(m rw_readers) readers and $(m rw_writers) writers on $hostcpus host CPUs, $(m rw_seconds) s per run, the
flavours interleaved, median of $(m rw_reps) rounds.  A reader loops on a
read-side critical section (load a pointer, check the object is alive);
a writer publishes a new object, waits for a grace period, and poisons
the old one.  "ns of CPU per read" divides the readers' own CPU time by
their reads: it is the figure to compare, as the other jobs on a shared
host take a varying share of the CPUs; the ratios use it.  "reads in 10 s"
(wall clock, all readers) is in the 2015 table's unit.

| flavour | light side | heavy side | ns of CPU per read | read rate vs fence | vs compile-time | reads in 10 s | writes/s | violations | 2015 analogue, reads in 10 s |
|---|---|---|---|---|---|---|---|---|---|
EOF
	for l in fence compile-time run-time run-time-signal liburcu-memb; do
		rps=$(median rw.txt "$l" reads_per_s)
		nsr=$(median rw.txt "$l" ns_per_read)
		case $l in
		fence) light="full fence"; heavy="full fence"; ana="memory barriers in the reader: 1.70e9" ;;
		compile-time) light="compiler barrier"; heavy="membarrier_heavy()"; ana="sys_membarrier: 9.95e9" ;;
		run-time) light="membarrier_light()"; heavy="membarrier_heavy()"; ana="sys_membarrier, dynamic check: 7.97e9" ;;
		run-time-signal) light="membarrier_light()"; heavy="membarrier_heavy(), signal"; ana="signal-based: 9.83e9" ;;
		liburcu-memb) light="urcu_memb_read_lock()"; heavy="urcu_memb_synchronize_rcu()"; ana="-" ;;
		esac
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$l" "$light" \
			"$heavy ($(get rw.txt "$l" mech))" "$(fmt "$nsr")" \
			"$(ratio "$fe" "$nsr" 2)" "$(ratio "$ct" "$nsr" 3)" \
			"$(sci "$(awk -v x="$rps" 'BEGIN { if (x != "") print x * 10 }')")" \
			"$(sci "$(median rw.txt "$l" writes_per_s)")" \
			"$(awk -v l="$l" '$0 ~ "label=" l " " { split($0, a, "violations="); s += a[2] } END { print s + 0 }' "$d/rw.txt")" \
			"$ana"
	done
	cat <<EOF

"run-time" and "run-time-signal" run the same reader code (only the
writers' heavy barrier differs), so the gap between them is a measure of
this run's noise.

One reader pinned to a CPU, no writer (other jobs on the host may still
share its core), $(m rw_reps) rounds of 1 s:

| flavour | ns of CPU per read | read rate vs fence | vs compile-time |
|---|---|---|---|
| fence | $(fmt "$afe") | 1.00 | $(ratio "$act" "$afe" 3) |
| compile-time | $(fmt "$act") | $(ratio "$afe" "$act" 2) | 1.000 |
| run-time | $(fmt "$art") | $(ratio "$afe" "$art" 2) | $(ratio "$act" "$art" 3) |

Every round, as measured (ns of CPU per read):

| round | $(echo fence compile-time run-time run-time-signal liburcu-memb alone-fence alone-compile-time alone-run-time | sed 's/ / | /g') |
|---|---|---|---|---|---|---|---|---|
EOF
	for rd in $(awk '/^RESULT round=/ { split($2, a, "="); print a[2] }' "$d/rw.txt" | sort -un); do
		printf '| %s |' "$rd"
		for l in fence compile-time run-time run-time-signal liburcu-memb alone-fence alone-compile-time alone-run-time; do
			printf ' %s |' "$(sci "$(awk -v rd="$rd" -v l="$l" '$2 == "round=" rd && $0 ~ "label=" l " " { split($0, a, "ns_per_read="); split(a[2], b, " "); print b[1] }' "$d/rw.txt")")"
		done
		printf '\n'
	done
	cat <<EOF

## 3. Denial of service

Guest with 2 vCPUs: a victim process on CPU 1 counts loop iterations while
an attacker on CPU 0 calls SHARED_EXPEDITED back to back for $(m dos_seconds) s; three
rounds of the six phases, interleaved, medians.  Under TCG a vCPU that
runs anything takes a host CPU that the victim's vCPU thread could have
had, so the baseline for the attack is a neighbour that only spins in
user space ("busy"), not an idle one: the victim's loss beyond "busy" is
what the attack's IPIs and system calls cost it.

| attacker | victim iterations/s | vs idle | vs busy | function call IPIs/s on the victim's CPU | all its interrupts/s | attacker calls/s |
|---|---|---|---|---|---|---|
EOF
	for l in idle busy no-limit default-limit default-limit-8-threads expedited-off; do
		case $l in
		idle) name="none (idle)" ;;
		busy) name="a loop in user space (the baseline)" ;;
		no-limit) name="SHARED_EXPEDITED, max_rate = 0 (no limit)" ;;
		default-limit) name="SHARED_EXPEDITED, default max_rate ($(get guest-latency.txt guest-kernel default_max_rate)/s)" ;;
		default-limit-8-threads) name="the same, from 8 attacker threads" ;;
		expedited-off) name="SHARED_EXPEDITED, membarrier_expedited = 0" ;;
		esac
		printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(sci "$(median dos.txt "$l" victim_ops_per_s)")" \
			"$(ratio "$(median dos.txt "$l" victim_ops_per_s)" "$idle_ops" 2)" \
			"$(ratio "$(median dos.txt "$l" victim_ops_per_s)" "$busy_ops" 2)" \
			"$(median dos.txt "$l" victim_ipis_per_s)" "$(median dos.txt "$l" victim_irqs_per_s)" \
			"$(median dos.txt "$l" attacker_calls_per_s)"
	done
	cat <<EOF

Each phase as measured, in order:

| round | attacker | victim iterations/s | IPIs/s | attacker calls/s |
|---|---|---|---|---|
$(awk '/^RESULT / {
	delete kv
	for (i = 2; i <= NF; i++) { p = index($i, "="); kv[substr($i, 1, p - 1)] = substr($i, p + 1) }
	if (kv["label"] == "idle") rd++
	printf "| %d | %s | %.3g | %s | %s |\n", rd, kv["label"], kv["victim_ops_per_s"], kv["victim_ipis_per_s"], kv["attacker_calls_per_s"]
}' "$d/dos.txt")

With no limit, the attacker's rate is bounded by how soon the host runs
the victim's vCPU thread to take each IPI: when other jobs hold the
host's CPUs it drops by an order of magnitude.  At the default limit
the victim takes just under 1000 rounds a second, as the series allows:
the attacker's user runs its budget (a quarter of the limit) and every
paced round (the other three quarters, one every 1.33 ms), whatever its
number of threads (eight of them share each round).  No call waits for a
grace period there, unlike the series' v2, whose over-limit calls did and
so took far fewer rounds than the limit.  The victim's throughput
under TCG follows the host's CPU contention more than the IPIs (compare
"idle" and "busy"); the IPI rates are the robust figure: the limit and
the knob bound them whatever the host does.

## 3b. Fairness

Guest with 2 vCPUs, both busy: the attackers on CPU 0, whose threads call
SHARED_EXPEDITED back to back, and on CPU 1 a victim spinning in user
space (the CPU whose function call IPIs are counted: rounds run from CPU 1
itself do not interrupt it), an honest process (uid 1000) calling
SHARED_EXPEDITED and a third one (uid 1001) PRIVATE_EXPEDITED, each 100
times a second, timing every call.  The attackers: a plain busy loop
(what one more busy vCPU costs under TCG), 1, 8 or 64 threads of uid 1002,
64 processes under the uids 1-64 of a user namespace created by uid 1003
with a 65536-uid map (a rootless container: one user), 64 processes under
64 real uids (64 users), 8 threads of the honest caller's own uid, 64
threads with no limit.  $(m fair_seconds) s per phase, three rounds of the
nine phases, interleaved.  The ratios compare each p99 with the unloaded
one (no attacker) of the same round: median over the rounds [smallest -
largest].  "Honest calls" says how the trace event
membarrier:membarrier_shared_expedited saw the honest caller's calls
served, and how many of those over 2 ms each way had (in the row of the
honest caller's own uid, its attackers' calls too).  The limit is
kernel.membarrier_expedited_max_rate = ${fair_limit:--}/s.

| attackers | honest median / p99 (us) | honest p99 vs unloaded | honest calls: ran / joined / paced (over 2 ms) | PRIVATE_EXPEDITED median / p99 (us) | its p99 vs unloaded | victim IPIs/s | attacker calls/s | all calls: ran / joined / paced / grace period |
|---|---|---|---|---|---|---|---|---|
EOF
	for l in attackers-0 spin-1 attackers-1 attackers-8 attackers-64 userns-64 uids-64 same-uid-8 unlimited-64; do
		case $l in
		attackers-0) name="none" ;;
		spin-1) name="a busy loop, no system call" ;;
		attackers-*) name="${l#attackers-} threads (uid 1002)" ;;
		userns-64) name="64 uids of a user namespace (uid 1003's)" ;;
		uids-64) name="64 real uids" ;;
		same-uid-8) name="8 threads of the honest caller's uid" ;;
		unlimited-64) name="64 threads, max_rate = 0" ;;
		esac
		set -- $(fair_ratio "$l" honest_p99_us)
		hr="$1 [$2 - $3]"
		set -- $(fair_ratio "$l" private_p99_us)
		pr="$1 [$2 - $3]"
		printf '| %s | %s / %s | %s | %s / %s / %s (%s / %s / %s) | %s / %s | %s | %s | %s | %s / %s / %s / %s |\n' "$name" \
			"$(fmt "$(median fair.txt "$l" honest_median_us)")" "$(fmt "$(median fair.txt "$l" honest_p99_us)")" "$hr" \
			"$(median fair.txt "$l" honest_ran)" "$(median fair.txt "$l" honest_joined)" "$(median fair.txt "$l" honest_paced)" \
			"$(median fair.txt "$l" slow_ran)" "$(median fair.txt "$l" slow_joined)" "$(median fair.txt "$l" slow_paced)" \
			"$(fmt "$(median fair.txt "$l" private_median_us)")" "$(fmt "$(median fair.txt "$l" private_p99_us)")" "$pr" \
			"$(median fair.txt "$l" victim_ipis_per_s)" "$(median fair.txt "$l" attacker_calls_per_s)" \
			"$(median fair.txt "$l" stats_ran)" "$(median fair.txt "$l" stats_joined)" \
			"$(median fair.txt "$l" stats_paced)" "$(median fair.txt "$l" stats_grace_period)"
	done
	cat <<EOF

Rounds are shared and paced (see the kernel series' cover letter): a
quarter of the limit is per-user budgets (8 at once, then a fair share),
three quarters are paced rounds, at most one every 4 / (3 x limit)
seconds, for callers beyond their budget; nobody waits for a grace
period unless kernel.membarrier_expedited is 0 (${fair_gp:--} grace
periods in the attack phases).  Attackers of one user, with any number
of threads or uids of its namespaces, take that user's share; the
honest caller keeps its budget and runs its rounds at once.  With 64
real users its fair share is a few rounds a second and its calls wait
for paced rounds, as designed: within the unloaded p99 + 2 / limit
(${fair_uids_bound:--} us).  Under TCG the honest caller's round waits
for CPU 0's vCPU to take the IPI while it runs the attackers, which
raises its median and p99 above the unloaded ones whatever the kernel
does: the busy-loop row, with no membarrier() call besides the honest
caller's, shows as much.  Against that row, the worst attack's p99
ratio is ${fair_worst_p99_spin:--}.

## 3c. The attacks on series v3's controls

tests/guest/abuse.c's phases (what each does and checks: its comment),
in a guest with 4 vCPUs, three rounds: median [smallest - largest].  The
review of series v3 (2026-12-07) found each of these; series v4 answers
them.

| phase | median [range] |
|---|---|
$(abuse_row slowround share "slow rounds (4 busy vCPUs), one attacker thread: share of time SHARED rounds held the IPI mutex (at most 0.55)")
$(abuse_row slowround longest_ms "slow rounds: the longest round (ms)")
$(abuse_row slowround private_worst_ms "slow rounds: an unrelated process's worst PRIVATE_EXPEDITED call (ms; at most 3 rounds)")
$(abuse_row slowround private_pct_of_alone "slow rounds: its calls per second, % of its rate alone")
$(abuse_row slowround control_share "control, max_rate 0: share of time the rounds held the mutex")
$(abuse_row debt crowd_paced "debt: the honest caller's calls paced during a crowd of 64 uids (of about 100)")
$(abuse_row debt after_crowd_paced "debt: its calls paced from 200 ms after the crowd left (want 0)")
$(abuse_row debt after_rate_paced "debt: its calls paced from 200 ms after max_rate 1 -> 1000 (want 0)")
$(abuse_row subuid users "setuid subuids: users of init_user_ns made by one unprivileged user")
$(abuse_row subuid honest_p99_unloaded_us "setuid subuids: the honest caller's p99 unloaded (us)")
$(abuse_row subuid honest_p99_us "setuid subuids: its p99 beside them (us)")
$(abuse_row subuid longest_round_us "setuid subuids: the longest round of the phase (us)")
$(abuse_row comeback staying_per_s "exit and come back: budgeted rounds/s of a uid that stays")
$(abuse_row comeback back_per_s "exit and come back: of a uid whose processes all exit 100 times a second")
$(abuse_row comeback new_uid_per_s "control: of a new uid each time (a fresh budget)")
$(abuse_row oncpu control_slow_pct "control, 20 uids looping getppid() on the honest caller's CPU: % of its calls over 10 ms")
$(abuse_row oncpu attack_slow_pct "20 attacker uids on its CPU: % of its calls over 10 ms (at most the control's + 2)")
$(abuse_row herd few_beside_us "herd: the honest caller's call beside its own round, 10 attacker threads (us)")
$(abuse_row herd many_beside_us "herd: the same with 4000 attacker threads (us; at most 2 x with 10)")
$(abuse_row herd many_waiting "herd: the fewest of the 4000 asleep in membarrier() at a sample")
$(abuse_row rtwait worst_ms "two SCHED_FIFO callers under SCHED_FIFO spinners: worst call (ms; at most 100)")

## 4. The wrapper's cost

Instructions are user space only, counted by valgrind's callgrind (the
difference between 2N and N calls, so start-up does not count):
repeatable on a noisy machine.  Times are host medians of 21 interleaved
rounds of 10^5 calls of each kind.

| call | library membarrier() | raw syscall() |
|---|---|---|
| PRIVATE_EXPEDITED, instructions per call | ${i_pl:--} | ${i_pr:--} |
| QUERY, instructions per call | ${i_ql:--} | ${i_qr:--} |
| QUERY, ns per call (library: answered inline by the header; raw: the kernel) | $(fmt "$q_l") | $(fmt "$q_k") |
| QUERY, ns per call through a pointer to the library's function (its cache) | $(fmt "$q_f") | |

membarrier(MEMBARRIER_CMD_QUERY, 0, 0) as an application compiles it is
answered by the header: a load of the library's cached answer, which the
compiler reads once for the loop, so the "inline" figure is mostly the
loop itself.  A call into the library costs at least a call and a
return; on this host an empty function in a shared library costs about
as much as the "function" figure.

## 5. The signal mechanism

\`membarrier_heavy()\` with \`LIBMEMBARRIER_HEAVY=signal\` (the path of every
sandboxed or membarrier-less process), 2000 calls from CPU 0 (\`latency
threads\`).  A running thread gets the signal; a sleeping one costs a read
of /proc/self/task/TID/syscall and is not woken (libmembarrier/sig.h).

| other threads | median, us | p90, us |
|---|---|---|
| 1 running | $(fmt "$s1") | $(fmt "$s1p") |
| 32 sleeping | $(fmt "$s32") | $(fmt "$s32p") |
| 1 running, 32 sleeping | $(fmt "$s133") | $(fmt "$s133p") |

Under CPU contention a thread that is runnable but preempted must get its
CPU back before it runs the handler: with k threads running
membarrier_light() on each other CPU (the caller alone on CPU 0), 200
calls each:

| runnable threads per other CPU | median, us | p90, us |
|---|---|---|
| 1 | $(fmt "$(sr 1 median_us)") | $(fmt "$(sr 1 p90_us)") |
| 2 | $(fmt "$(sr 2 median_us)") | $(fmt "$(sr 2 p90_us)") |
| 4 | $(fmt "$(sr 4 median_us)") | $(fmt "$(sr 4 p90_us)") |

## 6. Concurrent heavy barriers

\`bench/share THREADS SECONDS on|off\`: THREADS threads call
membarrier_heavy() back to back for $(m share_seconds) s, unpinned, while a
thread pinned to each CPU runs membarrier_light(); "shared" is the
library as shipped (concurrent callers share a call, libmembarrier/
coalesce.c), "not" makes one call per barrier.  Calls per barrier counts
the mechanism's calls (kernel commands, or signal rounds) per completed
membarrier_heavy(); latencies pool every caller's.  Medians of three
interleaved rounds.  GLOBAL is never shared by the library (the kernel
shares its grace periods): its rows show what the kernel does.  The
host's kernel answers some expedited calls without an IPI even so (a
raw loop beside a spinning thread on each CPU had a third of its calls
under 1 us): a median far below a lone caller's is that, not sharing.

| mechanism | threads | calls per barrier, shared | barriers/s, shared / not | median us, shared / not | p99 us, shared / not | median vs a lone caller, shared |
|---|---|---|---|---|---|---|
$(for mech in private-expedited signal global; do
	for n in 1 2 8 32; do
		printf '| %s | %s | %s | %s / %s | %s / %s | %s / %s | %s x |\n' "$mech" "$n" \
			"$(sig "$(sh_ "$mech" "$n" on calls_per_heavy)")" \
			"$(sig "$(sh_ "$mech" "$n" on heavy_per_s)")" "$(sig "$(sh_ "$mech" "$n" off heavy_per_s)")" \
			"$(fmt "$(sh_ "$mech" "$n" on median_us)")" "$(fmt "$(sh_ "$mech" "$n" off median_us)")" \
			"$(fmt "$(sh_ "$mech" "$n" on p99_us)")" "$(fmt "$(sh_ "$mech" "$n" off p99_us)")" \
			"$(ratio "$(sh_ "$mech" "$n" on median_us)" "$(sh_ "$mech" 1 on median_us)" 2)"
	done
done)

A shared call's runner that cannot run (\`tests/inversion\`, phases of
1 s in one process): a SCHED_IDLE thread making calls beside a spinning
thread and the timed thread, all on one CPU (idle); a runner stopped by
ptrace for 2 s while it holds the call, two threads on the other CPU
timing theirs (stopped); a runner caught the same way, then let go while
a SCHED_FIFO thread spins on its CPU (fifo); a runner that is a process
sharing the memory (clone(CLONE_VM)), stopped with SIGSTOP for 2 s
(sigstop).  The timed threads' worst
call with calls of their own, shared, and shared with waits that end only
when the runner ends its call (1.5's).  With the signal mechanism, idle
and fifo are not run: a call of one's own waits for the starved thread's
handler as well.

| mechanism | scene | own calls, worst ms | shared, worst ms | shared / own | 1.5 (unbounded waits), worst ms |
|---|---|---|---|---|---|
$(for sc in private-expedited:idle private-expedited:stopped private-expedited:fifo \
	private-expedited:sigstop signal:stopped; do
	mech=${sc%%:*} scene=${sc#*:}
	printf '| %s | %s | %s | %s | %s x | %s |\n' "$mech" "$scene" \
		"$(fmt "$(inv "$mech" "$scene" own)")" "$(fmt "$(inv "$mech" "$scene" shared)")" \
		"$(ratio "$(inv "$mech" "$scene" shared)" "$(inv "$mech" "$scene" own)" 2)" \
		"$(fmt "$(inv "$mech" "$scene" control)")"
done)

What sharing buys depends on whether callers arrive during each other's
calls.  A signal round takes tens of microseconds or more, so they do,
and sharing cuts both the calls and each caller's wait.  A kernel command
is a system call of microseconds (here tens: an IPI is a hypervisor exit
on this virtual machine), and with more calling threads than the
$(m host_cpus) CPUs the callers mostly take turns on the CPUs: a caller that
sleeps on the futex must then wait for a CPU once woken, which the median
and the p99 of these oversubscribed runs show, and one that does not
share queues in the kernel instead.  A runtime with one calling thread
per CPU (seastar's reactors) has no such wait.  Against a lone caller,
the signal mechanism's rows also pay for more threads per round: each
round looks at every thread of the process.

## Goals

Each goal as measured in this run; a ratio counts as met only when its
95% interval does.

| goal | measured | verdict |
|---|---|---|
| membarrier_light() within 2% of a compiler barrier, in the reader loop | ratio median $(lt inline ratio_median), 95% interval $(lt inline ci95_lo)-$(lt inline ci95_hi), quartiles $(lt inline ratio_q25)-$(lt inline ratio_q75), $(lt inline rounds) rounds | **$li_goal** |
| the same, the barrier in a separate function | median $(lt call ratio_median), 95% interval $(lt call ci95_lo)-$(lt call ci95_hi), quartiles $(lt call ratio_q25)-$(lt call ratio_q75) | **$lc_goal** |
| instructions per read (callgrind, no noise): barrier / light, in the loop | $(ir barrier) / $(ir light) | |
| the same, in a separate function | $(ir call-barrier) / $(ir call-light) | |
| membarrier(PRIVATE_EXPEDITED) within 40 user-space instructions | ${i_pl:--} (raw syscall(): ${i_pr:--}; exact, callgrind) | **$goal_wrap** |
| cached QUERY at least 100 x faster than the kernel's | $q_ratio x, 95% interval $q_lo-$q_hi, 21 interleaved rounds (the function itself: $q_fratio x) | **$goal_query** |
| a waiter's worst call at most 2 x its own calls' worst, whatever its runner's fate (section 6, the worst scene) | $(sig "$inv_worst") x | **$(verdict "$inv_worst" "<=" 2)** |
| heavy() over signals, 1 other running thread, at most 10 us | median $(fmt "$s1") us, p90 $(fmt "$s1p") us | **$goal_s1** |
| heavy() over signals, 32 sleeping threads, at most 50 us | median $(fmt "$s32") us, p90 $(fmt "$s32p") us | **$goal_s32** |
| LIBMEMBARRIER_LIGHT_COMPILER_BARRIER: membarrier_light() within 2% of a compiler barrier, in the reader loop | median $(lt optin ratio_median), 95% interval $(lt optin ci95_lo)-$(lt optin ci95_hi), quartiles $(lt optin ratio_q25)-$(lt optin ratio_q75) | **$lo_goal** |
| the same, the barrier in a separate function | median $(lt call-optin ratio_median), 95% interval $(lt call-optin ci95_lo)-$(lt call-optin ci95_hi) | **$lco_goal** |
| 8 concurrent membarrier_heavy() callers: at most 0.5 calls of the mechanism per barrier (private-expedited; signal) | $(sig "$sh_cph8"); $(sig "$sg_cph8") | **$(verdict "$sh_cph8" "<=" 0.5)**; **$(verdict "$sg_cph8" "<=" 0.5)** |
| the same: median latency at most 2 x a lone caller's (private-expedited; signal) | $sh_med8 x; $sg_med8 x | **$(verdict "$sh_med8" "<=" 2)**; **$(verdict "$sg_med8" "<=" 2)** |
| run-time-detected reader at least 4 x the fence-based one (reader/writer) | $rt_vs_fe x | **$goal_4** |
| SHARED_EXPEDITED fairness: an honest caller's p99 within 2 x its unloaded p99, under 1, 8, 64 attacker threads of another uid or 64 uids of one user namespace | worst median ratio ${fair_worst_p99:--} (section 3b) | **$goal_fair_p99** |
| the same against the busy-loop phase (the same vCPUs busy, no attack: what TCG adds) | worst median ratio ${fair_worst_p99_spin:--} | **$goal_fair_p99_spin** |
| the same under 64 real users: within the unloaded p99 + 2 / limit | ${fair_uids_p99:--} us against ${fair_uids_bound:--} us | **$goal_fair_uids** |
| the victim CPU's IPI rate within 1.1 x the limit under those attacks | worst ${fair_worst_ipi:--}/s against ${fair_limit:--}/s | **$goal_fair_ipi** |

![light barrier, per round](light.png)

The light barrier's ratio is taken within each round (bench/light.c):
nine loops of the same read-side critical section run one after the
other on one pinned CPU (the opted-in ones in a translation unit of
their own, compared with the compiler-barrier loops of that unit), the two to compare next to each other and in
alternating order, for the same number of reads, timed in the thread's
CPU time.  What another job does to a round shows in both halves of its
ratio.  The code the compiler made of the loops (objdump; the flag's
load, test and branch are the only difference, and the two light
barriers of a critical section share one load; the opted-in loop has
neither, and is its compiler-barrier twin's instructions in another
order, so a ratio below 1 there is the core's doing, not the barrier's):

\`\`\`
$(cat "$d/light-objdump.txt" 2>/dev/null)
\`\`\`

## On real hardware

- The guests run under TCG: every vCPU is a host thread, an IPI is a
  QEMU-side signal to that thread, and with more vCPUs than host cores the
  target vCPU may first have to be scheduled on the host.  The expedited
  commands (SHARED_EXPEDITED, GLOBAL_EXPEDITED, PRIVATE_EXPEDITED) and the
  mprotect trick therefore look tens of times slower than on real
  hardware, where a round of IPIs costs a few microseconds and grows
  slowly with the CPU count, and their growth from 4 to 8 vCPUs here is
  mostly host oversubscription.  GLOBAL, the "-off" and "-limit" paths
  wait for an RCU grace period, which is bounded by the scheduler tick
  (HZ) more than by IPIs: their milliseconds carry over roughly as they
  are, so the ratio between the two families is smaller here than on
  hardware.
- The host figures come from a virtual machine: its IPIs are hypervisor
  exits, dearer than on bare metal; the read-side figures (section 2) are
  native instructions and carry over, scaled by the core's speed.
- The denial-of-service victim loses far more per IPI under TCG than on
  hardware (about a microsecond per IPI there), so its throughput loss
  here is an upper bound; the IPI rates are what the rate limit controls
  and carry over.
EOF
} >"$r"
echo "report.sh: wrote $r"
ls "$dir"/*.png >/dev/null 2>&1 || { echo "report.sh: no plot was written" >&2; exit 1; }
