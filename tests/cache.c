/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * QUERY is served from the cache (inline by the header, and by the
 * library's function): after the library has probed, a seccomp
 * filter traps every membarrier(2) system call into a SIGSYS handler that
 * counts it and answers for the kernel.  Also checks the registration
 * retry: the "kernel" answers EPERM once, as after a lost registration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "tap.h"
#include "testlib.h"

static volatile sig_atomic_t ntrapped, eperm_once;
static volatile int trapped_cmd[16];

/*
 * The trapped call's first argument and its result, in the handler's
 * context: where the kernel returns -errno in the first argument's or a
 * return register.  Not written for powerpc and mips, which flag an
 * error in a condition register (or a3) with a positive errno.
 */
#if defined(__x86_64__)
# define SIGSYS_ARG0(uc) ((uc)->uc_mcontext.gregs[REG_RDI])
# define SIGSYS_RET(uc) ((uc)->uc_mcontext.gregs[REG_RAX])
#elif defined(__i386__)
# define SIGSYS_ARG0(uc) ((uc)->uc_mcontext.gregs[REG_EBX])
# define SIGSYS_RET(uc) ((uc)->uc_mcontext.gregs[REG_EAX])
#elif defined(__aarch64__)
# define SIGSYS_ARG0(uc) ((uc)->uc_mcontext.regs[0])
# define SIGSYS_RET(uc) ((uc)->uc_mcontext.regs[0])
#elif defined(__arm__)
# define SIGSYS_ARG0(uc) ((uc)->uc_mcontext.arm_r0)
# define SIGSYS_RET(uc) ((uc)->uc_mcontext.arm_r0)
#elif defined(__s390x__)
# define SIGSYS_ARG0(uc) ((uc)->uc_mcontext.gregs[2])
# define SIGSYS_RET(uc) ((uc)->uc_mcontext.gregs[2])
#elif defined(__riscv)
# define SIGSYS_ARG0(uc) ((uc)->uc_mcontext.__gregs[10])	/* a0 */
# define SIGSYS_RET(uc) ((uc)->uc_mcontext.__gregs[10])
#endif

#ifdef SIGSYS_RET
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	long ret = 0;
	int cmd;

	(void)sig;
	(void)si;
	cmd = (int)SIGSYS_ARG0(uc);
	if (ntrapped < 16)
		trapped_cmd[ntrapped] = cmd;
	ntrapped++;
	if (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED && eperm_once) {
		eperm_once = 0;
		ret = -EPERM;
	}
	SIGSYS_RET(uc) = ret;
}
#else
static void on_sigsys(int sig, siginfo_t *si, void *ctx)	/* never installed */
{
	(void)sig;
	(void)si;
	(void)ctx;
}
#endif

int main(void)
{
	struct sigaction sa;
	int mask, same = 1, before, calls, ret;

#ifndef SIGSYS_RET
	printf("1..0 # SKIP no SIGSYS emulation of a system call's result for this "
	       "architecture in this test\n");
	return 0;
#endif
	if (!test_seccomp_works()) {
		if (test_emulator() == NULL)
			tap_bail("seccomp filters do not work on this host");
		printf("1..0 # SKIP %s\n", TEST_NO_SECCOMP);
		return 0;
	}
	tap_plan(8);
	/* Probe (the constructor did already) before the filter. */
	mask = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	if (mask < 0)
		tap_bail("QUERY failed: %s", strerror(errno));
	if (!(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		tap_bail("the host tests need PRIVATE_EXPEDITED (mask 0x%x)", (unsigned int)mask);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) != 0 || deny_membarrier(SECCOMP_RET_TRAP) != 0)
		tap_bail("cannot install the seccomp filter: %s", strerror(errno));

	for (int i = 0; i < 100000; i++)
		if (membarrier(MEMBARRIER_CMD_QUERY, 0, 0) != mask)
			same = 0;
	tap_ok(same && ntrapped == 0,
	       "100000 QUERYs answered 0x%x with %d system calls", (unsigned int)mask,
	       (int)ntrapped);

	/* The header answered those inline; the function, called through a
	 * pointer, answers from the same cache. */
	{
		int (*volatile fn)(int, unsigned int, int) = membarrier;

		same = 1;
		for (int i = 0; i < 1000; i++)
			if (fn(MEMBARRIER_CMD_QUERY, 0, 0) != mask)
				same = 0;
		tap_ok(same && ntrapped == 0 &&
		       libmembarrier_query_answer == (0x80000000u | (unsigned int)mask),
		       "the library's function answers QUERY from the header's cache (0x%x)",
		       libmembarrier_query_answer);
	}

	before = ntrapped;
	tap_ok(membarrier(1 << 20, 0, 0) == -1 && errno == EINVAL && ntrapped == before,
	       "an unsupported command fails with EINVAL without a system call");
	if (!(mask & MEMBARRIER_CMD_SHARED_EXPEDITED))
		tap_ok(membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0) == -1 &&
		       errno == EINVAL && ntrapped == before,
		       "SHARED_EXPEDITED, absent here, fails with EINVAL without a system call");
	else
		tap_ok(membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0) == 0 &&
		       ntrapped == before + 1,
		       "SHARED_EXPEDITED, present here, is one system call");

	/* The positive control: the filter does see the library's calls. */
	before = ntrapped;
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	calls = ntrapped - before;
	tap_ok(ret == 0 && calls == 1, "PRIVATE_EXPEDITED is exactly one system call (%d)", calls);
	before = ntrapped;
	ret = membarrier_heavy();
	calls = ntrapped - before;
	tap_ok(ret == 0 && calls == 1, "membarrier_heavy() is exactly one system call (%d)", calls);

	/* A lost registration: EPERM, then REGISTER, then the retry. */
	before = ntrapped;
	eperm_once = 1;
	ret = membarrier_heavy();
	calls = ntrapped - before;
	tap_ok(ret == 0 && calls == 3 &&
	       trapped_cmd[before] == MEMBARRIER_CMD_PRIVATE_EXPEDITED &&
	       trapped_cmd[before + 1] == MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED &&
	       trapped_cmd[before + 2] == MEMBARRIER_CMD_PRIVATE_EXPEDITED,
	       "heavy after EPERM: PRIVATE_EXPEDITED, REGISTER, PRIVATE_EXPEDITED (%d calls)",
	       calls);
	before = ntrapped;
	eperm_once = 1;
	ret = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	calls = ntrapped - before;
	tap_ok(ret == 0 && calls == 3,
	       "membarrier(PRIVATE_EXPEDITED) after EPERM registers once and retries (%d calls)",
	       calls);
	return tap_exit();
}
