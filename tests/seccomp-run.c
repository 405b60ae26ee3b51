/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seccomp-run [--refuse-sigqueue] [--refuse-tgkill] ENOSYS|EPERM|KILL
 *             program [args...]:
 * run a program with membarrier(2) refused (as by a sandbox, or as on a
 * kernel without it), and with the options also rt_tgsigqueueinfo(2)
 * or tgkill(2) refused with EPERM (as by a sandbox that allows only some
 * ways of sending a signal).
 * Exits 77 where seccomp filters are refused (qemu-user), 2 on misuse.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

/* Refuse the system call nr with EPERM: two instructions of the filter. */
#define REFUSE(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

/* deny_membarrier(action), and the system calls asked for with EPERM. */
static int deny(unsigned int action, int sigqueue, int tgkill)
{
	struct sock_filter filter[] = {
		TEST_FILTER_MEMBARRIER(action),
		/* -1: no system call has that number. */
		REFUSE(sigqueue ? SYS_rt_tgsigqueueinfo : (unsigned int)-1),
		REFUSE(tgkill ? SYS_tgkill : (unsigned int)-1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return test_install_filter(filter, sizeof(filter) / sizeof(filter[0]), 0);
}

int main(int argc, char **argv)
{
	int sigqueue = 0, tgkill = 0;
	unsigned int action;

	for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argc--, argv++) {
		if (strcmp(argv[1], "--refuse-sigqueue") == 0) {
			sigqueue = 1;
		} else if (strcmp(argv[1], "--refuse-tgkill") == 0) {
			tgkill = 1;
		} else {
			fprintf(stderr, "seccomp-run: unknown option '%s'\n", argv[1]);
			return 2;
		}
	}
	if (argc < 3) {
		fprintf(stderr, "usage: seccomp-run [--refuse-sigqueue] [--refuse-tgkill] "
			"ENOSYS|EPERM|KILL program [args...]\n");
		return 2;
	}
	if (strcmp(argv[1], "ENOSYS") == 0)
		action = SECCOMP_RET_ERRNO | ENOSYS;
	else if (strcmp(argv[1], "EPERM") == 0)
		action = SECCOMP_RET_ERRNO | EPERM;
	else if (strcmp(argv[1], "KILL") == 0)
		action = SECCOMP_RET_KILL_PROCESS;
	else {
		fprintf(stderr, "seccomp-run: unknown action '%s'\n", argv[1]);
		return 2;
	}
	if (deny(action, sigqueue, tgkill) != 0) {
		/* 77: refused here (qemu-user: EINVAL), not a usage error. */
		fprintf(stderr, "seccomp-run: cannot install a seccomp filter: %s\n",
			strerror(errno));
		return errno == EINVAL || errno == ENOSYS ? 77 : 2;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "seccomp-run: %s: %s\n", argv[2], strerror(errno));
	return 2;
}
