/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Concurrent membarrier_heavy() callers share calls (libmembarrier/
 * coalesce.c), in the mechanism the host offers and in the signal
 * mechanism (the test re-executes itself with LIBMEMBARRIER_HEAVY=signal):
 *  - four threads calling membarrier_heavy() at once are served by fewer
 *    calls of the mechanism than they made barriers (in one of up to 20
 *    batches), and each call still returns 0;
 *  - a signal handler that calls membarrier_heavy() on the thread that is
 *    running a shared call does not wait for itself: a thread makes heavy
 *    barriers in a loop while another sends it signals whose handler makes
 *    one too (a hang is a failure: alarm()).
 * The ordering itself is the litmus test's (tests/litmus --callers).
 * About a second.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testlib.h"
#include "testing.h"

#define SHARERS 4
#define BATCHES 20

static int go, stop, failures;
static unsigned long in_handler;

static void *sharer(void *arg)
{
	unsigned long n = (unsigned long)arg;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	for (unsigned long i = 0; i < n; i++)
		if (membarrier_heavy() != 0)
			__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	if (membarrier_heavy() != 0)
		__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&in_handler, 1, __ATOMIC_RELAXED);
}

static void *looper(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		if (membarrier_heavy() != 0)
			__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void run(const char *mech, unsigned long per_thread, unsigned long signals)
{
	pthread_t t[SHARERS];
	struct sigaction sa;
	struct timespec pause = { 0, 20000 };
	unsigned int calls;

	/*
	 * Sharing: calls of the mechanism against barriers completed.  Callers
	 * share only when one arrives while another's call runs, which a fast
	 * call on an idle machine, or a loaded one that runs the threads in
	 * turn, can make rare: batches until one shares, up to BATCHES.
	 */
	for (int b = 1; b <= BATCHES; b++) {
		calls = lmb_test_calls();
		__atomic_store_n(&go, 0, __ATOMIC_RELAXED);
		for (int i = 0; i < SHARERS; i++)
			if (pthread_create(&t[i], NULL, sharer, (void *)per_thread) != 0)
				tap_bail("pthread_create");
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < SHARERS; i++)
			pthread_join(t[i], NULL);
		calls = lmb_test_calls() - calls;
		tap_diag("%s, batch %d: %lu heavy barriers from %d threads, %u calls of the mechanism",
			 mech, b, SHARERS * per_thread, SHARERS, calls);
		if (calls < SHARERS * per_thread)
			break;
	}
	tap_ok(calls > 0 && calls < SHARERS * per_thread && failures == 0,
	       "%s: concurrent heavy barriers share calls, and each returns 0", mech);

	/* A handler's heavy barrier on the thread that runs a call. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0 || pthread_create(&t[0], NULL, looper, NULL) != 0)
		tap_bail("sigaction or pthread_create");
	for (unsigned long i = 0; i < signals; i++) {
		pthread_kill(t[0], SIGUSR1);
		nanosleep(&pause, NULL);
	}
	/*
	 * Stop the loop once a handler ran: signals sent while one is
	 * pending merge, so on a loaded machine far fewer handlers run than
	 * signals were sent (waiting for half of them hung the test).  A
	 * heavy barrier that waits for itself still hangs the loop: alarm().
	 */
	while (__atomic_load_n(&in_handler, __ATOMIC_RELAXED) == 0)
		nanosleep(&pause, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t[0], NULL);
	tap_diag("%s: %lu handlers made a heavy barrier", mech,
		 __atomic_load_n(&in_handler, __ATOMIC_RELAXED));
	tap_ok(failures == 0, "%s: a handler's heavy barrier on a thread running one returns", mech);
}

int main(int argc, char **argv)
{
	int child = argc == 2 && strcmp(argv[1], "--child") == 0;
	struct membarrier_strategy st;

	if (!child)
		tap_plan(4);
	alarm(60);	/* a caller that waits for itself hangs: a failure */
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		tap_bail("membarrier_get_strategy");
	/* The signal mechanism's calls take tens of microseconds: fewer. */
	run(membarrier_mechanism_name(st.heavy), child ? 200 : 5000, child ? 500 : 5000);
	if (child)
		return tap_failed != 0;
	test_reexec_signal(argv[0]);
	tap_bail("cannot re-execute %s", argv[0]);
}
