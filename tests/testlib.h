/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the tests: the raw system call and seccomp filters. */
#ifndef LMB_TESTS_TESTLIB_H
#define LMB_TESTS_TESTLIB_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "membarrier.h"

#if defined(__x86_64__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_I386
#elif defined(__arm__) && defined(__ARMEL__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_ARM
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
# define LMB_AUDIT_ARCH AUDIT_ARCH_S390X
#elif defined(__mips__) && defined(__MIPSEL__) && _MIPS_SIM == _ABI64
# define LMB_AUDIT_ARCH AUDIT_ARCH_MIPSEL64
#elif defined(__mips__) && defined(__MIPSEL__) && _MIPS_SIM == _ABIO32
# define LMB_AUDIT_ARCH AUDIT_ARCH_MIPSEL
#elif defined(__riscv) && __riscv_xlen == 64
# define LMB_AUDIT_ARCH AUDIT_ARCH_RISCV64
#else
# error "tests/testlib.h: add this architecture's AUDIT_ARCH_ (<linux/audit.h>)"
#endif

/* The kernel, bypassing the library: returns the result or -errno. */
static inline int raw_membarrier(int cmd, unsigned int flags, int cpu_id)
{
	long ret = syscall(SYS_membarrier, cmd, flags, cpu_id);

	return ret < 0 ? -errno : (int)ret;
}

/*
 * The start of every filter of the tests: the system calls of another
 * architecture are allowed, membarrier(2) answers `action`; the rest of
 * the filter decides for the others.
 */
#define TEST_FILTER_MEMBARRIER(action) \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LMB_AUDIT_ARCH, 1, 0), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, (action))

/*
 * Install the filter of len instructions in this thread and every thread
 * and program it starts, with seccomp(2)'s flags (0, or
 * SECCOMP_FILTER_FLAG_NEW_LISTENER: then it returns the listener).
 * Returns 0 (or the listener), or -1 with errno.
 */
static inline int test_install_filter(struct sock_filter *filter, size_t len, unsigned int flags)
{
	struct sock_fprog prog = {
		.len = (unsigned short)len,
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

/*
 * Make membarrier(2) answer `action` (SECCOMP_RET_ERRNO | err,
 * SECCOMP_RET_TRAP, SECCOMP_RET_KILL_PROCESS...) in this thread and every
 * thread and program it starts.  Returns 0 or -1 with errno.
 */
static inline int deny_membarrier(unsigned int action)
{
	struct sock_filter filter[] = {
		TEST_FILTER_MEMBARRIER(action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return test_install_filter(filter, sizeof(filter) / sizeof(filter[0]), 0);
}

/*
 * A cross build's make check runs every test program under configure's
 * TEST_EMULATOR (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu"), which
 * it also exports: the command, or NULL where the tests run natively.
 */
static inline const char *test_emulator(void)
{
	const char *emu = getenv("TEST_EMULATOR");

	return emu != NULL && *emu != '\0' ? emu : NULL;
}

/*
 * Re-execute this test program as `argv0 a1 a2`; returns only on failure.
 * Under an emulator, through it: no binfmt_misc handler runs a foreign
 * program that execve() is given, and qemu-user shows the emulated
 * program, not itself, as /proc/self/exe.  The shell splits the
 * emulator's words (argv[0] becomes the program's path).
 */
static inline void test_reexec(const char *argv0, const char *a1, const char *a2)
{
	char self[4096];
	ssize_t n;

	if (test_emulator() == NULL) {
		execl("/proc/self/exe", argv0, a1, a2, (char *)NULL);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	execl("/bin/sh", "sh", "-c", "exec $TEST_EMULATOR \"$@\"", "sh", self, a1, a2,
	      (char *)NULL);
}

/*
 * Run this test program again as `argv0 --child` with the signal
 * mechanism forced (the library chooses at start-up, before main()) and
 * its default signal; returns only on failure.
 */
static inline void test_reexec_signal(const char *argv0)
{
	setenv("LIBMEMBARRIER_HEAVY", "signal", 1);
	unsetenv("LIBMEMBARRIER_SIGNAL");
	fflush(stdout);
	test_reexec(argv0, "--child", NULL);
}

/*
 * Do seccomp filters work here?  qemu-user refuses them (prctl() answers
 * EINVAL, seccomp(2) ENOSYS): a filter would see the emulator's own
 * system calls.  Tried in a child, with a filter that allows everything.
 */
static inline int test_seccomp_works(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(deny_membarrier(SECCOMP_RET_ALLOW) == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Why the tests of a seccomp sandbox are skipped under the emulator. */
#define TEST_NO_SECCOMP "seccomp filters are refused under TEST_EMULATOR (qemu-user)"

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

/*
 * A check of a test that reports several in one TAP line: prints what
 * failed, where, and counts it in the including file's `failures`.
 */
#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		printf("# FAILED: " __VA_ARGS__); \
		printf(" (%s:%d)\n", __FILE__, __LINE__); \
		fflush(stdout); \
		failures++; \
	} \
} while (0)

#endif
