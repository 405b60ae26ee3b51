/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* query-count raw-syscall|library N: N QUERYs, for callgrind's instruction count. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "membarrier.h"

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 100000;
	int raw = argc > 1 && strcmp(argv[1], "raw-syscall") == 0;
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += raw ? syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0)
			   : membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	return sum == 0;
}
