/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fair: does an honest caller keep the fast path while others abuse
 * MEMBARRIER_CMD_SHARED_EXPEDITED?  (Guest only: the patched kernel.)
 *
 *   fair ATTACKERS SECONDS LABEL [same-uid|other-uid]
 *
 * For SECONDS, four processes at once:
 *   - a victim, pinned to CPU 1, spinning in user space: the CPU every
 *     SHARED_EXPEDITED round interrupts (CAL row of /proc/interrupts);
 *   - ATTACKERS threads (0 = none) in one process pinned to CPU 0, each in
 *     a for(;;) membarrier(SHARED_EXPEDITED) loop, under uid 1002
 *     (other-uid, the default) or under the honest caller's uid 1000
 *     (same-uid: a user may only slow itself down);
 *   - the honest caller, uid 1000, on CPU 2: SHARED_EXPEDITED 100 times a
 *     second (absolute 10 ms ticks; a tick missed while a call took
 *     long is dropped), each call timed;
 *   - a third process, uid 1001, on CPU 3: PRIVATE_EXPEDITED (registered)
 *     100 times a second, timed: it shares membarrier_ipi_mutex with the
 *     SHARED_EXPEDITED rounds.
 * Only CPUs 0 and 1 are busy; but whenever a timed caller wakes, under TCG
 * on a 2-core host three vCPU threads want the two host CPUs, and an IPI
 * round then waits, sometimes milliseconds, for the host to run its target
 * (the unloaded p99 shows it).  Prints one RESULT line: the median and p99 latency
 * of both timed callers (microseconds), how many honest calls took over
 * 2 ms (a grace period or a slow round), the victim's CAL IPIs per
 * second, the attackers' calls under 1 ms (served by IPIs: a grace period
 * takes longer) and, from them and the IPI rounds of the statistics, an
 * estimate of the honest calls served by IPIs,
 * the attackers' calls per second, and the deltas of
 * kernel.membarrier_expedited_stats (IPI rounds, throttled, disabled).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "membarrier.h"
#include "bench.h"
#include "../tests/guest/sysctl.h"

#define VICTIM_CPU 1
#define MAX_ATTACKERS 64
#define PERIOD_NS 10000000L	/* 100 calls a second */
#define MAX_SAMPLES 100000

struct shared {
	double latency_us[2][MAX_SAMPLES];	/* honest, private */
	int n[2];
	long attacker_calls;
	long attacker_fast;	/* attacker calls under 1 ms: IPI rounds */
	int failed;
};

static struct shared *sh;
static double secs;

static long mb(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static void become(uid_t uid, int cpu)
{
	bench_pin(cpu);
	if (setgid(uid) || setuid(uid)) {
		perror("setuid");
		exit(1);
	}
}

static void spin_forever(void)
{
	unsigned long n = 0;

	bench_pin(VICTIM_CPU);
	for (;;)
		__asm__ __volatile__("" : "+r"(n));
}

static void *attacker(void *arg)
{
	long *count = arg;
	double t0 = bench_now(), a;

	do {
		a = bench_now();
		if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED) != 0) {
			perror("membarrier(SHARED_EXPEDITED)");
			__atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
			break;
		}
		(*count)++;
		if (bench_now() - a < 1e-3)
			__atomic_fetch_add(&sh->attacker_fast, 1, __ATOMIC_RELAXED);
	} while (bench_now() - t0 < secs);
	return NULL;
}

static void attackers(int n)
{
	static long counts[MAX_ATTACKERS];
	pthread_t th[MAX_ATTACKERS];
	long total = 0;

	for (int i = 1; i < n; i++)
		pthread_create(&th[i], NULL, attacker, &counts[i]);
	attacker(&counts[0]);
	for (int i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++)
		total += counts[i];
	sh->attacker_calls = total;
}

/* Calls @cmd every 10 ms for secs, timing each call into slot @k. */
static void timed_caller(int k, int cmd)
{
	struct timespec next;
	double t0 = bench_now();

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (bench_now() - t0 < secs && sh->n[k] < MAX_SAMPLES) {
		double a, b;

		struct timespec now;

		/* The next 10 ms tick; ticks missed while a call took long are
		 * dropped, not made up for with calls back to back. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		do {
			next.tv_nsec += PERIOD_NS;
			if (next.tv_nsec >= 1000000000L) {
				next.tv_nsec -= 1000000000L;
				next.tv_sec++;
			}
		} while (next.tv_sec < now.tv_sec ||
			 (next.tv_sec == now.tv_sec && next.tv_nsec <= now.tv_nsec));
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		a = bench_now();
		if (mb(cmd) != 0) {
			perror("membarrier");
			sh->failed = 1;
			return;
		}
		b = bench_now();
		sh->latency_us[k][sh->n[k]++] = (b - a) * 1e6;
	}
}

/* Calls that took over 2 ms: a grace period, not an IPI round. */
static int slow_calls(const double *v, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += v[i] > 2000;
	return k;
}

static double quantile(double *v, int n, double q)
{
	int i;

	if (n == 0)
		return -1;
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	i = (int)(q * (n - 1) + 0.5);
	return v[i];
}

static pid_t child(void (*fn)(int), int arg)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	return pid;
}

static int same_uid;

static void run_attackers(int n)
{
	become(same_uid ? 1000 : 1002, 0);
	attackers(n);
}

static void run_honest(int unused)
{
	(void)unused;
	become(1000, 2);
	timed_caller(0, MEMBARRIER_CMD_SHARED_EXPEDITED);
}

static void run_private(int unused)
{
	(void)unused;
	become(1001, 3);
	if (mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) {
		perror("REGISTER_PRIVATE_EXPEDITED");
		sh->failed = 1;
		return;
	}
	timed_caller(1, MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

int main(int argc, char **argv)
{
	long long before[BENCH_MAX_CPUS], after[BENCH_MAX_CPUS];
	unsigned long st0[3], st1[3];
	int nattack, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	pid_t victim, pids[3];
	double t0, t;

	nattack = argc > 1 ? atoi(argv[1]) : -1;
	if (argc < 4 || argc > 5 || nattack < 0 || nattack > MAX_ATTACKERS ||
	    atof(argv[2]) <= 0 ||
	    (argc == 5 && strcmp(argv[4], "same-uid") && strcmp(argv[4], "other-uid"))) {
		fprintf(stderr, "usage: fair ATTACKERS SECONDS LABEL [same-uid|other-uid]\n");
		return 2;
	}
	secs = atof(argv[2]);
	same_uid = argc == 5 && !strcmp(argv[4], "same-uid");
	if (ncpu < 4 || ncpu > BENCH_MAX_CPUS || read_cal_row(before, ncpu) != 0) {
		printf("RESULT label=%s skipped=needs-4-cpus-and-a-CAL-row\n", argv[3]);
		return 0;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	victim = fork();
	if (victim == 0)
		spin_forever();
	usleep(200000);

	read_membarrier_stats(st0);
	read_cal_row(before, ncpu);
	t0 = bench_now();
	pids[0] = nattack ? child(run_attackers, nattack) : 0;
	pids[1] = child(run_honest, 0);
	pids[2] = child(run_private, 0);
	for (int i = 0; i < 3; i++)
		if (pids[i])
			waitpid(pids[i], NULL, 0);
	t = bench_now() - t0;
	read_cal_row(after, ncpu);
	read_membarrier_stats(st1);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	if (sh->failed)
		return 1;

	printf("RESULT label=%s attackers=%d uid=%s seconds=%.2f honest_calls=%d honest_slow=%d honest_median_us=%.1f honest_p99_us=%.1f private_calls=%d private_median_us=%.1f private_p99_us=%.1f victim_ipis_per_s=%.1f attacker_calls_per_s=%.1f attacker_fast=%ld honest_ipi_est=%ld stats_ipi=%lu stats_throttled=%lu stats_disabled=%lu\n",
	       argv[3], nattack, same_uid ? "same" : "other", t,
	       sh->n[0], slow_calls(sh->latency_us[0], sh->n[0]),
	       quantile(sh->latency_us[0], sh->n[0], 0.5),
	       quantile(sh->latency_us[0], sh->n[0], 0.99),
	       sh->n[1], quantile(sh->latency_us[1], sh->n[1], 0.5),
	       quantile(sh->latency_us[1], sh->n[1], 0.99),
	       (double)(after[VICTIM_CPU] - before[VICTIM_CPU]) / t,
	       (double)sh->attacker_calls / t, sh->attacker_fast,
	       (long)(st1[0] - st0[0]) - sh->attacker_fast,
	       st1[0] - st0[0], st1[1] - st0[1], st1[2] - st0[2]);
	return 0;
}
