/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latency: what a membarrier() call costs through the library.
 *
 *   latency query N   QUERY through the library and as a raw syscall()
 *   latency heavy N   membarrier_heavy() with a second thread running
 *                     membarrier_light() in a loop on another CPU (with one
 *                     thread, PRIVATE_EXPEDITED returns at once)
 *
 * Prints one line per measurement: name, calls, ns per call (median of 5
 * runs).  The mechanism is the library's choice, or LIBMEMBARRIER_HEAVY.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "membarrier.h"

static volatile int stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median5(double v[5])
{
	qsort(v, 5, sizeof(v[0]), cmp);
	return v[2];
}

static void *reader(void *arg)
{
	cpu_set_t set;

	(void)arg;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	return NULL;
}

int main(int argc, char **argv)
{
	struct membarrier_strategy st;
	long n = argc > 2 ? atol(argv[2]) : 100000;
	double t[5];

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: latency query|heavy [N]\n");
		return 2;
	}
	membarrier_get_strategy(&st, sizeof(st));

	if (strcmp(argv[1], "query") == 0) {
		for (int r = 0; r < 5; r++) {
			double t0 = now();

			for (long i = 0; i < n; i++)
				(void)syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
			t[r] = (now() - t0) / (double)n;
		}
		printf("query-raw-syscall %ld %.1f\n", n, median5(t));
		for (int r = 0; r < 5; r++) {
			double t0 = now();

			for (long i = 0; i < n; i++)
				(void)membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
			t[r] = (now() - t0) / (double)n;
		}
		printf("query-library %ld %.1f\n", n, median5(t));
		return 0;
	}
	if (strcmp(argv[1], "heavy") == 0) {
		pthread_t th;
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(0, &set);
		(void)sched_setaffinity(0, sizeof(set), &set);
		pthread_create(&th, NULL, reader, NULL);
		usleep(10000);
		for (int r = 0; r < 5; r++) {
			double t0 = now();

			for (long i = 0; i < n; i++)
				if (membarrier_heavy() != 0) {
					perror("membarrier_heavy");
					return 1;
				}
			t[r] = (now() - t0) / (double)n;
		}
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		printf("heavy-%s %ld %.1f\n", membarrier_mechanism_name(st.heavy), n, median5(t));
		return 0;
	}
	fprintf(stderr, "usage: latency query|heavy [N]\n");
	return 2;
}
