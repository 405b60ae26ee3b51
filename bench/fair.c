/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fair: does an honest caller keep the fast path while others abuse
 * MEMBARRIER_CMD_SHARED_EXPEDITED?  (Guest only: the patched kernel.)
 *
 *   fair ATTACKERS SECONDS LABEL [other-uid|same-uid|uids|userns|spin]
 *
 * For SECONDS, four processes at once:
 *   - a victim, pinned to CPU 1, spinning in user space: the CPU every
 *     SHARED_EXPEDITED round interrupts (CAL row of /proc/interrupts);
 *   - ATTACKERS threads (0 = none) pinned to CPU 0, each in a
 *     for(;;) membarrier(SHARED_EXPEDITED) loop: in one process under
 *     uid 1002 (other-uid, the default) or under the honest caller's uid
 *     1000 (same-uid: a user may only slow itself down); or one process
 *     each, under uids 2000, 2001, ... (uids: as many real users); or one
 *     process each under uids 1, 2, ... of a user namespace which uid
 *     1003 created and whose uid_map maps 65536 uids from 100000 (userns:
 *     a rootless container of one unprivileged user); or threads of uid
 *     1002 that only spin in user space (spin: what one more busy vCPU
 *     costs under TCG);
 *   - the honest caller, uid 1000, on CPU 2 (with fewer than 4 CPUs, on
 *     the victim's CPU 1): SHARED_EXPEDITED 100 times a second (absolute
 *     10 ms ticks; a tick missed while a call took long is dropped), each
 *     call timed;
 *   - a third process, uid 1001, on CPU 3 (or CPU 1): PRIVATE_EXPEDITED
 *     (registered) 100 times a second, timed: it shares
 *     membarrier_ipi_mutex with the SHARED_EXPEDITED rounds.
 * Only CPUs 0 and 1 are busy; but with 4 CPUs, whenever a timed caller
 * wakes, under TCG on a 2-core host three vCPU threads want the two host
 * CPUs, and an IPI round then waits, sometimes milliseconds, for the host
 * to run its target (the unloaded p99 shows it).  Prints one RESULT line:
 * the median and p99 latency of both timed callers (microseconds), how
 * many honest calls took over 2 ms (a grace period or a slow round), the
 * victim's CAL IPIs per second, the attackers' calls per second, the
 * deltas of kernel.membarrier_expedited_stats (how all calls were served:
 * ran a round, joined one, waited for a paced round, grace period) and,
 * where the trace event can be read, how uid 1000's calls were served.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
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
	int failed;
};

static struct shared *sh;
static double secs;
static int ncpu;	/* online CPUs */

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

/* Who the attackers are: see the usage at the top. */
static enum { OTHER_UID, SAME_UID, UIDS, USERNS, SPIN } mode;

static void *attacker(void *arg)
{
	long *count = arg;
	double t0 = bench_now();

	do {
		if (mode == SPIN) {
			/* What TCG adds: a busy vCPU, no system call. */
			for (volatile int i = 0; i < 100000; i++)
				;
		} else if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED) != 0) {
			perror("membarrier(SHARED_EXPEDITED)");
			__atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
			break;
		}
		(*count)++;
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
	__atomic_fetch_add(&sh->attacker_calls, total, __ATOMIC_RELAXED);
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

/* ATTACKERS processes of one thread each, every one under its own uid. */
static void attackers_apart(int n, uid_t first)
{
	pid_t pids[MAX_ATTACKERS];
	int i;

	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			sh->failed = 1;
			break;
		}
		if (pids[i] == 0) {
			long count = 0;

			if (setgid(first + i) || setuid(first + i)) {
				perror("setuid (attacker)");
				sh->failed = 1;
				_exit(1);
			}
			attacker(&count);
			__atomic_fetch_add(&sh->attacker_calls, count, __ATOMIC_RELAXED);
			_exit(0);
		}
	}
	while (--i >= 0)
		waitpid(pids[i], NULL, 0);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		ret = -1;
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * ATTACKERS processes under as many uids of one user namespace, which uid
 * 1003 (unprivileged) created and whose uid_map maps 65536 uids from
 * 100000: what /etc/subuid and newuidmap give a rootless container.
 */
static void attackers_userns(int n)
{
	int go[2], ready[2];
	char path[64], c = 0;
	pid_t pid;

	if (pipe(go) || pipe(ready)) {
		perror("pipe");
		sh->failed = 1;
		return;
	}
	pid = fork();
	if (pid == 0) {
		if (setgid(1003) || setuid(1003) || unshare(CLONE_NEWUSER)) {
			perror("unshare(CLONE_NEWUSER) as uid 1003");
			sh->failed = 1;
			_exit(1);
		}
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1 || c != 1)
			_exit(1);
		/* Now uid 0 of the namespace: uids 1..n are 100001..100000+n. */
		attackers_apart(n, 1);
		_exit(0);
	}
	/* What newuidmap and newgidmap do, as root, for uid 1003. */
	if (pid < 0 || read(ready[0], &c, 1) != 1) {
		sh->failed = 1;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	c = !write_file(path, "0 100000 65536\n");
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	c = c && !write_file(path, "0 100000 65536\n");
	if (!c) {
		perror("uid_map");
		sh->failed = 1;
	}
	if (write(go[1], &c, 1) != 1)
		sh->failed = 1;
	waitpid(pid, NULL, 0);
}

static void run_attackers(int n)
{
	switch (mode) {
	case OTHER_UID:
	case SAME_UID:
	case SPIN:
		become(mode == SAME_UID ? 1000 : 1002, 0);
		attackers(n);
		break;
	case UIDS:
		bench_pin(0);
		attackers_apart(n, 2000);
		break;
	case USERNS:
		bench_pin(0);
		attackers_userns(n);
		break;
	}
}

static void run_honest(int unused)
{
	(void)unused;
	become(1000, ncpu >= 4 ? 2 : VICTIM_CPU);
	timed_caller(0, MEMBARRIER_CMD_SHARED_EXPEDITED);
}

static void run_private(int unused)
{
	(void)unused;
	become(1001, ncpu >= 4 ? 3 : VICTIM_CPU);
	if (mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) {
		perror("REGISTER_PRIVATE_EXPEDITED");
		sh->failed = 1;
		return;
	}
	timed_caller(1, MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

/*
 * The honest caller's calls as the trace event
 * membarrier:membarrier_shared_expedited reports them (kernels with
 * CONFIG_TRACEPOINTS and tracefs): how each was served, and how the slow
 * ones (over 2 ms) were.
 */
#define TRACEFS "/sys/kernel/tracing"
static const char *const outcome_names[] = { "ran", "joined", "paced", "grace_period" };
static int traced;

static void trace_start(void)
{
	int fd;

	if (access(TRACEFS "/events/membarrier", F_OK) &&
	    mount("tracefs", TRACEFS, "tracefs", 0, NULL))
		return;
	fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);	/* empties it */
	if (fd >= 0)
		close(fd);
	traced = fd >= 0 &&
		 !write_file(TRACEFS "/events/membarrier/membarrier_shared_expedited/filter",
			     "uid == 1000") &&
		 !write_file(TRACEFS "/buffer_size_kb", "4096") &&
		 !write_file(TRACEFS "/events/membarrier/membarrier_shared_expedited/enable",
			     "1");
}

/* Counts [outcome][0: all, 1: over 2 ms]; -1 if not traced. */
static int trace_stop(long counts[4][2])
{
	char line[512], *p;
	FILE *f;

	memset(counts, 0, sizeof(long) * 8);
	if (!traced)
		return -1;
	write_file(TRACEFS "/events/membarrier/membarrier_shared_expedited/enable", "0");
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long ns;
		char name[32];

		p = strstr(line, "outcome=");
		if (!p || sscanf(p, "outcome=%31s duration_ns=%llu", name, &ns) != 2)
			continue;
		for (int i = 0; i < 4; i++)
			if (!strcmp(name, outcome_names[i])) {
				counts[i][0]++;
				counts[i][1] += ns > 2000000;
			}
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	long long before[BENCH_MAX_CPUS], after[BENCH_MAX_CPUS];
	struct membarrier_stats st0, st1, d;
	long hc[4][2];
	int nattack;
	pid_t victim, pids[3];
	double t0, t;

	static const char *const modes[] = { "other-uid", "same-uid", "uids", "userns", "spin" };
	int m = 0;

	nattack = argc > 1 ? atoi(argv[1]) : -1;
	if (argc == 5)
		for (m = 0; m < 5 && strcmp(argv[4], modes[m]); m++)
			;
	if (argc < 4 || argc > 5 || nattack < 0 || nattack > MAX_ATTACKERS ||
	    atof(argv[2]) <= 0 || m == 5) {
		fprintf(stderr, "usage: fair ATTACKERS SECONDS LABEL [other-uid|same-uid|uids|userns|spin]\n");
		return 2;
	}
	secs = atof(argv[2]);
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	mode = m;
	if (ncpu < 2 || ncpu > BENCH_MAX_CPUS || read_cal_row(before, ncpu) != 0) {
		printf("RESULT label=%s skipped=needs-2-cpus-and-a-CAL-row\n", argv[3]);
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

	trace_start();
	read_membarrier_stats(&st0);
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
	read_membarrier_stats(&st1);
	d = membarrier_stats_sub(&st1, &st0);
	trace_stop(hc);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	if (sh->failed)
		return 1;

	printf("RESULT label=%s attackers=%d uid=%s seconds=%.2f honest_calls=%d honest_slow=%d honest_median_us=%.1f honest_p99_us=%.1f private_calls=%d private_median_us=%.1f private_p99_us=%.1f victim_ipis_per_s=%.1f attacker_calls_per_s=%.1f stats_ran=%llu stats_joined=%llu stats_paced=%llu stats_grace_period=%llu traced=%d honest_ran=%ld honest_joined=%ld honest_paced=%ld honest_grace_period=%ld slow_ran=%ld slow_joined=%ld slow_paced=%ld slow_grace_period=%ld\n",
	       argv[3], nattack, modes[mode], t,
	       sh->n[0], slow_calls(sh->latency_us[0], sh->n[0]),
	       quantile(sh->latency_us[0], sh->n[0], 0.5),
	       quantile(sh->latency_us[0], sh->n[0], 0.99),
	       sh->n[1], quantile(sh->latency_us[1], sh->n[1], 0.5),
	       quantile(sh->latency_us[1], sh->n[1], 0.99),
	       (double)(after[VICTIM_CPU] - before[VICTIM_CPU]) / t,
	       (double)sh->attacker_calls / t, d.ran, d.joined, d.paced, d.grace_period,
	       traced, hc[0][0], hc[1][0], hc[2][0], hc[3][0], hc[0][1], hc[1][1], hc[2][1],
	       hc[3][1]);
	return 0;
}
