/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latency: what a barrier costs the caller, per mechanism.
 *
 *   latency query N
 *       QUERY through the library (answered from its cache) and as a raw
 *       syscall() (answered by the kernel), N calls each, median of 5 runs.
 *   latency MECH SECONDS MAXCALLS [LABEL]
 *       Back-to-back heavy-side barriers from CPU 0 for SECONDS or MAXCALLS
 *       calls, whichever comes first, while a thread of this process runs
 *       membarrier_light() in a loop on every other online CPU (an idle
 *       CPU receives no IPI, so without them the expedited commands would
 *       look free).  MECH is one of
 *         global             MEMBARRIER_CMD_GLOBAL (an RCU grace period)
 *         shared-expedited   MEMBARRIER_CMD_SHARED_EXPEDITED (patched kernels;
 *                            what it does depends on the two sysctls)
 *         global-expedited   MEMBARRIER_CMD_GLOBAL_EXPEDITED, registered
 *         private-expedited  MEMBARRIER_CMD_PRIVATE_EXPEDITED, registered
 *         mprotect           the TLB-shootdown trick, measured for
 *                            comparison only: the library does not use it
 *                            (see libmembarrier/signal.c)
 *         heavy              membarrier_heavy(), whose mechanism is the
 *                            library's choice or LIBMEMBARRIER_HEAVY's
 *   latency threads RUNNING SLEEPING MAXCALLS [LABEL]
 *       membarrier_heavy() from CPU 0 with RUNNING threads running
 *       membarrier_light() in a loop (on CPUs 1, 2, ... in turn) and
 *       SLEEPING threads asleep in pause(): what the signal mechanism
 *       (LIBMEMBARRIER_HEAVY=signal) pays per thread of each kind.
 *
 * Prints one line "RESULT key=value ..." per measurement: mean, median and
 * fastest call in microseconds, and the function call IPIs (CAL row of
 * /proc/interrupts) that each other CPU received per call (-1: no CAL row).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "membarrier.h"
#include "bench.h"

static int stop;

static int sys_membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

static void *reader(void *arg)
{
	bench_pin((int)(long)arg);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* heavy() with `running` spinning and `sleeping` sleeping threads. */
static int threads(int running, int sleeping, long maxcalls, const char *label)
{
	struct membarrier_strategy st;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t;
	double *lat = calloc((size_t)maxcalls, sizeof(*lat)), sum = 0;

	if (lat == NULL || ncpu < 1)
		return 1;
	membarrier_get_strategy(&st, sizeof(st));
	bench_pin(0);
	for (int i = 0; i < running; i++)
		pthread_create(&t, NULL, reader, (void *)(long)(ncpu > 1 ? 1 + i % (ncpu - 1) : 0));
	for (int i = 0; i < sleeping; i++)
		pthread_create(&t, NULL, sleeper, NULL);
	usleep(200000);
	for (long k = 0; k < maxcalls; k++) {
		double c0 = bench_now();

		if (membarrier_heavy() != 0) {
			perror("membarrier_heavy");
			return 1;
		}
		lat[k] = bench_now() - c0;
		sum += lat[k];
	}
	qsort(lat, (size_t)maxcalls, sizeof(*lat), bench_cmp_double);
	printf("RESULT label=%s running=%d sleeping=%d calls=%ld mean_us=%.2f median_us=%.2f p90_us=%.2f min_us=%.2f mech=%s\n",
	       label, running, sleeping, maxcalls, sum / (double)maxcalls * 1e6,
	       lat[maxcalls / 2] * 1e6, lat[maxcalls * 9 / 10] * 1e6, lat[0] * 1e6,
	       membarrier_mechanism_name(st.heavy));
	/* The spinning threads never stop: exit without joining them. */
	fflush(stdout);
	_exit(0);
}

static double median5(double v[5])
{
	qsort(v, 5, sizeof(v[0]), bench_cmp_double);
	return v[2];
}

static int query(long n)
{
	double t[5];

	for (int r = 0; r < 5; r++) {
		double t0 = bench_now();

		for (long i = 0; i < n; i++)
			(void)syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		t[r] = (bench_now() - t0) / (double)n;
	}
	printf("RESULT label=query-kernel calls=%ld ns=%.1f\n", n, median5(t) * 1e9);
	for (int r = 0; r < 5; r++) {
		double t0 = bench_now();

		for (long i = 0; i < n; i++)
			(void)membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
		t[r] = (bench_now() - t0) / (double)n;
	}
	printf("RESULT label=query-library calls=%ld ns=%.1f\n", n, median5(t) * 1e9);
	return 0;
}

static char *page;

/*
 * The TLB-shootdown trick: write-protecting a present, dirty page makes
 * the kernel flush it from the TLB of every CPU that may cache this mm,
 * with an IPI on x86 (not on arm64, nor on x86 with INVLPGB).
 */
static int mprotect_barrier(void)
{
	*(volatile char *)page = 1;
	if (mprotect(page, 4096, PROT_READ) != 0 ||
	    mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct membarrier_strategy st;
	const char *mech, *label;
	long maxcalls, k;
	double secs, *lat, sum = 0, t0, t;
	long long before[BENCH_MAX_CPUS], after[BENCH_MAX_CPUS], ipis = 0;
	int ncpu, cmd = 0, ret = 0, have_cal, mask;
	pthread_t th[BENCH_MAX_CPUS];

	if (argc == 3 && strcmp(argv[1], "query") == 0 && atol(argv[2]) > 0)
		return query(atol(argv[2]));
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "threads") == 0 && atol(argv[4]) > 0)
		return threads(atoi(argv[2]), atoi(argv[3]), atol(argv[4]),
			       argc == 6 ? argv[5] : "threads");
	if (argc < 4 || argc > 5 || atof(argv[2]) <= 0 || atol(argv[3]) <= 0) {
		fprintf(stderr, "usage: latency query N\n"
				"       latency MECH SECONDS MAXCALLS [LABEL]\n"
				"       latency threads RUNNING SLEEPING MAXCALLS [LABEL]\n");
		return 2;
	}
	mech = argv[1];
	secs = atof(argv[2]);
	maxcalls = atol(argv[3]);
	label = argc > 4 ? argv[4] : mech;
	membarrier_get_strategy(&st, sizeof(st));
	mask = sys_membarrier(MEMBARRIER_CMD_QUERY);
	if (mask < 0)
		mask = 0;

	if (strcmp(mech, "global") == 0)
		cmd = MEMBARRIER_CMD_GLOBAL;
	else if (strcmp(mech, "shared-expedited") == 0)
		cmd = MEMBARRIER_CMD_SHARED_EXPEDITED;
	else if (strcmp(mech, "global-expedited") == 0)
		cmd = MEMBARRIER_CMD_GLOBAL_EXPEDITED;
	else if (strcmp(mech, "private-expedited") == 0)
		cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	else if (strcmp(mech, "mprotect") == 0) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	} else if (strcmp(mech, "heavy") != 0) {
		fprintf(stderr, "latency: unknown mechanism %s\n", mech);
		return 2;
	}
	if (cmd && !(mask & cmd)) {
		printf("RESULT label=%s skipped=not-offered-by-the-kernel\n", label);
		return 0;
	}
	if ((cmd == MEMBARRIER_CMD_GLOBAL_EXPEDITED &&
	     sys_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0) ||
	    (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED &&
	     sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)) {
		printf("RESULT label=%s skipped=registration-failed-errno-%d\n", label, errno);
		return 0;
	}

	lat = calloc((size_t)maxcalls, sizeof(*lat));
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!lat || ncpu < 1 || ncpu > BENCH_MAX_CPUS) {
		fprintf(stderr, "latency: no memory, or %d CPUs\n", ncpu);
		return 1;
	}
	bench_pin(0);
	for (int i = 1; i < ncpu; i++)
		pthread_create(&th[i], NULL, reader, (void *)(long)i);
	usleep(100000);

	have_cal = read_cal_row(before, ncpu) == 0;
	t0 = bench_now();
	for (k = 0, t = t0; k < maxcalls && t - t0 < secs; k++) {
		double c0 = t;

		if (page)
			ret = mprotect_barrier();
		else if (cmd)
			ret = sys_membarrier(cmd);
		else
			ret = membarrier_heavy();
		if (ret != 0) {
			fprintf(stderr, "latency %s: call %ld failed: %s\n", label, k,
				strerror(errno));
			break;
		}
		t = bench_now();
		lat[k] = t - c0;
		sum += lat[k];
	}
	if (have_cal && read_cal_row(after, ncpu) == 0)
		for (int i = 1; i < ncpu; i++)
			ipis += after[i] - before[i];
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 1; i < ncpu; i++)
		pthread_join(th[i], NULL);
	if (ret != 0 || k == 0)
		return 1;

	qsort(lat, (size_t)k, sizeof(*lat), bench_cmp_double);
	printf("RESULT label=%s cpus=%d calls=%ld seconds=%.2f mean_us=%.2f median_us=%.2f min_us=%.2f ipi_per_call=%.2f mech=%s\n",
	       label, ncpu, k, t - t0, sum / (double)k * 1e6, lat[k / 2] * 1e6, lat[0] * 1e6,
	       !have_cal ? -1.0 : ncpu > 1 ? (double)ipis / (double)(ncpu - 1) / (double)k : 0.0,
	       cmd || page ? mech : membarrier_mechanism_name(st.heavy));
	free(lat);
	return 0;
}
