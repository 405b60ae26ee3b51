/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads racing on first use under a seccomp filter that traps
 * membarrier(2): each of them probes, one at a time under the guard
 * (SIGSYS's disposition is the process's), so that every trap is the
 * probing thread's own and none kills.  Links the library's internal
 * copy, which has no constructor and can be reset (as tests/race does),
 * so first use happens in the racing threads, again and again.  The
 * rounds run in a child, which the filter stays on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "tap.h"
#include "testlib.h"
#include "testing.h"

#define NTHREADS 8
#define ROUNDS 100

static int go, arrived;
static int results[NTHREADS];

static void *racer(void *arg)
{
	int i = (int)(long)arg;

	__atomic_fetch_add(&arrived, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	results[i] = i % 2 ? membarrier(MEMBARRIER_CMD_QUERY, 0, 0) : membarrier_heavy();
	return NULL;
}

/* The rounds: 0, or the number of the first check that failed. */
static int rounds(void)
{
	int emulated = -1;

	for (int round = 0; round < ROUNDS; round++) {
		struct membarrier_strategy st;
		struct sigaction sa;
		pthread_t t[NTHREADS];

		lmb_test_reset();
		go = 0;
		arrived = 0;
		for (int i = 0; i < NTHREADS; i++)
			if (pthread_create(&t[i], NULL, racer, (void *)(long)i) != 0)
				return 1;
		while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < NTHREADS)
			sched_yield();
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(t[i], NULL);
		if (membarrier_get_strategy(&st, sizeof(st)) != 0 || st.kernel_errno != ENOSYS ||
		    st.heavy != MEMBARRIER_MECHANISM_SIGNAL)
			return 2;
		if (emulated < 0)
			emulated = st.emulated_commands;
		for (int i = 0; i < NTHREADS; i++)
			if (results[i] != (i % 2 ? emulated : 0))
				return 3;
		if (sigaction(SIGSYS, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL)
			return 4;
	}
	return 0;
}

/* In a child: the filter, and no core file if it kills. */
static void trapped(void)
{
	struct rlimit no_core = { 0, 0 };

	setrlimit(RLIMIT_CORE, &no_core);
	if (deny_membarrier(SECCOMP_RET_TRAP) != 0)
		_exit(98);
}

int main(void)
{
	int status = 0;
	pid_t pid;

	if (!test_seccomp_works()) {
		if (test_emulator() == NULL)
			tap_bail("seccomp filters do not work on this host");
		printf("1..0 # SKIP %s\n", TEST_NO_SECCOMP);
		return 0;
	}
	tap_plan(2);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		trapped();
		_exit(rounds());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		tap_bail("fork: %s", strerror(errno));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "%d rounds of %d threads probing at once under a trapping filter "
	       "(status 0x%x; 0 or the failed check: %d%s)", ROUNDS, NTHREADS,
	       (unsigned int)status, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
	       WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS ? ", killed by SIGSYS" : "");

	/* The control: the filter does trap, and kills where nothing guards. */
	pid = fork();
	if (pid == 0) {
		trapped();
		_exit(raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0) >= 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		tap_bail("fork: %s", strerror(errno));
	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
	       "control: an unguarded membarrier(2) is killed by that filter (status 0x%x)",
	       (unsigned int)status);
	return tap_exit();
}
