/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Store-buffering litmus test for the asymmetric pair.
 *
 *   thread A: x = 1; membarrier_heavy(); r2 = y;
 *   thread B: y = 1; membarrier_light(); r1 = x;
 *
 * r1 == 0 && r2 == 0 is forbidden.  With --control both barriers are
 * compiler barriers, and the outcome shows up (x86 and most CPUs reorder a
 * store with a later load), which shows the test can fail.  Both threads
 * leave a spin rendezvous together each round, then wait a few iterations
 * that vary from round to round (jitter()), which is what makes the
 * reordering visible at all.
 *
 * --churn adds a third thread, on thread A's CPU, that creates and joins
 * short-lived threads on thread B's CPU for as long as the rounds last, so
 * the heavy side's view of the thread list (the signal mechanism reads
 * /proc/self/task) changes under it, threads exiting on the other CPU
 * while A lists them.
 *
 * --callers N adds N threads that call membarrier_heavy() in a loop for as
 * long as the rounds last, so that thread A's barriers are shared with
 * theirs (libmembarrier/coalesce.c): A's call is often served by a call
 * another thread started after A arrived.  The program counts the calls
 * of the mechanism, and with --expect-shared fails when no heavy barrier
 * was shared.  --impatient (with --callers, in a counting build) cuts every
 * wait for another's call at once: the waiters make calls of their own
 * (what a waiter does when its runner is slow), and with --expect-cut the
 * run fails if none did.  (It has no control of its own: a cut wait spends microseconds in
 * system calls before it returns, far longer than a store buffer holds a
 * store, so even a cut wait that made no call at all shows no reordering
 * here.  It shows that the path returns, and returns 0, among the others;
 * its ordering is the mechanism's own call's, as for any lone caller.)
 *
 * usage: litmus [--control] [--churn] [--callers N [--expect-shared]
 *               [--impatient [--expect-cut]]]
 *               [--rounds N] [--expect none|some]
 * Prints the mechanism and counts; exits 0 when the expectation holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "membarrier.h"
/*
 * The calls of the mechanism are counted where the program is linked
 * with the tests' copy of the library (make check defines
 * LITMUS_COUNT_CALLS); elsewhere (the Debian guest builds it against the
 * installed library) --callers runs without the count.
 */
#ifdef LITMUS_COUNT_CALLS
# include "testing.h"
static const int counting = 1;
#else
static const int counting = 0;
static unsigned int lmb_test_calls(void)
{
	return 0;
}

static unsigned int lmb_test_cut(void)
{
	return 0;
}

static void lmb_test_patient(int on)
{
	(void)on;
}
#endif

static int x, y, r1, r2;
static unsigned long arrive;
static int control, churn;
static int churn_stop;
static unsigned long churned;
static int callers_stop;
static unsigned long called;

#define LOAD(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#define COMPILER_BARRIER() __asm__ __volatile__("" : : : "memory")

/* Two-thread rendezvous: the n-th call returns once both made it. */
static void rendezvous(unsigned long n)
{
	__atomic_fetch_add(&arrive, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&arrive, __ATOMIC_ACQUIRE) < 2 * n)
		;
}

/*
 * The last thread to arrive leaves the rendezvous first, by the time the
 * other takes to see its arrival (a cache-line transfer, hundreds of
 * nanoseconds under a hypervisor): enough to finish its store and load
 * before the other starts, and the reordering needs the two to overlap.
 * Each thread waits a different number of iterations each round, so the
 * offset between them sweeps that gap.  On a 2-CPU virtual machine the
 * control found 1 to 36 forbidden outcomes in 5 * 10^6 rounds without
 * this, 7 to 1236 in 10^6 with it (four runs, mostly hundreds).
 */
#define JITTER 64
static void jitter(unsigned long i, unsigned long mult)
{
	for (volatile unsigned long k = (i * mult) % JITTER; k > 0; k--)
		;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);	/* best effort */
}

struct args {
	unsigned long rounds;
	int cpu;
};

static void *thread_b(void *p)
{
	struct args *a = p;

	pin(a->cpu);
	for (unsigned long i = 1; i <= a->rounds; i++) {
		rendezvous(2 * i - 1);
		jitter(i, 7);
		STORE(&y, 1);
		if (control)
			COMPILER_BARRIER();
		else
			membarrier_light();
		STORE(&r1, LOAD(&x));
		rendezvous(2 * i);
	}
	return NULL;
}

static void *short_lived(void *p)
{
	return p;
}

/* --churn: threads come and go while the rounds run. */
static void *churner(void *p)
{
	pthread_attr_t attr;
	cpu_set_t one;

	(void)p;
	/*
	 * The churner on thread A's CPU, the threads it starts on thread B's:
	 * they exit there while A lists the threads from its own CPU, and
	 * the churner's own work (clone, join) does not keep B from its CPU.
	 * Left to the scheduler, the churner settled on either CPU, and the
	 * rounds cost 60 or 400 us depending on where.
	 */
	pin(0);
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	pthread_attr_init(&attr);
	(void)pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		pthread_t t;

		struct timespec pause = { 0, 100000 };

		if (pthread_create(&t, &attr, short_lived, NULL) == 0 &&
		    pthread_join(t, NULL) == 0)
			__atomic_fetch_add(&churned, 1, __ATOMIC_RELAXED);
		/*
		 * Leave the two CPUs of a small machine to the rendezvous most
		 * of the time: a third busy thread makes its partners wait for
		 * time slices, and the rounds crawl.
		 */
		nanosleep(&pause, NULL);
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

/*
 * --callers: heavy barriers that thread A's share.  Each caller sleeps
 * between its barriers (2 to 6 ms, varying): the rendezvous needs both
 * CPUs of a small machine, and eight callers in a tight loop kept A and B
 * from meeting for whole time slices (4.7 ms a round); with 0.5 to 2.5 ms
 * a round took twice as long as without callers.
 */
static void *caller(void *p)
{
	unsigned long i = (unsigned long)p;

	while (!__atomic_load_n(&callers_stop, __ATOMIC_RELAXED)) {
		struct timespec pause = { 0, 2000000 + (long)(i * 7919 % 200) * 20000 };

		(void)membarrier_heavy();
		__atomic_fetch_add(&called, 1, __ATOMIC_RELAXED);
		nanosleep(&pause, NULL);
		i++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long rounds = 1000000, forbidden = 0, seen[4] = { 0 }, churn0, churn1;
	unsigned long called0, called1, calls0, calls1;
	const char *expect = NULL;
	pthread_t *callers = NULL;
	int ncallers = 0, expect_shared = 0, impatient = 0, expect_cut = 0;
	unsigned int cut0;
	struct membarrier_strategy st;
	struct args a;
	struct timespec t0, t1;
	pthread_t b, c;
	double secs;
	int ok;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--control") == 0)
			control = 1;
		else if (strcmp(argv[i], "--churn") == 0)
			churn = 1;
		else if (strcmp(argv[i], "--expect-shared") == 0)
			expect_shared = 1;
		else if (strcmp(argv[i], "--impatient") == 0 && counting)
			impatient = 1;
		else if (strcmp(argv[i], "--expect-cut") == 0)
			expect_cut = 1;

		else if (strcmp(argv[i], "--callers") == 0 && i + 1 < argc)
			ncallers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc)
			expect = argv[++i];
		else {
			fprintf(stderr, "usage: litmus [--control] [--churn] [--callers N "
				"[--expect-shared] [--impatient [--expect-cut]]] [--rounds N] "
				"[--expect none|some]\n");
			return 2;
		}
	}
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		return 2;

	a.rounds = rounds;
	a.cpu = 1;
	if (churn && pthread_create(&c, NULL, churner, NULL) != 0) {
		perror("pthread_create");
		return 2;
	}
	if (ncallers > 0 && (callers = calloc((size_t)ncallers, sizeof(*callers))) == NULL)
		return 2;
	for (int i = 0; i < ncallers; i++)
		if (pthread_create(&callers[i], NULL, caller, (void *)(unsigned long)(i * 31)) != 0) {
			perror("pthread_create");
			return 2;
		}
	pin(0);
	if (pthread_create(&b, NULL, thread_b, &a) != 0) {
		perror("pthread_create");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	churn0 = __atomic_load_n(&churned, __ATOMIC_RELAXED);
	called0 = __atomic_load_n(&called, __ATOMIC_RELAXED);
	lmb_test_patient(impatient ? -1 : 0);
	cut0 = lmb_test_cut();
	calls0 = lmb_test_calls();
	for (unsigned long i = 1; i <= rounds; i++) {
		rendezvous(2 * i - 1);
		jitter(i, 13);
		STORE(&x, 1);
		if (control)
			COMPILER_BARRIER();
		else if (membarrier_heavy() != 0) {
			fprintf(stderr, "membarrier_heavy: %s\n", strerror(errno));
			return 2;
		}
		STORE(&r2, LOAD(&y));
		rendezvous(2 * i);
		seen[LOAD(&r1) * 2 + LOAD(&r2)]++;
		if (LOAD(&r1) == 0 && LOAD(&r2) == 0)
			forbidden++;
		STORE(&x, 0);
		STORE(&y, 0);
	}
	churn1 = __atomic_load_n(&churned, __ATOMIC_RELAXED);
	called1 = __atomic_load_n(&called, __ATOMIC_RELAXED);
	calls1 = lmb_test_calls();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(b, NULL);
	__atomic_store_n(&callers_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < ncallers; i++)
		pthread_join(callers[i], NULL);
	free(callers);
	if (churn) {
		__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
		pthread_join(c, NULL);
	}
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	printf("litmus: %s, heavy=%s light=%s: %lu rounds in %.2f s (%.2f us/round), "
	       "r1r2=00:%lu 01:%lu 10:%lu 11:%lu, forbidden=%lu%s\n",
	       control ? "control (compiler barriers)" : "membarrier",
	       control ? "compiler-barrier" : membarrier_mechanism_name(st.heavy),
	       control ? "compiler-barrier" : st.light_is_fence ? "fence" : "compiler-barrier",
	       rounds, secs, secs * 1e6 / (double)rounds, seen[0], seen[1], seen[2], seen[3],
	       forbidden, churn ? ", with thread churn" : "");
	if (churn) {
		printf("litmus: %lu short-lived threads created and joined during the rounds\n",
		       churn1 - churn0);
		/* Without churn the --churn checks would prove nothing. */
		if (churn1 == churn0) {
			fprintf(stderr, "litmus: no thread came and went during the rounds\n");
			return 2;
		}
	}
	if (ncallers > 0 && !counting) {
		printf("litmus: %d threads called membarrier_heavy() too (%lu calls; "
		       "the mechanism's calls are not counted in this build)\n", ncallers,
		       called1 - called0);
	} else if (ncallers > 0) {
		unsigned long heavy = called1 - called0 + (control ? 0 : rounds);

		printf("litmus: %d threads called membarrier_heavy() too: %lu calls in all, "
		       "served by %lu calls of the mechanism (%.3f per call)\n", ncallers,
		       heavy, calls1 - calls0,
		       heavy ? (double)(calls1 - calls0) / (double)heavy : 0.0);
		/*
		 * Without sharing the check would prove nothing new: with
		 * --expect-shared (tests/litmus.sh's full-strength runs, where
		 * about 5000 calls are shared natively, 5% over signals) the
		 * run fails if none was; a short run (a sanitizer's, an
		 * emulator's) may share none by chance, and only says so.
		 * The control's callers need only run.
		 */
		if (called1 == called0 || (expect_shared && calls1 - calls0 >= heavy)) {
			fprintf(stderr, "litmus: the heavy barriers were not shared\n");
			return 2;
		}
		/* --impatient: with --expect-cut (full-strength runs) the
		 * waiters' own calls must have happened; a short run may have
		 * had no waiter at all. */
		if (impatient) {
			printf("litmus: %u waits cut short by a call of the waiter's own\n",
			       lmb_test_cut() - cut0);
			if (expect_cut && lmb_test_cut() == cut0) {
				fprintf(stderr, "litmus: no wait was cut short\n");
				return 2;
			}
		}
	}
	if (expect == NULL)
		return 0;
	ok = strcmp(expect, "none") == 0 ? forbidden == 0 : forbidden > 0;
	return ok ? 0 : 1;
}
