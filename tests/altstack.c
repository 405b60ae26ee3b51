/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SA_ONSTACK: the signal mechanism's handler runs on the alternate signal
 * stack of a thread that has one (Go's goroutine stacks are small and
 * have no guard page: Go requires SA_ONSTACK of every handler).  The test
 * re-executes itself with LIBMEMBARRIER_HEAVY=signal, then checks
 *  - that the library's signal has its handler with SA_ONSTACK;
 *  - that a heavy barrier leaves the handler's frame on the alternate
 *    stack of a thread running user code: the stack is filled with a
 *    pattern, and heavy barriers are issued until some of it changes
 *    (up to 2 s; nothing else runs on that stack).
 * A few milliseconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "tap.h"
#include "testlib.h"

#define ALT_SIZE (256 * 1024)	/* room for any CPU's signal frame */
#define PATTERN 0xa5

static unsigned char *alt;
static int ready, stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs user code on its own stack, with `alt` as its alternate stack. */
static void *spinner(void *arg)
{
	stack_t ss = { .ss_sp = alt, .ss_size = ALT_SIZE, .ss_flags = 0 }, old;

	(void)arg;
	if (sigaltstack(&ss, &old) != 0)
		tap_bail("sigaltstack: %s", strerror(errno));
	__atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	/* Give back what the thread had (a sanitizer's own stack). */
	(void)sigaltstack(&old, NULL);
	return NULL;
}

/* How many bytes of the alternate stack lost the pattern. */
static size_t touched(void)
{
	size_t n = 0;

	for (size_t i = 0; i < ALT_SIZE; i++)
		n += __atomic_load_n(&alt[i], __ATOMIC_RELAXED) != PATTERN;
	return n;
}

static int child(void)
{
	struct membarrier_strategy s;
	struct sigaction sa;
	struct timespec ms = { 0, 1000000 };
	double deadline;
	size_t n = 0;
	int barriers = 0, errors = 0;
	pthread_t t;

	alarm(60);
	tap_plan(2);
	if (membarrier_get_strategy(&s, sizeof(s)) != 0 ||
	    s.heavy != MEMBARRIER_MECHANISM_SIGNAL)
		tap_bail("heavy mechanism is %s, not signal", membarrier_mechanism_name(s.heavy));
	tap_diag("signal mechanism, signal %d", s.signal);
	if (sigaction(s.signal, NULL, &sa) != 0)
		tap_bail("sigaction(%d): %s", s.signal, strerror(errno));
	tap_ok((sa.sa_flags & SA_ONSTACK) != 0, "signal %d: handler installed with%s SA_ONSTACK "
	       "(sa_flags 0x%x)", s.signal, (sa.sa_flags & SA_ONSTACK) ? "" : "out",
	       (unsigned int)sa.sa_flags);

	alt = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alt == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memset(alt, PATTERN, ALT_SIZE);
	if (pthread_create(&t, NULL, spinner, NULL) != 0)
		tap_bail("pthread_create: %s", strerror(errno));
	while (!__atomic_load_n(&ready, __ATOMIC_SEQ_CST))
		nanosleep(&ms, NULL);
	deadline = now() + 2;
	while (n == 0 && now() < deadline) {
		errors += membarrier_heavy() != 0;
		barriers++;
		nanosleep(&ms, NULL);
		n = touched();
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	tap_ok(n > 0 && errors == 0, "after %d heavy barriers (%d failed), %zu bytes of the "
	       "running thread's alternate stack were written", barriers, errors, n);
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
