/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The errno table of membarrier() where the kernel's QUERY fails and where
 * the library was told not to probe.  Each scenario re-executes this test
 * (so the library probes afresh) and the child prints its own TAP lines:
 *
 *   enosys, eperm   a seccomp filter makes membarrier(2) fail with ENOSYS
 *                   (as without CONFIG_MEMBARRIER) or EPERM (a sandbox).
 *                   Every command the library does not emulate, invalid
 *                   ones included, fails as the bare system call would
 *                   there: -1 with that errno, not EINVAL.  QUERY with
 *                   flags fails the same way; QUERY with flags 0 returns
 *                   the emulated mask; an emulated command with flags 1
 *                   is EINVAL.
 *   signal          LIBMEMBARRIER_HEAVY=signal, no filter: the library
 *                   skips its own probe, but kernel commands stay the
 *                   kernel's.  QUERY includes the kernel's bits, bad flags
 *                   get the kernel's EINVAL, and REGISTER_PRIVATE_EXPEDITED
 *                   _RSEQ reaches the kernel (the raw RSEQ command answers
 *                   EPERM before it and 0 after it).
 *
 * Runs on any kernel with membarrier.  errno-table --no-membarrier-kernel
 * runs the enosys checks without a filter, on a kernel built without
 * CONFIG_MEMBARRIER (the guest suite's): the real ENOSYS path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

/* How each call should come out. */
struct call {
	int cmd;
	unsigned int flags;
	const char *what;
};

/* Not emulated anywhere: the kernel's QUERY errno, as the bare call. */
static const struct call not_emulated[] = {
	{ MEMBARRIER_CMD_GLOBAL, 0, "GLOBAL" },
	{ -1, 0, "cmd -1" },
	{ 3, 0, "cmd 3 (two bits)" },
	{ 1 << 11, 0, "cmd 1 << 11 (unknown)" },
	{ MEMBARRIER_CMD_QUERY, 1, "QUERY with flags 1" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, "PRIVATE_EXPEDITED_RSEQ" },
	{ MEMBARRIER_CMD_GET_REGISTRATIONS, 0, "GET_REGISTRATIONS" },
};
#define N_NOT_EMULATED ((int)(sizeof(not_emulated) / sizeof(not_emulated[0])))

/* SYNC_CORE is emulated where the signal mechanism can serialise a core. */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
# define SYNC_CORE_EMULATED 1
#else
# define SYNC_CORE_EMULATED 0
#endif

/* TAP lines each child prints; the parent adds one per child (its exit). */
#define ERRNO_CHECKS (N_NOT_EMULATED + 6)
#define SIGNAL_CHECKS 7

static int expect_fail(int ret, int err, int want, const char *scen, const char *what)
{
	return tap_ok(ret == -1 && err == want, "%s: %s: -1 %s (got %d, %s)", scen, what,
		      strerror(want), ret, ret == -1 ? strerror(err) : "no error");
}

static int child_errno(const char *scen, int want)
{
	int emulated = MEMBARRIER_CMD_PRIVATE_EXPEDITED |
		       MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
	struct membarrier_strategy st;
	int ret, err;

	if (SYNC_CORE_EMULATED)
		emulated |= MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE |
			    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;
	membarrier_get_strategy(&st, sizeof(st));
	tap_ok(st.kernel_errno == want && st.kernel_commands == 0 &&
	       st.heavy == MEMBARRIER_MECHANISM_SIGNAL,
	       "%s: the probe saw %s and chose signal (kernel errno %d, heavy %s)", scen,
	       strerror(want), st.kernel_errno, membarrier_mechanism_name(st.heavy));

	for (int i = 0; i < N_NOT_EMULATED; i++) {
		const struct call *c = &not_emulated[i];

		errno = 0;
		ret = membarrier(c->cmd, c->flags, 0);
		err = errno;
		expect_fail(ret, err, want, scen, c->what);
	}

	errno = 0;
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1, 0);
	expect_fail(ret, errno, EINVAL, scen, "emulated PRIVATE_EXPEDITED with flags 1");
	errno = 0;
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 1, 0);
	if (SYNC_CORE_EMULATED)
		expect_fail(ret, errno, EINVAL, scen, "emulated SYNC_CORE with flags 1");
	else
		expect_fail(ret, errno, want, scen, "SYNC_CORE with flags 1 (not emulated here)");
	ret = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	tap_ok(ret == st.emulated_commands && (ret & emulated) == emulated,
	       "%s: QUERY is the emulated mask 0x%x (got 0x%x, strategy 0x%x)", scen,
	       (unsigned int)emulated, (unsigned int)ret, (unsigned int)st.emulated_commands);
	tap_ok(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
	       membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0,
	       "%s: emulated REGISTER_PRIVATE_EXPEDITED and PRIVATE_EXPEDITED return 0", scen);
	tap_ok(raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0) == -want,
	       "%s: the bare system call answers %s (the filter works)", scen, strerror(want));
	return tap_exit();
}

static int child_signal(void)
{
	const char *scen = "signal, no filter";
	struct membarrier_strategy st;
	int kmask = raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	int lib, raw, err;

	membarrier_get_strategy(&st, sizeof(st));
	tap_ok(st.heavy == MEMBARRIER_MECHANISM_SIGNAL && st.probe_skipped == 1,
	       "%s: heavy is %s, probe skipped %d", scen, membarrier_mechanism_name(st.heavy),
	       st.probe_skipped);
	if (kmask < 0) {
		for (int i = 1; i < SIGNAL_CHECKS; i++)
			tap_ok(1, "# SKIP this kernel has no membarrier (%s)", strerror(-kmask));
		return tap_exit();
	}

	lib = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	membarrier_get_strategy(&st, sizeof(st));
	tap_ok((lib & kmask) == kmask && lib == (kmask | st.emulated_commands),
	       "%s: QUERY 0x%x = kernel 0x%x | emulated 0x%x", scen, (unsigned int)lib,
	       (unsigned int)kmask, (unsigned int)st.emulated_commands);

	errno = 0;
	lib = membarrier(MEMBARRIER_CMD_QUERY, 1, 0);
	expect_fail(lib, errno, EINVAL, scen, "QUERY with flags 1");

	if (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) {
		errno = 0;
		lib = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 2, 0);
		err = errno;
		raw = raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 2, 0);
		tap_ok(lib == -1 && err == EINVAL && raw == -EINVAL,
		       "%s: RSEQ with flags 2: the kernel's EINVAL (got %d, %s; kernel %d)",
		       scen, lib, strerror(err), raw);

		/* Unregistered, the kernel refuses RSEQ; registered, it serves it. */
		raw = raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0);
		tap_ok(raw == -EPERM, "%s: raw RSEQ before registering: EPERM (got %s)",
		       scen, raw < 0 ? strerror(-raw) : "0");
		errno = 0;
		lib = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0);
		err = errno;
		raw = raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0);
		tap_ok(lib == 0 && raw == 0,
		       "%s: REGISTER_PRIVATE_EXPEDITED_RSEQ reaches the kernel (got %d, %s; "
		       "raw RSEQ then %d)", scen, lib, lib ? strerror(err) : "ok", raw);
	} else {
		for (int i = 0; i < 3; i++)
			tap_ok(1, "# SKIP this kernel lacks PRIVATE_EXPEDITED_RSEQ");
	}

	if (kmask & MEMBARRIER_CMD_GLOBAL_EXPEDITED) {
		errno = 0;
		lib = membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 1, 0);
		err = errno;
		raw = raw_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 1, 0);
		tap_ok(lib == -1 && err == EINVAL && raw == -EINVAL,
		       "%s: GLOBAL_EXPEDITED with flags 1: the kernel's EINVAL (got %d, %s; "
		       "kernel %d)", scen, lib, strerror(err), raw);
	} else {
		tap_ok(1, "# SKIP this kernel lacks GLOBAL_EXPEDITED");
	}
	return tap_exit();
}

struct scenario {
	const char *name;
	unsigned int action;	/* seccomp action, or 0 for no filter */
	const char *heavy;	/* LIBMEMBARRIER_HEAVY, or NULL */
	int checks;
};

static const struct scenario scenarios[] = {
	{ "enosys", SECCOMP_RET_ERRNO | ENOSYS, NULL, ERRNO_CHECKS },
	{ "eperm", SECCOMP_RET_ERRNO | EPERM, NULL, ERRNO_CHECKS },
	{ "signal", 0, "signal", SIGNAL_CHECKS },
};
#define NSCEN ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

/* Wait for pid at most `bound` seconds, then kill it; its status. */
static int wait_bounded(pid_t pid, int bound, int *killed)
{
	struct timespec tick = { 0, 10000000 };
	int status = 0;

	*killed = 0;
	for (int i = 0; i < bound * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		nanosleep(&tick, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	*killed = 1;
	return status;
}

int main(int argc, char **argv)
{
	int plan = 0, seccomp;

	if (argc == 2 && strcmp(argv[1], "--no-membarrier-kernel") == 0) {
		alarm(30);	/* a hang is a failure */
		tap_plan(ERRNO_CHECKS);
		return child_errno("no CONFIG_MEMBARRIER", ENOSYS);
	}
	if (argc == 3 && strcmp(argv[1], "--child") == 0) {
		alarm(30);	/* a hang is a failure */
		if (strcmp(argv[2], "enosys") == 0)
			return child_errno(argv[2], ENOSYS);
		if (strcmp(argv[2], "eperm") == 0)
			return child_errno(argv[2], EPERM);
		return child_signal();
	}

	/* Under an emulator that refuses seccomp filters, the scenarios
	 * that need one are skipped, saying why. */
	seccomp = test_seccomp_works();
	if (!seccomp && test_emulator() == NULL)
		tap_bail("seccomp filters do not work on this host");
	for (int i = 0; i < NSCEN; i++)
		plan += scenarios[i].action && !seccomp ? 1 : scenarios[i].checks + 1;
	tap_plan(plan);
	for (int i = 0; i < NSCEN; i++) {
		const struct scenario *s = &scenarios[i];
		int status, killed;
		pid_t pid;

		if (s->action && !seccomp) {
			tap_ok(1, "%s: %d checks # SKIP %s", s->name, s->checks + 1,
			       TEST_NO_SECCOMP);
			continue;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			unsetenv("LIBMEMBARRIER_SIGNAL");
			if (s->heavy)
				setenv("LIBMEMBARRIER_HEAVY", s->heavy, 1);
			else
				unsetenv("LIBMEMBARRIER_HEAVY");
			if (s->action && deny_membarrier(s->action) != 0)
				_exit(98);
			test_reexec(argv[0], "--child", s->name);
			_exit(97);
		}
		status = wait_bounded(pid, 40, &killed);
		tap_ok(!killed && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "%s: the child exits 0 (status 0x%x%s)", s->name, (unsigned int)status,
		       killed ? ", hung: killed" : "");
	}
	return tap_exit();
}
