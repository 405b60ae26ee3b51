/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the make bench programs: clocks, CPU pinning, the CAL
 * (function call IPI) row of /proc/interrupts, and a result line that
 * bench/report.sh reads back ("RESULT key=value ...").
 */
#ifndef LIBMEMBARRIER_BENCH_H
#define LIBMEMBARRIER_BENCH_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/guest/interrupts.h"

#define BENCH_MAX_CPUS 64

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The calling thread's CPU time: what other jobs on the host do not add to. */
static inline double bench_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Per-CPU totals of every row of /proc/interrupts that has a count for
 * each CPU (device interrupts, timer, IPIs of every kind).  Returns 0, or
 * -1 when /proc/interrupts cannot be read.
 */
static inline int bench_read_irqs(long long *total, int ncpu)
{
	char line[4096];
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	for (int i = 0; i < ncpu; i++)
		total[i] = 0;
	if (!fgets(line, sizeof(line), f)) {	/* the CPU0 CPU1 ... header */
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		long long v[BENCH_MAX_CPUS];
		char *p = strchr(line, ':'), *end;
		int i;

		if (!p)
			continue;
		p++;
		for (i = 0; i < ncpu; i++) {
			v[i] = strtoll(p, &end, 10);
			if (end == p)
				break;
			p = end;
		}
		if (i < ncpu)
			continue;
		for (i = 0; i < ncpu; i++)
			total[i] += v[i];
	}
	fclose(f);
	return 0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
