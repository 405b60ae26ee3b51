/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * share: concurrent membarrier_heavy() callers, with the library sharing
 * their calls (libmembarrier/coalesce.c) or not.
 *
 *   share THREADS SECONDS on|off [LABEL]
 *       THREADS threads call membarrier_heavy() back to back for SECONDS,
 *       with calls shared (on) or each its own (off), while a thread
 *       pinned to each CPU runs membarrier_light() in a loop: every CPU
 *       runs a thread of the process at every moment, as in a program
 *       whose readers are busy, so every call of an expedited command
 *       interrupts every other CPU.  (With one light thread, on the last
 *       CPU, shared calls looked free: the waiters slept, the other CPU
 *       went idle, and the runner, on the light thread's CPU, had nobody
 *       to interrupt.)  The callers are left to the scheduler, as most
 *       programs leave their threads; bench/run.sh takes the median of
 *       three runs.  Some kernels answer a part of the calls without an
 *       IPI all the same (on the 6.18 host of 2026-12-06, a raw
 *       PRIVATE_EXPEDITED loop beside a spinning thread pinned to each
 *       CPU had a third of its calls under 1 us): a median far below a
 *       lone caller's is that, not sharing.  The mechanism is the
 *       library's choice or LIBMEMBARRIER_HEAVY's.
 *
 * Prints "RESULT label=... threads=N heavy=H calls=C calls_per_heavy=C/H
 * median_us=... p99_us=... cut=K" where H counts the completed heavy
 * barriers, C the calls of the mechanism (a kernel command or a signal
 * round), K the waits cut short by a call of the waiter's own (its runner
 * made no progress for as long as calls usually take: coalesce.c), and
 * the latencies are every caller's, pooled.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "membarrier.h"
#include "testing.h"
#include "bench.h"

#define SAMPLES (1 << 16)	/* per thread: the first ones, then every k-th */

struct caller {
	pthread_t t;
	unsigned long n;	/* barriers completed */
	unsigned long kept;
	double *lat;
};

static int stop, go;

static void *light_loop(void *arg)
{
	bench_pin((int)(long)arg);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	return NULL;
}

static void *call_loop(void *arg)
{
	struct caller *c = arg;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		double t0 = bench_now(), t1;

		(void)membarrier_heavy();
		t1 = bench_now();
		/* Keep a sample spread over the whole run: a reservoir would
		 * need a random source; every 2^k-th call once the array is
		 * full does as well here. */
		if (c->kept < SAMPLES)
			c->lat[c->kept++] = t1 - t0;
		else if ((c->n & 63) == 0)
			c->lat[(c->n >> 6) % SAMPLES] = t1 - t0;
		c->n++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, on;
	double secs = argc > 2 ? atof(argv[2]) : 0, *all, t0, t1;
	unsigned long heavy = 0, kept = 0, calls;
	unsigned int cut;
	const char *label = argc > 4 ? argv[4] : "share";
	struct membarrier_strategy st;
	struct caller *c;
	pthread_t *light;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (argc < 4 || n < 1 || secs <= 0 ||
	    (strcmp(argv[3], "on") != 0 && strcmp(argv[3], "off") != 0)) {
		fprintf(stderr, "usage: share THREADS SECONDS on|off [LABEL]\n");
		return 2;
	}
	on = strcmp(argv[3], "on") == 0;
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		return 2;
	lmb_test_coalesce(on);
	if (ncpu < 1)
		ncpu = 1;
	c = calloc((size_t)n, sizeof(*c));
	light = calloc((size_t)ncpu, sizeof(*light));
	if (!c || !light)
		return 2;
	for (long cpu = 0; cpu < ncpu; cpu++)
		if (pthread_create(&light[cpu], NULL, light_loop, (void *)cpu) != 0)
			return 2;
	for (int i = 0; i < n; i++) {
		c[i].lat = malloc(SAMPLES * sizeof(double));
		if (!c[i].lat || pthread_create(&c[i].t, NULL, call_loop, &c[i]) != 0)
			return 2;
	}
	calls = lmb_test_calls();
	cut = lmb_test_cut();
	t0 = bench_now();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	while ((t1 = bench_now()) - t0 < secs)
		usleep(10000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(c[i].t, NULL);
	for (long cpu = 0; cpu < ncpu; cpu++)
		pthread_join(light[cpu], NULL);
	calls = lmb_test_calls() - calls;
	cut = lmb_test_cut() - cut;

	for (int i = 0; i < n; i++) {
		heavy += c[i].n;
		kept += c[i].kept;
	}
	all = malloc((kept ? kept : 1) * sizeof(double));
	if (!all)
		return 2;
	kept = 0;
	for (int i = 0; i < n; i++) {
		memcpy(all + kept, c[i].lat, c[i].kept * sizeof(double));
		kept += c[i].kept;
	}
	qsort(all, kept, sizeof(double), bench_cmp_double);
	printf("RESULT label=%s mech=%s threads=%d shared=%s seconds=%.2f heavy=%lu calls=%lu "
	       "calls_per_heavy=%.3f heavy_per_s=%.0f median_us=%.2f p99_us=%.2f cut=%u\n",
	       label, membarrier_mechanism_name(st.heavy), n, on ? "yes" : "no", t1 - t0, heavy,
	       calls, heavy ? (double)calls / (double)heavy : 0.0, (double)heavy / (t1 - t0),
	       kept ? all[kept / 2] * 1e6 : 0.0, kept ? all[kept * 99 / 100] * 1e6 : 0.0, cut);
	return 0;
}
