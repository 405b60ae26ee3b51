/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "internal.h"

#include <errno.h>
#include <unistd.h>

long lmb_syscall(long nr, long a, long b, long c, long d)
{
	int saved = errno;
	long ret = syscall(nr, a, b, c, d);

	if (ret == -1)
		ret = -errno;
	errno = saved;
	return ret;
}
