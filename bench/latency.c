/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latency: what a barrier costs the caller, per mechanism.
 *
 *   latency query N
 *       QUERY as a raw syscall() (answered by the kernel), through the
 *       library as compiled (answered inline by the header), and through
 *       a pointer to the library's function (its cache): 21 rounds of N
 *       calls of each, side by side, with the ratios within each round.
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
 *                            (see libmembarrier/sig.h)
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

#define QUERY_ROUNDS 21

/* ns per QUERY over n calls: the kernel's, the header's inline answer as
 * an application compiles it, or the library's function (pointer). */
static double query_ns(int how, long n, int (*volatile fn)(int, unsigned int, int),
		       long *sum)
{
	double t0 = bench_now();

	if (how == 0)
		for (long i = 0; i < n; i++)
			*sum += syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	else if (how == 1)
		for (long i = 0; i < n; i++)
			*sum += membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	else
		for (long i = 0; i < n; i++)
			*sum += fn(MEMBARRIER_CMD_QUERY, 0, 0);
	return (bench_now() - t0) / (double)n * 1e9;
}

/*
 * QUERY_ROUNDS rounds of n calls of each kind, side by side; the ratios
 * kernel / library are taken within each round, and their median and
 * extremes reported with the median times.  The inline answer is read
 * once for the loop, so its figure is mostly the loop itself.
 */
static int query(long n)
{
	int (*volatile fn)(int, unsigned int, int) = membarrier;
	double t[3][QUERY_ROUNDS], ri[QUERY_ROUNDS], rf[QUERY_ROUNDS];
	static const char *const label[3] = { "query-kernel", "query-library", "query-function" };
	long sum = 0;

	for (int r = 0; r < QUERY_ROUNDS; r++) {
		for (int how = 0; how < 3; how++)
			t[how][r] = query_ns(how, n, fn, &sum);
		ri[r] = t[0][r] / t[1][r];
		rf[r] = t[0][r] / t[2][r];
	}
	for (int how = 0; how < 3; how++) {
		qsort(t[how], QUERY_ROUNDS, sizeof(double), bench_cmp_double);
		printf("RESULT label=%s calls=%ld rounds=%d ns=%.2f", label[how], n,
		       QUERY_ROUNDS, t[how][QUERY_ROUNDS / 2]);
		if (how > 0) {
			double *r = how == 1 ? ri : rf;

			/* The median's 95% interval from the sign test, exact
			 * for 21 rounds: the 6th and 16th smallest ratios
			 * (bench/light.c uses its normal approximation). */
			qsort(r, QUERY_ROUNDS, sizeof(double), bench_cmp_double);
			printf(" speedup_median=%.1f speedup_ci95_lo=%.1f speedup_ci95_hi=%.1f"
			       " speedup_min=%.1f speedup_max=%.1f", r[QUERY_ROUNDS / 2], r[5], r[15],
			       r[0], r[QUERY_ROUNDS - 1]);
		}
		printf("\n");
	}
	return sum == 0;
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
