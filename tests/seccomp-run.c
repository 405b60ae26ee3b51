/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seccomp-run ENOSYS|EPERM|KILL program [args...]: run a program with
 * membarrier(2) refused (as by a sandbox, or as on a kernel without it).
 * Exits 77 where seccomp filters are refused (qemu-user), 2 on misuse.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

int main(int argc, char **argv)
{
	unsigned int action;

	if (argc < 3) {
		fprintf(stderr, "usage: seccomp-run ENOSYS|EPERM|KILL program [args...]\n");
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
	if (deny_membarrier(action) != 0) {
		/* 77: refused here (qemu-user: EINVAL), not a usage error. */
		fprintf(stderr, "seccomp-run: cannot install a seccomp filter: %s\n",
			strerror(errno));
		return errno == EINVAL || errno == ENOSYS ? 77 : 2;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "seccomp-run: %s: %s\n", argv[2], strerror(errno));
	return 2;
}
