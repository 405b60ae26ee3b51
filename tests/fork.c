/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork(): a child works, also when forked from a multithreaded parent
 * while other threads are in membarrier_heavy(); in each mechanism the
 * host offers (the test re-executes itself with LIBMEMBARRIER_HEAVY).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

static volatile int stop;
static int running;
/* The children of a multithreaded parent start no thread (see run()). */
static int child_no_thread;

static void *busy(void *arg)
{
	__atomic_fetch_add(&running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (arg)
			(void)membarrier_heavy();
		else
			membarrier_light();
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	return NULL;
}

/* In the child: 0 if everything works. */
static int in_child(int parent_query, const struct membarrier_strategy *parent)
{
	struct membarrier_strategy st;
	pthread_t t;
	int bad = 0;

	alarm(30);
	stop = 0;
	bad |= membarrier_get_strategy(&st, sizeof(st)) != 0;
	bad |= st.heavy != parent->heavy;
	bad |= membarrier(MEMBARRIER_CMD_QUERY, 0, 0) != parent_query;
	bad |= membarrier_heavy() != 0;
	if (parent_query & MEMBARRIER_CMD_PRIVATE_EXPEDITED)
		bad |= membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0;
	if (st.heavy == MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED)
		/* The registration follows the mm, which fork copies. */
		bad |= (raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) << 1;
	if (!child_no_thread && pthread_create(&t, NULL, child_thread, NULL) != 0)
		return 4;
	for (int i = 0; i < 100; i++)
		bad |= (membarrier_heavy() != 0) << 2;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	if (!child_no_thread)
		pthread_join(t, NULL);
	return bad;
}

static int fork_and_wait(int query, const struct membarrier_strategy *st)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(in_child(query, st));
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Can a child forked from this (multithreaded) process start a thread? */
static int child_can_start_thread(void)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		pthread_t t;

		/* Not into the TAP stream: qemu's message (on stdout and stderr)
		 * says "Bail out!".  Where that cannot be had, the children
		 * start no thread. */
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(2);
		_exit(pthread_create(&t, NULL, test_short_lived, NULL) != 0 ||
		      pthread_join(t, NULL) != 0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

static int run(const char *mechanism)
{
	struct membarrier_strategy st;
	pthread_t t[3];
	int query, ret, worst = 0;

	membarrier_get_strategy(&st, sizeof(st));
	query = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	tap_diag("%s: heavy is %s", mechanism, membarrier_mechanism_name(st.heavy));

	ret = fork_and_wait(query, &st);
	tap_ok(ret == 0, "%s: child of a single-threaded parent (%d)", mechanism, ret);

	stop = 0;
	pthread_create(&t[0], NULL, busy, NULL);
	pthread_create(&t[1], NULL, busy, NULL);
	pthread_create(&t[2], NULL, busy, (void *)1);	/* heavy barriers under way */
	/*
	 * Fork only once the three run their loops: that is the case under
	 * test.  A fork while a thread is still starting is not, and under
	 * ASan it can copy the allocator's lock held by the starting thread
	 * into the child, whose own threads then block on it forever.
	 */
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE) < 3)
		sched_yield();
	/*
	 * qemu-user 7.2 aborts on its own assertion (cpu == current_cpu) when
	 * the child of a multithreaded process starts a thread, with or
	 * without this library: under an emulator that fails this probe, the
	 * children only call the library, and the result says so.
	 */
	if (test_emulator() != NULL && !child_can_start_thread()) {
		child_no_thread = 1;
		tap_diag("the emulator cannot run a thread in the child of a multithreaded "
			 "process (qemu-user 7.2 aborts): the children start none");
	}
	for (int i = 0; i < 20; i++) {
		ret = fork_and_wait(query, &st);
		if (ret != 0)
			worst = ret;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return tap_ok(worst == 0,
		      "%s: 20 children of a parent with 3 threads in light and heavy%s (%d)",
		      mechanism, child_no_thread ? ", starting no thread (emulator)" : "",
		      worst);
}

int main(int argc, char **argv)
{
	static const char *const mechanisms[] = { "auto", "signal", "fence" };
	const int n = sizeof(mechanisms) / sizeof(mechanisms[0]);

	if (argc == 3 && strcmp(argv[1], "--mechanism") == 0)
		return run(argv[2]) ? 0 : 1;

	tap_plan(n * 2);
	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			/* The re-executed test prints its two results itself. */
			setenv("LIBMEMBARRIER_HEAVY", mechanisms[i], 1);
			test_reexec(argv[0], "--mechanism", mechanisms[i]);
			_exit(97);
		}
		waitpid(pid, &status, 0);
	}
	return 0;
}
