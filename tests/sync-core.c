/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The emulated MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE (the kernel has
 * no membarrier: a seccomp filter answers ENOSYS) may fail, never abort:
 * on x86, where every other thread must run the handler, a thread waiting
 * in sigtimedwait() cannot (glibc's helper thread for timer_create() with
 * SIGEV_THREAD waits so), and the call fails with EAGAIN; the process
 * goes on, and membarrier_heavy() still serves it.
 */
#define _GNU_SOURCE
#include "tap.h"
#include "testlib.h"

#include <signal.h>
#include <string.h>
#include <time.h>

static void on_timer(union sigval v)
{
	(void)v;
}

/* In the sandbox: 0, or the number of the check that failed. */
static int child(void)
{
	struct sigevent sev;
	timer_t timer;
	int q = membarrier(MEMBARRIER_CMD_QUERY, 0, 0), ret, err;

	if (!(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return 2;	/* not emulated here */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0 ||
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0)
		return 3;	/* served while no thread waits */
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = on_timer;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
		return 4;
	/* glibc starts its helper thread at the first SIGEV_THREAD timer; let
	 * it reach its sigwaitinfo(). */
	usleep(100000);
	errno = 0;
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	err = errno;
	if (ret != -1 || err != EAGAIN)
		return 5;
	if (membarrier_heavy() != 0 || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
		return 6;
	timer_delete(timer);
	return 0;
}

int main(int argc, char **argv)
{
	int status = 0;
	pid_t pid;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
#if !defined(__x86_64__) && !defined(__i386__)
	printf("1..0 # SKIP only x86 needs every thread to run the handler for SYNC_CORE\n");
	return 0;
#endif
	if (test_emulator() != NULL && !test_seccomp_works()) {
		printf("1..0 # SKIP %s\n", TEST_NO_SECCOMP);
		return 0;
	}
	tap_plan(1);
	pid = fork();
	if (pid == 0) {
		if (deny_membarrier(SECCOMP_RET_ERRNO | ENOSYS) == 0)
			test_reexec(argv[0], "child", NULL);
		_exit(1);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "ENOSYS, a thread in sigwaitinfo() (timer_create(SIGEV_THREAD)): emulated "
	       "SYNC_CORE fails with EAGAIN, the process goes on (status 0x%x; 0 or the "
	       "failed check: %d; 134: abort)", (unsigned int)status,
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status) + 128);
	return tap_failed ? 1 : 0;
}
