/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sandbox set up after start-up (or a process restored onto a kernel
 * without its registration): QUERY, cached, still shows the kernel's
 * PRIVATE_EXPEDITED, which now fails with EPERM or ENOSYS.  membarrier()
 * emulates it with the signal mechanism, as where the kernel never had
 * it, rather than fail a caller that pairs it with compiler barriers.
 * Each case runs in a child that installs the filter; a thread spins in
 * user code meanwhile, and the library's handler must have been installed
 * for a real-time signal (the emulation ran) by the end.
 */
#define _GNU_SOURCE
#include "tap.h"
#include "testlib.h"

#include <signal.h>
#include <string.h>

static int stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Real-time signals with an SA_SIGINFO handler: the library's. */
static int rt_handlers(void)
{
	int n = 0;

	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) &&
		    sa.sa_sigaction != NULL)
			n++;
	}
	return n;
}

/* The child: 0 if every check held, else the number of the first failed. */
static int late(int err)
{
	pthread_t t;
	int q = membarrier(MEMBARRIER_CMD_QUERY, 0, 0), ret = 0;

	if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return 1;
	if (rt_handlers() != 0)
		return 2;
	if (pthread_create(&t, NULL, spin, NULL) != 0)
		return 3;
	if (deny_membarrier(SECCOMP_RET_ERRNO | (unsigned int)err) != 0)
		ret = 4;
	else if (raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != -err)
		ret = 5;	/* the control: the kernel refuses now */
	else if (membarrier(MEMBARRIER_CMD_QUERY, 0, 0) != q)
		ret = 6;
	else if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
		ret = 7;
	else if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
		ret = 8;
	else if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1, 0) != -1 || errno != err)
		ret = 9;	/* bad flags: not emulated, the kernel's answer */
	else if (membarrier_heavy() != 0)
		ret = 10;
	else if (rt_handlers() != 1)
		ret = 11;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return ret;
}

int main(void)
{
	static const int errs[] = { EPERM, ENOSYS };

	if (test_emulator() != NULL && !test_seccomp_works()) {
		printf("1..0 # SKIP %s\n", TEST_NO_SECCOMP);
		return 0;
	}
	if (!(membarrier(MEMBARRIER_CMD_QUERY, 0, 0) & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
		printf("1..0 # SKIP this kernel has no MEMBARRIER_CMD_PRIVATE_EXPEDITED\n");
		return 0;
	}
	tap_plan(2);
	for (int i = 0; i < 2; i++) {
		int status = 0;
		pid_t pid = fork();

		if (pid == 0)
			_exit(late(errs[i]));
		waitpid(pid, &status, 0);
		tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "a filter answering %s after start-up: PRIVATE_EXPEDITED and its "
		       "registration emulated with signals (status 0x%x; 0 or the failed check: %d)",
		       strerror(errs[i]), (unsigned int)status,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	return tap_failed ? 1 : 0;
}
