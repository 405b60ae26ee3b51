/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the tests: the raw system call and seccomp filters. */
#ifndef LMB_TESTS_TESTLIB_H
#define LMB_TESTS_TESTLIB_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "membarrier.h"

#if defined(__x86_64__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_I386
#endif

/* The kernel, bypassing the library: returns the result or -errno. */
static inline int raw_membarrier(int cmd, unsigned int flags, int cpu_id)
{
	long ret = syscall(SYS_membarrier, cmd, flags, cpu_id);

	return ret < 0 ? -errno : (int)ret;
}

/*
 * Make membarrier(2) answer `action` (SECCOMP_RET_ERRNO | err,
 * SECCOMP_RET_TRAP, SECCOMP_RET_KILL_PROCESS...) in this thread and every
 * thread and program it starts.  Returns 0 or -1 with errno.
 */
static inline int deny_membarrier(unsigned int action)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LMB_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Thread churn for the tests: a thread that returns at once... */
static inline void *test_short_lived(void *arg)
{
	return arg;
}

/* ...created and joined, again and again, until *(volatile int *)stop. */
static inline void *test_churner(void *stop)
{
	while (!__atomic_load_n((volatile int *)stop, __ATOMIC_RELAXED)) {
		pthread_t t;

		if (pthread_create(&t, NULL, test_short_lived, NULL) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

#endif
