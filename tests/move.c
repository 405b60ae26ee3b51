/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The signal mechanism's move of a thread that blocks its signal
 * (libmembarrier/sig-thread.c, (D): the thread is put on one CPU, then on
 * another, then given back its own set), with that moment on one CPU held
 * for 300 ms by the tests' hook so that it can be aimed at:
 *   nested  a signal handler's membarrier_heavy() on the thread that is
 *           moving another: before 1.6 the handler ran during the move,
 *           found the move's lock taken by the barrier it interrupted, and
 *           aborted after 10 s unless the spinner was switched out; now
 *           the handler waits for the move's end (checked: it runs at
 *           least 250 ms after the signal) and its barrier returns;
 *   fork    the moved thread forks while it is on one CPU: its child must
 *           have the thread's own set, not that one CPU.
 * Each case runs in a child of its own with a 45 s alarm; both need two
 * CPUs (one: skipped, saying so).  A thread spinning with the signal
 * blocked is moved only after 20 ms without a context switch: the spinner
 * runs SCHED_FIFO where the process may (root), so that the host's other
 * work does not preempt it; otherwise, on a busy host, that may take a
 * few barriers (up to 20 s of them).  About 2 s.
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
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"
#include "testing.h"

static int stop, moved, forked, child_ok, handled;
static pid_t spinner_tid;
static cpu_set_t initial;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int spinner_fifo;

/*
 * The spinner's set-up: every signal blocked, and SCHED_FIFO where this
 * process may (root): then nothing of the host's other work preempts it,
 * and a barrier has to move it.  (The RT throttle's pause every second is
 * a switch, after which the next barrier moves it.)
 */
static void block_all(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		__atomic_store_n(&spinner_fifo, 1, __ATOMIC_RELAXED);
}

/* Is tid's set one CPU alone? */
static int on_one_cpu(pid_t tid)
{
	cpu_set_t set;

	return sched_getaffinity(tid, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
}

/* nested: spins with every signal blocked until stop. */
static void *spin_blocked(void *arg)
{
	(void)arg;
	block_all();
	__atomic_store_n(&spinner_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* fork: the same, and forks once it finds itself on one CPU. */
static void *spin_fork(void *arg)
{
	(void)arg;
	block_all();
	__atomic_store_n(&spinner_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		cpu_set_t set;
		pid_t pid;
		int status;

		if (!on_one_cpu(0))
			continue;
		pid = fork();
		if (pid == 0) {
			/* The child's one thread: the set the thread had before. */
			_exit(sched_getaffinity(0, sizeof(set), &set) == 0 &&
			      CPU_EQUAL(&set, &initial) ? 0 : 1);
		}
		__atomic_store_n(&child_ok, pid > 0 && waitpid(pid, &status, 0) == pid &&
			  WIFEXITED(status) && WEXITSTATUS(status) == 0, __ATOMIC_RELAXED);
		__atomic_store_n(&forked, 1, __ATOMIC_RELEASE);
		break;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

static int64_t t_signal, t_handler;

static void on_usr1(int sig)
{
	(void)sig;
	t_handler = now_ns();
	if (membarrier_heavy() == 0)
		__atomic_store_n(&handled, 1, __ATOMIC_RELEASE);
}

/*
 * Without SCHED_FIFO, the others on the last CPU: the spinner, moved
 * first to the first one, must be alone there, or another thread's turns
 * would switch it out and the barrier would need no move.  (Called after
 * the spinner was made, which keeps the whole set.)
 */
static void pin_last(void)
{
	cpu_set_t set;
	int last = -1;

	if (__atomic_load_n(&spinner_fifo, __ATOMIC_RELAXED))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &initial))
			last = cpu;
	CPU_ZERO(&set);
	CPU_SET(last, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		abort();
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

/* Heavy barriers until *done or 20 s. */
static void *barriers(void *done)
{
	int64_t end = now_ns() + 20000000000;

	while (!__atomic_load_n((int *)done, __ATOMIC_ACQUIRE) && now_ns() < end)
		if (membarrier_heavy() != 0)
			abort();
	return NULL;
}

static int case_nested(void)
{
	struct sigaction sa;
	pthread_t s, b;
	int64_t end = now_ns() + 20000000000;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0 || pthread_create(&s, NULL, spin_blocked, NULL) != 0)
		return 2;
	while (__atomic_load_n(&spinner_tid, __ATOMIC_ACQUIRE) == 0)
		;
	pin_last();
	if (pthread_create(&b, NULL, barriers, &handled) != 0)
		return 2;
	/* The spinner on one CPU: the barrier thread holds the move's lock. */
	while (!__atomic_load_n(&handled, __ATOMIC_ACQUIRE) && now_ns() < end) {
		if (on_one_cpu(spinner_tid)) {
			__atomic_store_n(&moved, 1, __ATOMIC_RELAXED);
			t_signal = now_ns();
			pthread_kill(b, SIGUSR1);
			while (on_one_cpu(spinner_tid))
				sleep_ms(1);
		}
		sleep_ms(1);
	}
	pthread_join(b, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(s, NULL);
	if (!moved) {
		printf("# FAILED: no barrier moved the spinning thread in 20 s\n");
		return 1;
	}
	/*
	 * The signal came within a few ms of the move's start (main looks
	 * every ms), so the handler may run only when the 300 ms on one CPU
	 * are over: before 1.6 it ran at once, and its barrier, which needed
	 * the move's lock, aborted after 10 s unless the spinner happened to
	 * be switched out (the RT throttle does that once a second).
	 */
	printf("# the handler ran %.1f ms after the signal (the move lasts 300 ms); its heavy "
	       "barrier returned: %s\n", (t_handler - t_signal) / 1e6, handled ? "yes" : "no");
	return handled && t_handler - t_signal >= 250000000 ? 0 : 1;
}

static int case_fork(void)
{
	pthread_t s, b;

	if (pthread_create(&s, NULL, spin_fork, NULL) != 0)
		return 2;
	while (__atomic_load_n(&spinner_tid, __ATOMIC_ACQUIRE) == 0)
		;
	pin_last();
	if (pthread_create(&b, NULL, barriers, &forked) != 0)
		return 2;
	pthread_join(b, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(s, NULL);
	if (!forked) {
		printf("# FAILED: no barrier moved the spinning thread in 20 s\n");
		return 1;
	}
	printf("# the child of the thread moved to one CPU has the thread's own set: %s\n",
	       child_ok ? "yes" : "no");
	return child_ok ? 0 : 1;
}

static void run(const char *name, int (*fn)(void), const char *what)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int ret;

		alarm(45);
		ret = fn();
		fflush(stdout);
		_exit(ret);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		tap_bail("fork or waitpid");
	if (!WIFEXITED(status))
		tap_diag("%s: killed by signal %d%s", name, WTERMSIG(status),
			 WTERMSIG(status) == SIGABRT ? " (the library aborted)" : "");
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s", name, what);
}

int main(void)
{
	struct membarrier_strategy st;

	tap_plan(2);
	/* The tests' copy detects at the first call: the signal mechanism. */
	setenv("LIBMEMBARRIER_HEAVY", "signal", 1);
	if (sched_getaffinity(0, sizeof(initial), &initial) != 0)
		tap_bail("sched_getaffinity");
	if (CPU_COUNT(&initial) < 2) {
		printf("ok - nested # SKIP one CPU: a move needs two\n");
		printf("ok - fork # SKIP one CPU: a move needs two\n");
		return 0;
	}
	if (membarrier_get_strategy(&st, sizeof(st)) != 0 ||
	    strcmp(membarrier_mechanism_name(st.heavy), "signal") != 0)
		tap_bail("the signal mechanism is not available here");
	lmb_test_force_hold(300000000);
	run("nested", case_nested,
	    "a handler on a thread moving another runs after the move, and its heavy "
	    "barrier returns");
	run("fork", case_fork,
	    "a child forked by a thread on one CPU for a move has the thread's own set");
	return tap_failed != 0;
}
