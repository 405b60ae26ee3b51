/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cancellation: membarrier_heavy() and an emulated membarrier() are no
 * cancellation points.  The test re-executes itself with
 * LIBMEMBARRIER_HEAVY=signal.  CANCEL_THREADS (200) times: a fresh thread
 * (the blocker) spins 10 ms with every signal blocked, so that a barrier
 * waits a few milliseconds for it to be switched out or to exit; a worker
 * thread, cancelled (deferred, the default) as soon as it is created,
 * issues one barrier, then calls pthread_testcancel().  The worker must be
 * cancelled there, never inside the barrier (which would leave the
 * barrier's slot taken for good: after 64 of those every later barrier
 * waits forever for a free slot), and must be joined within 5 s.  Then a
 * last heavy barrier must return within 5 s.  Even workers call
 * membarrier_heavy(), odd ones membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED,
 * 0, 0), which the signal mechanism emulates.  About 2 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "tap.h"
#include "testlib.h"

#define JOIN_LIMIT 5	/* seconds */

struct worker {
	int kind;		/* 0: membarrier_heavy(), 1: membarrier() */
	int in_call;
	int calls;
	int errors;
	int cancelled_inside;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Best effort: the blocker alone on CPU 0, the others on CPU 1, so that
 * the worker's wake-ups do not preempt the blocker.
 */
static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/*
 * A thread the library has not seen before, running user code with its
 * signal blocked: a barrier waits until it is switched out or exits
 * (up to 10 ms), and the library's waits grow longer meanwhile.
 */
static void *blocker(void *arg)
{
	sigset_t all;
	double end;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pin(0);
	__atomic_store_n((int *)arg, 1, __ATOMIC_SEQ_CST);
	end = now() + 0.010;
	while (now() < end)
		;
	return NULL;
}

static void cleanup(void *arg)
{
	struct worker *w = arg;

	if (__atomic_load_n(&w->in_call, __ATOMIC_SEQ_CST))
		w->cancelled_inside = 1;
}

/* Cancelled before it starts: the request is pending all along. */
static void *worker(void *arg)
{
	struct worker *w = arg;

	/* The library's short sleeps as short as asked: more of them. */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_cleanup_push(cleanup, w);
	for (;;) {
		int ret;

		__atomic_store_n(&w->in_call, 1, __ATOMIC_SEQ_CST);
		ret = w->kind ? membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)
			      : membarrier_heavy();
		__atomic_store_n(&w->in_call, 0, __ATOMIC_SEQ_CST);
		if (ret != 0)
			w->errors++;
		w->calls++;
		pthread_testcancel();	/* the first cancellation point */
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void *last_heavy(void *arg)
{
	*(int *)arg = membarrier_heavy();
	return NULL;
}

/* Join t within JOIN_LIMIT seconds; 0 or an errno (ETIMEDOUT). */
static int join_limited(pthread_t t, void **ret)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += JOIN_LIMIT;
	return pthread_timedjoin_np(t, ret, &ts);
}

static int child(void)
{
	const char *env = getenv("CANCEL_THREADS");
	int n = env ? atoi(env) : 200, inside = 0, errors = 0, joined = 0, last = -1;
	struct membarrier_strategy s;
	double t0 = now(), t1;
	pthread_t b, t;
	void *ret;
	int err;

	alarm(120);	/* a hang that escapes the checks below still fails */
	tap_plan(4);
	if (membarrier_get_strategy(&s, sizeof(s)) != 0 ||
	    s.heavy != MEMBARRIER_MECHANISM_SIGNAL)
		tap_bail("heavy mechanism is %s, not signal", membarrier_mechanism_name(s.heavy));
	tap_diag("signal mechanism, signal %d; %d threads", s.signal, n);
	pin(1);	/* the workers inherit it */

	for (int i = 0; i < n; i++) {
		struct worker w = { .kind = i % 2 };
		int spinning = 0;

		if (pthread_create(&b, NULL, blocker, &spinning) != 0)
			tap_bail("pthread_create: %s", strerror(errno));
		while (!__atomic_load_n(&spinning, __ATOMIC_SEQ_CST))
			sched_yield();
		if (pthread_create(&t, NULL, worker, &w) != 0)
			tap_bail("pthread_create: %s", strerror(errno));
		pthread_cancel(t);
		err = join_limited(t, &ret);
		if (err != 0) {
			tap_ok(0, "worker %d: not joined within %d s of its cancellation "
			       "(%d calls returned; %d of %d earlier workers were cancelled "
			       "inside a barrier)", i, JOIN_LIMIT, w.calls, inside, i);
			_exit(1);
		}
		pthread_join(b, NULL);
		joined += ret == PTHREAD_CANCELED;
		inside += w.cancelled_inside;
		errors += w.errors;
	}
	tap_ok(joined == n, "%d of %d workers cancelled and joined", joined, n);
	tap_ok(inside == 0, "%d of %d workers were cancelled inside a barrier", inside, n);
	tap_ok(errors == 0, "%d barriers returned an error", errors);

	t1 = now();
	if (pthread_create(&t, NULL, last_heavy, &last) != 0)
		tap_bail("pthread_create: %s", strerror(errno));
	if (join_limited(t, NULL) != 0) {
		tap_ok(0, "a last heavy barrier did not return within %d s", JOIN_LIMIT);
		_exit(1);
	}
	tap_ok(last == 0, "a last heavy barrier returned %d after %.3f s", last, now() - t1);
	tap_diag("%.1f s", now() - t0);
	return tap_exit();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "--child") == 0)
		return child();
	test_reexec_signal(argv[0]);
	tap_bail("cannot execute this test again: %s", strerror(errno));
}
