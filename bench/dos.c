/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dos: what a process looping on MEMBARRIER_CMD_SHARED_EXPEDITED costs an
 * unrelated process.
 *
 *   dos idle|busy|attack SECONDS LABEL [THREADS]
 *
 * A victim process, pinned to CPU 1, counts loop iterations in user space;
 * this process, pinned to CPU 0, sleeps (idle), spins in user space (busy:
 * the baseline under TCG, where a busy vCPU takes a host CPU from the
 * victim's vCPU even without an IPI) or calls SHARED_EXPEDITED back to
 * back (attack) for SECONDS, from THREADS threads (default 1), all on CPU
 * 0: while one waits in the RCU fallback over the rate limit, the others
 * go on, which is how several callers reach the limit that one alone
 * stays far below.  Prints the
 * victim's iterations per second, the function call IPIs (CAL row of
 * /proc/interrupts) and all the interrupts (timer, other IPIs...) CPU 1
 * received per second, and the attacker's calls per second.  What the
 * attack does depends on kernel.membarrier_expedited and
 * kernel.membarrier_expedited_max_rate, which the caller sets.
 */
#define _GNU_SOURCE
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

#define VICTIM_CPU 1
#define MAX_ATTACKERS 64

static double t0, secs;
static long counts[MAX_ATTACKERS];

static void victim(volatile unsigned long *shared)
{
	unsigned long n = 0;

	bench_pin(VICTIM_CPU);
	for (;;) {
		for (int i = 0; i < 1024; i++)
			__asm__ __volatile__("" : "+r"(n));
		n += 1024;
		__atomic_store_n(shared, n, __ATOMIC_RELAXED);
	}
}

static void *attacker(void *arg)
{
	long *count = arg;

	do {
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0) != 0) {
			perror("membarrier(SHARED_EXPEDITED)");
			break;
		}
		(*count)++;
	} while (bench_now() - t0 < secs);
	return NULL;
}

int main(int argc, char **argv)
{
	volatile unsigned long *shared;
	long long before[BENCH_MAX_CPUS], after[BENCH_MAX_CPUS];
	long long irq0[BENCH_MAX_CPUS], irq1[BENCH_MAX_CPUS];
	unsigned long v0, v1;
	long calls = 0;
	double t;
	int attack, busy, nthreads, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[MAX_ATTACKERS];
	pid_t pid;

	nthreads = argc > 4 ? atoi(argv[4]) : 1;
	if (argc < 4 || argc > 5 ||
	    (strcmp(argv[1], "idle") != 0 && strcmp(argv[1], "busy") != 0 &&
	     strcmp(argv[1], "attack") != 0) || atof(argv[2]) <= 0 ||
	    nthreads < 1 || nthreads > MAX_ATTACKERS) {
		fprintf(stderr, "usage: dos idle|busy|attack SECONDS LABEL [THREADS]\n");
		return 2;
	}
	attack = strcmp(argv[1], "attack") == 0;
	busy = strcmp(argv[1], "busy") == 0;
	secs = atof(argv[2]);
	if (ncpu < 2 || ncpu > BENCH_MAX_CPUS || read_cal_row(before, ncpu) != 0) {
		printf("RESULT label=%s skipped=needs-2-cpus-and-a-CAL-row\n", argv[3]);
		return 0;
	}
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	bench_pin(0);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		victim(shared);
	usleep(200000);

	read_cal_row(before, ncpu);
	bench_read_irqs(irq0, ncpu);
	v0 = __atomic_load_n(shared, __ATOMIC_RELAXED);
	t0 = bench_now();
	if (attack) {
		/* The threads inherit this thread's CPU 0 affinity. */
		for (int i = 1; i < nthreads; i++)
			pthread_create(&th[i], NULL, attacker, &counts[i]);
		attacker(&counts[0]);
		for (int i = 1; i < nthreads; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < nthreads; i++)
			calls += counts[i];
	} else if (busy) {
		while (bench_now() - t0 < secs)
			;
	} else {
		usleep((useconds_t)(secs * 1e6));
	}
	t = bench_now() - t0;
	v1 = __atomic_load_n(shared, __ATOMIC_RELAXED);
	read_cal_row(after, ncpu);
	bench_read_irqs(irq1, ncpu);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	printf("RESULT label=%s cpus=%d seconds=%.2f victim_ops_per_s=%.4g victim_ipis_per_s=%.1f victim_irqs_per_s=%.1f attacker_threads=%d attacker_calls_per_s=%.1f\n",
	       argv[3], ncpu, t, (double)(v1 - v0) / t,
	       (double)(after[VICTIM_CPU] - before[VICTIM_CPU]) / t,
	       (double)(irq1[VICTIM_CPU] - irq0[VICTIM_CPU]) / t, attack ? nthreads : 0,
	       (double)calls / t);
	return 0;
}
