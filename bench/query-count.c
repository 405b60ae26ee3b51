/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * query-count raw-syscall|library query|private-expedited N
 *
 * N membarrier() calls of one command, through the library or as a raw
 * syscall(), for callgrind's instruction count (user space only: what the
 * kernel does is not counted).  The library's constructor has registered
 * the process for PRIVATE_EXPEDITED where the kernel has it, so the raw
 * call does not fail with EPERM.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "membarrier.h"

int main(int argc, char **argv)
{
	long n = argc > 3 ? atol(argv[3]) : 100000;
	int raw = argc > 1 && strcmp(argv[1], "raw-syscall") == 0;
	int cmd = argc > 2 && strcmp(argv[2], "private-expedited") == 0 ?
		  MEMBARRIER_CMD_PRIVATE_EXPEDITED : MEMBARRIER_CMD_QUERY;
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += raw ? syscall(SYS_membarrier, cmd, 0, 0) : membarrier(cmd, 0, 0);
	return sum < 0;
}
