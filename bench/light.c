/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * light: what membarrier_light() costs a reader, against a pure compiler
 * barrier, measured so that 2% can be seen.
 *
 *   light [ROUNDS [CPU]]
 *       Times, on one pinned CPU, five reader loops of the same read-side
 *       critical section as bench/rw.c (publish a snapshot, barrier, load
 *       the shared pointer and check the object, barrier, clear the
 *       snapshot), which differ only in the barrier and in where it sits:
 *         barrier       asm("" ::: "memory") inline: the 2015 "membarrier
 *                       known at compile time" reader
 *         light         the shipped membarrier_light() inline
 *         call-barrier  the critical section in a separate function
 *         call-light    the same with membarrier_light()
 *         fence         a full fence, for scale
 *         optin-barrier, optin, call-optin-barrier, call-optin
 *                       the first four again, compiled in
 *                       bench/light-optin.c, where membarrier_light() is
 *                       LIBMEMBARRIER_LIGHT_COMPILER_BARRIER's
 *       Each round runs every loop once for the same number of reads, the
 *       pairs to compare next to each other and in alternating order, and
 *       gives the ratios light / barrier, call-light / call-barrier,
 *       optin / optin-barrier and call-optin / call-optin-barrier within
 *       the round: whatever the machine's other jobs do to one
 *       round cancels out in its ratio.  Prints one RESULT line per round
 *       and, per ratio, the median, quartiles and extremes over the
 *       rounds, and whether the goal (within 2%) is met: the 95%
 *       confidence interval of the median must be at most 1.02, not
 *       only the median.
 *   light count LOOP READS
 *       Runs one loop for READS reads, for callgrind (bench/run.sh counts
 *       the instructions per read, which no other job can disturb).
 *
 * Time is the thread's CPU time, so that preemption by other jobs is not
 * counted; what they leave in the caches still is, which is why ratios
 * are taken within a round.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "membarrier.h"
#include "bench.h"
#include "light.h"

#define MAX_ROUNDS 1000
#define GOAL 1.02

NOINLINE static unsigned long loop_barrier(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		READ_ONE(COMPILER_BARRIER(), bad);
	return bad;
}

NOINLINE static unsigned long loop_light(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		READ_ONE(membarrier_light(), bad);
	return bad;
}

NOINLINE static unsigned long loop_fence(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		READ_ONE(FENCE(), bad);
	return bad;
}

NOINLINE static unsigned long read_barrier(void)
{
	unsigned long bad = 0;

	READ_ONE(COMPILER_BARRIER(), bad);
	return bad;
}

NOINLINE static unsigned long read_light(void)
{
	unsigned long bad = 0;

	READ_ONE(membarrier_light(), bad);
	return bad;
}

NOINLINE static unsigned long loop_call_barrier(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		bad += read_barrier();
	return bad;
}

NOINLINE static unsigned long loop_call_light(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		bad += read_light();
	return bad;
}

static const struct loop {
	const char *name;
	unsigned long (*run)(unsigned long);
} loops[] = {
	{ "barrier", loop_barrier },
	{ "light", loop_light },
	{ "call-barrier", loop_call_barrier },
	{ "call-light", loop_call_light },
	{ "fence", loop_fence },
	{ "optin-barrier", loop_optin_barrier },
	{ "optin", loop_optin },
	{ "call-optin-barrier", loop_call_optin_barrier },
	{ "call-optin", loop_call_optin },
};
#define NLOOPS (int)(sizeof(loops) / sizeof(loops[0]))

/* Nanoseconds per read of one loop over n reads. */
static double timed(int l, unsigned long n)
{
	double t0 = bench_thread_cpu();

	if (loops[l].run(n) != 0) {
		fprintf(stderr, "light: a reader saw a dead object\n");
		exit(1);
	}
	return (bench_thread_cpu() - t0) * 1e9 / (double)n;
}

/* The q-quantile (0..1) of v[0..n-1], sorted in place. */
static double quantile(double *v, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)pos;

	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

/*
 * The median of the per-round ratios with its 95% confidence interval
 * (the order statistics a sign test gives, no assumption about the
 * distribution), and the quartiles.  The goal is met when the whole
 * interval is at most GOAL.
 */
static void summary(const char *label, double *r, int n)
{
	double q25 = quantile(r, n, 0.25), med = quantile(r, n, 0.5),
	       q75 = quantile(r, n, 0.75);
	double half = 0.98 * sqrt((double)n);
	int lo = (int)floor(n / 2.0 - half), hi = (int)ceil(n / 2.0 + half);

	if (lo < 0)
		lo = 0;
	if (hi > n - 1)
		hi = n - 1;
	printf("RESULT label=%s rounds=%d ratio_median=%.4f ci95_lo=%.4f ci95_hi=%.4f "
	       "ratio_q25=%.4f ratio_q75=%.4f ratio_min=%.4f ratio_max=%.4f goal=%.2f met=%s\n",
	       label, n, med, r[lo], r[hi], q25, q75, r[0], r[n - 1], GOAL,
	       r[hi] <= GOAL ? "yes" : "no");
}

int main(int argc, char **argv)
{
	static double ratio_inline[MAX_ROUNDS], ratio_call[MAX_ROUNDS];
	static double ratio_optin[MAX_ROUNDS], ratio_call_optin[MAX_ROUNDS];
	struct membarrier_strategy st;
	int rounds, cpu;
	unsigned long n;
	double ns[NLOOPS];

	if (argc == 4 && strcmp(argv[1], "count") == 0) {
		for (int l = 0; l < NLOOPS; l++)
			if (strcmp(argv[2], loops[l].name) == 0)
				return loops[l].run(strtoul(argv[3], NULL, 0)) != 0;
		fprintf(stderr, "light: no loop %s\n", argv[2]);
		return 2;
	}
	rounds = argc > 1 ? atoi(argv[1]) : 101;
	cpu = argc > 2 ? atoi(argv[2]) : 0;
	if (argc > 3 || rounds < 3 || rounds > MAX_ROUNDS || cpu < 0) {
		fprintf(stderr, "usage: light [ROUNDS [CPU]] | light count LOOP READS\n");
		return 2;
	}
	membarrier_get_strategy(&st, sizeof(st));
	if (st.light_is_fence) {
		/* Then light is a fence, and must be: nothing to compare. */
		printf("RESULT label=light skipped=no-process-wide-barrier\n");
		return 0;
	}
	bench_pin(cpu);

	/* About 4 ms per loop per round: many short rounds, so that a
	 * disturbed round weighs little in the median. */
	n = 1 << 16;
	while (timed(0, n) * (double)n < 4e6 && n < (1UL << 32))
		n *= 2;
	for (int r = 0; r < rounds; r++) {
		/* Each pair next to each other, each first in turn. */
		static const int order[2][NLOOPS] = { { 0, 1, 3, 2, 5, 6, 8, 7, 4 },
						      { 1, 0, 2, 3, 6, 5, 7, 8, 4 } };

		for (int k = 0; k < NLOOPS; k++) {
			int l = order[r % 2][k];

			ns[l] = timed(l, n);
		}
		ratio_inline[r] = ns[1] / ns[0];
		ratio_call[r] = ns[3] / ns[2];
		ratio_optin[r] = ns[6] / ns[5];
		ratio_call_optin[r] = ns[8] / ns[7];
		printf("RESULT label=light-round round=%d reads=%lu", r, n);
		for (int l = 0; l < NLOOPS; l++)
			printf(" ns_%s=%.4f", loops[l].name, ns[l]);
		printf(" ratio_inline=%.4f ratio_call=%.4f ratio_optin=%.4f ratio_call_optin=%.4f\n",
		       ratio_inline[r], ratio_call[r], ratio_optin[r], ratio_call_optin[r]);
	}
	summary("light-inline", ratio_inline, rounds);
	summary("light-call", ratio_call, rounds);
	summary("light-optin", ratio_optin, rounds);
	summary("light-call-optin", ratio_call_optin, rounds);
	return 0;
}
